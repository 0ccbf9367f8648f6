import Foundation
import FoundationXML

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

    /// nil for an empty body or one that is not well-formed XML. White space before the XML is
    /// skipped: S3 may send some while it works on a request. No external entity is resolved.
    static func parse(_ body: [UInt8]) -> S3XMLDocument? {
        let start = body.firstIndex { ![0x20, 0x09, 0x0A, 0x0D].contains($0) } ?? body.endIndex
        guard start < body.endIndex else { return nil }
        let reader = Reader()
        let parser = XMLParser(data: Data(body[start...]))
        parser.shouldResolveExternalEntities = false
        parser.delegate = reader
        guard parser.parse(), !reader.failed, let root = reader.root else { return nil }
        return S3XMLDocument(root: root, fields: reader.fields, records: reader.records)
    }

    /// XMLParser's delegate, used within one `parse` call.
    private final class Reader: NSObject, XMLParserDelegate {
        var root: String?
        var fields: [String: String] = [:]
        var records: [String: [[String: String]]] = [:]
        /// The children of the record being read (a child of the root that holds elements).
        private var record: [String: String] = [:]
        /// Set on any error, even one the parser recovers from.
        var failed = false
        private var depth = 0
        private var text = ""

        func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
                    qualifiedName: String?, attributes: [String: String] = [:]) {
            depth += 1
            if depth == 1 { root = Self.localName(elementName) }
            if depth == 2 { record = [:] }
            if depth == 2 || depth == 3 { text = "" }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            if depth == 2 || depth == 3 { text += string }
        }

        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
            let name = Self.localName(elementName)
            if depth == 3, record[name] == nil { record[name] = text.trimmingCharacters(in: .whitespacesAndNewlines) }
            if depth == 2 {
                if record.isEmpty {
                    if fields[name] == nil { fields[name] = text.trimmingCharacters(in: .whitespacesAndNewlines) }
                } else {
                    records[name, default: []].append(record)
                }
            }
            depth -= 1
        }

        func parser(_ parser: XMLParser, parseErrorOccurred parseError: Error) {
            failed = true
        }

        /// The name without a namespace prefix.
        private static func localName(_ name: String) -> String {
            name.split(separator: ":").last.map(String.init) ?? name
        }
    }
}
