import DownloadCore
import Foundation
import FoundationXML
import FuzzSupport

/// Reads one input with `XMLReader` and with Foundation's `XMLParser` (libxml2): what the reader
/// accepts, `XMLParser` must accept with the same elements and text; what `XMLParser` accepts, the
/// reader must accept too, unless the refusal is one the reader means (each case below says why).
enum Oracle: FuzzOracle {
    static func check(_ input: [UInt8]) throws {
        // Only UTF-8 is read. XMLParser is not asked about other bytes: it crashes on an element
        // name that is not UTF-8 (it converts the name to a String and takes it to be one).
        guard String(validating: input, as: UTF8.self) != nil else {
            let read = Result { () throws(XMLReader.Failure) in try XMLReader.events(input) }
            guard case .failure(let failure) = read, failure.message == "the document is not UTF-8" else {
                throw OracleFailure(description: "bytes that are not UTF-8 read as \(read)")
            }
            return
        }
        // XMLParser crashes on a processing instruction without data (`<?pi?>`); both readers are
        // given the document with a space before each such `?>`, which means the same to them.
        let spaced = spacingEmptyInstructions(input)
        if spaced != input { _ = try? XMLReader.events(input) }
        let read = Result { () throws(XMLReader.Failure) in try XMLReader.events(spaced) }
        let reference = foundation(spaced)
        switch (read, reference.events) {
        case (.success(let events), let accepted?):
            guard events == accepted else { throw OracleFailure(description: "the reader read \(events), XMLParser \(accepted)") }
        case (.success(let events), nil):
            throw OracleFailure(description: "accepted what XMLParser refuses (libxml2 errors \(reference.errors)): \(events)")
        case (.failure, nil):
            return
        case (.failure(let failure), let accepted?):
            guard isIntended(failure, input: input) else {
                throw OracleFailure(description: "refused what XMLParser accepts (\(accepted)): \(failure)")
            }
        }
    }

    /// `input` with a space between the target of each `<?target?>` and its `?>`.
    private static func spacingEmptyInstructions(_ input: [UInt8]) -> [UInt8] {
        var spaced: [UInt8] = []
        spaced.reserveCapacity(input.count)
        var index = 0
        while index < input.count {
            spaced.append(input[index])
            index += 1
            guard spaced.count >= 2, spaced.suffix(2).elementsEqual("<?".utf8) else { continue }
            // The target's bytes: anything up to white space or `?`.
            while index < input.count, ![0x20, 0x09, 0x0A, 0x0D, UInt8(ascii: "?")].contains(input[index]) {
                spaced.append(input[index])
                index += 1
            }
            if input[index...].starts(with: "?>".utf8) { spaced.append(0x20) }
        }
        return spaced
    }

    /// Whether the reader's refusal of a document `XMLParser` accepts is one of those it means.
    private static func isIntended(_ failure: XMLReader.Failure, input: [UInt8]) -> Bool {
        switch failure.message {
        // No DTD is read, so none of its entities is expanded (nor a billion laughs).
        case "a document type declaration": true
        // Only UTF-8 is read: libxml2 also reads a document in another encoding it declares, or in
        // UTF-16 or UTF-32 it tells by the NULs among the first four bytes.
        case "an encoding other than UTF-8", "a character XML does not allow":
            input.prefix(4).contains(0)
                || input.starts(with: Array("<?xml".utf8)) && input.contains(subsequence: Array("encoding".utf8))
        // libxml2 reads other versions as 1.0, with a warning.
        case "an XML version other than 1.0": true
        case "elements nested deeper than \(XMLReader.maxDepth)": true
        default: false
        }
    }

    /// XMLParser's events, text joined as the reader joins it, and the libxml2 codes of the errors
    /// it reported. A reading is a refusal when any of them is an error rather than a warning, and
    /// when it has no element at all: given fewer than the four bytes it reads an encoding from,
    /// XMLParser reads nothing and reports nothing.
    private static func foundation(_ input: [UInt8]) -> (events: [XMLReader.Event]?, errors: [Int]) {
        let recorder = Recorder()
        let parser = XMLParser(data: Data(input))
        parser.shouldResolveExternalEntities = false
        parser.delegate = recorder
        let parsed = parser.parse()
        guard parsed, recorder.errors.allSatisfy(warnings.contains), !recorder.events.isEmpty else { return (nil, recorder.errors) }
        return (recorder.events, recorder.errors)
    }

    /// libxml2's warnings (`XML_WAR_*` in xmlerror.h), which XMLParser reports as errors: an
    /// undeclared entity where a DTD might declare it, a catalog PI, a version other than 1.0, an
    /// `xml:lang` or `xml:space` value, a namespace name that is no absolute URI, a redefined entity.
    private static let warnings: Set<Int> = [27, 93, 97, 98, 99, 100, 102, 106, 107]

    private final class Recorder: NSObject, XMLParserDelegate {
        var events: [XMLReader.Event] = []
        var errors: [Int] = []
        private var text = ""

        func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
                    qualifiedName: String?, attributes: [String: String] = [:]) {
            flush()
            events.append(.start(elementName))
        }

        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
            flush()
            events.append(.end(elementName))
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            endCDATA()
            text += string
        }

        func parser(_ parser: XMLParser, foundCDATA block: Data) {
            cdata.append(contentsOf: block)
        }

        /// libxml2 hands CDATA sections over as written, line ends unnormalized (XML normalizes
        /// them in the whole document); the recorder normalizes them, once the section is over
        /// (a carriage return may end one block and its line feed start the next).
        private var cdata: [UInt8] = []

        private func endCDATA() {
            guard !cdata.isEmpty else { return }
            text += String(decoding: cdata, as: UTF8.self).replacingOccurrences(of: "\r\n", with: "\n")
                .replacingOccurrences(of: "\r", with: "\n")
            cdata = []
        }

        func parser(_ parser: XMLParser, parseErrorOccurred parseError: Error) {
            errors.append((parseError as NSError).code)
        }

        private func flush() {
            endCDATA()
            guard !text.isEmpty else { return }
            events.append(.text(text))
            text = ""
        }
    }
}

extension Array where Element == UInt8 {
    fileprivate func contains(subsequence: [UInt8]) -> Bool {
        indices.contains { self[$0...].starts(with: subsequence) }
    }
}
