import DownloadCore
import Foundation

/// An S3 answer's XML as far as the client reads it: the root element's name and the text of
/// each of its child elements (`InitiateMultipartUploadResult/UploadId`, `Error/Code`, …), and
/// the repeated records among them (`ListPartsResult/Part`).
struct S3XMLDocument: Equatable {
    var root: String
    /// Text of the root's children by element name (the first of each name), trimmed of the
    /// white space around it, entities resolved.
    var fields: [String: String]
    /// The root's children that hold elements, by name, in order: each one's children's text by name.
    var records: [String: [[String: String]]] = [:]

    var isError: Bool { root == "Error" }

    /// nil for an empty body or one that `XMLReader` refuses. White space before the XML is
    /// skipped: S3 may send some while it works on a request.
    static func parse(_ body: [UInt8]) -> S3XMLDocument? {
        let start = body.firstIndex { ![0x20, 0x09, 0x0A, 0x0D].contains($0) } ?? body.endIndex
        guard start < body.endIndex, let events = try? XMLReader.events(body[start...]) else { return nil }
        var document = S3XMLDocument(root: "", fields: [:])
        // The children of the record being read (a child of the root that holds elements).
        var record: [String: String] = [:]
        var depth = 0
        var text = ""
        for event in events {
            switch event {
            case .start(let name):
                depth += 1
                if depth == 1 { document.root = localName(name) }
                if depth == 2 { record = [:] }
                text = ""
            case .text(let characters):
                text = characters
            case .end(let name):
                let name = localName(name)
                let value = text.trimmingCharacters(in: .whitespacesAndNewlines)
                if depth == 3, record[name] == nil { record[name] = value }
                if depth == 2, record.isEmpty, document.fields[name] == nil { document.fields[name] = value }
                if depth == 2, !record.isEmpty { document.records[name, default: []].append(record) }
                depth -= 1
                text = ""
            }
        }
        return document
    }

    /// The name without a namespace prefix (split by code points: a combining mark after the colon
    /// would join it as a character).
    private static func localName(_ name: String) -> String {
        guard let colon = name.unicodeScalars.lastIndex(of: ":") else { return name }
        return String(name.unicodeScalars[name.unicodeScalars.index(after: colon)...])
    }
}
