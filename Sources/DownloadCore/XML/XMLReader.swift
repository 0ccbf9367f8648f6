/// A strict reader of small XML documents, such as a web service's answers (S3 answers in XML),
/// from UTF-8 bytes to the events a client reads: each element's start and end, and the text
/// between tags (character data, references resolved, CDATA sections; line ends normalized).
/// Comments, processing instructions and attributes are checked and skipped.
///
/// A document that is not well-formed by XML 1.0 and Namespaces in XML 1.0 is refused whole.
/// Refused although well-formed, because nothing here needs them: a document type declaration
/// (no DTD is read, so no entity of one can be expanded), an encoding other than UTF-8 (nothing is
/// transcoded), a version other than 1.0, and nesting deeper than `maxDepth`.
///
/// fetchd reads XML with this rather than Foundation's `XMLParser`: linking FoundationXML brings
/// libxml2 and the system's ICU into every fetchd process, 1.3 MB of memory at start, for a
/// few fields of a handful of answers; and `XMLParser` crashes the process on a processing
/// instruction without data (`<?pi?>`) or an element name that is not UTF-8, which a storage
/// server could send. `make fuzz` compares the two readers.
public struct XMLReader {
    public enum Event: Equatable, Sendable {
        /// An element's qualified name, as written (`Error`, `s3:Part`).
        case start(String)
        /// The text between two tags, never empty and never next to another text event.
        case text(String)
        case end(String)
    }

    public struct Failure: Error, Equatable, CustomStringConvertible {
        public var message: String
        /// Where the reader stopped, in Unicode scalars from the start of the document.
        public var offset: Int
        public var description: String { "\(message) at character \(offset)" }
    }

    public static let maxDepth = 64

    let scalars: [Unicode.Scalar]
    var position = 0
    private var events: [Event] = []
    /// The text read since the last tag, given out as one event at the next.
    private var text = ""
    /// The open elements, innermost last, each with the namespace prefixes it declares.
    var open: [(name: String, prefixes: [[UInt8]: String])] = []

    /// The document's events in order.
    public static func events(_ bytes: some Collection<UInt8>) throws(Failure) -> [Event] {
        guard let decoded = String(validating: bytes, as: UTF8.self) else {
            throw Failure(message: "the document is not UTF-8", offset: 0)
        }
        var reader = XMLReader(scalars: Array(decoded.unicodeScalars))
        try reader.document()
        return reader.events
    }

    private init(scalars: [Unicode.Scalar]) {
        self.scalars = scalars
    }

    private mutating func document() throws(Failure) {
        if let invalid = scalars.firstIndex(where: { !Self.isCharacter($0) }) {
            throw Failure(message: "a character XML does not allow", offset: invalid)
        }
        _ = consume("\u{FEFF}")
        if starts(with: "<?xml"), position + 5 < scalars.count, Self.isWhitespace(scalars[position + 5]) {
            try declaration()
        }
        try miscellany()
        guard starts(with: "<") else { throw failure("expected the root element") }
        try startTag()
        while !open.isEmpty { try content() }
        try miscellany()
        guard position == scalars.count else { throw failure("unexpected text after the root element") }
    }

    /// Comments, processing instructions and white space, as may surround the root element.
    private mutating func miscellany() throws(Failure) {
        while true {
            skipWhitespace()
            if starts(with: "<!--") {
                try comment()
            } else if starts(with: "<?") {
                try processingInstruction()
            } else if starts(with: "<!DOCTYPE") {
                throw failure("a document type declaration")
            } else {
                return
            }
        }
    }

    /// One step within the innermost open element: a tag, a comment, a reference or a character.
    private mutating func content() throws(Failure) {
        guard position < scalars.count else { throw failure("unexpected end of the document in <\(open[open.count - 1].name)>") }
        switch scalars[position] {
        case "<":
            if starts(with: "</") {
                try endTag()
            } else if starts(with: "<!--") {
                try comment()
            } else if starts(with: "<![CDATA[") {
                try characterData()
            } else if starts(with: "<?") {
                try processingInstruction()
            } else {
                try startTag()
            }
        case "&":
            let character = try reference()
            text.unicodeScalars.append(character)
        case "]" where starts(with: "]]>"):
            throw failure("']]>' outside a CDATA section")
        default:
            let character = nextCharacter()
            text.unicodeScalars.append(character)
        }
    }

    private mutating func startTag() throws(Failure) {
        position += 1
        guard let name = readName() else { throw failure("expected an element name") }
        var attributes: [(name: String, value: String)] = []
        while true {
            let spaced = skipWhitespace()
            if consume(">") { break }
            if consume("/>") {
                try begin(name, attributes: attributes)
                try end(name)
                return
            }
            guard spaced, let attribute = readName() else { throw failure("expected an attribute or the end of <\(name)>") }
            guard !attributes.contains(where: { $0.name.utf8.elementsEqual(attribute.utf8) }) else {
                throw failure("attribute \(attribute) given twice")
            }
            try equals()
            attributes.append((attribute, try attributeValue()))
        }
        try begin(name, attributes: attributes)
    }

    private mutating func begin(_ name: String, attributes: [(name: String, value: String)]) throws(Failure) {
        let prefixes = try declaredPrefixes(attributes)
        open.append((name, prefixes))
        guard open.count <= Self.maxDepth else { throw failure("elements nested deeper than \(Self.maxDepth)") }
        try checkNamespaces(of: name, attributes: attributes)
        flushText()
        events.append(.start(name))
    }

    private mutating func endTag() throws(Failure) {
        position += 2
        guard let name = readName() else { throw failure("expected an element name") }
        skipWhitespace()
        guard consume(">") else { throw failure("expected '>' after </\(name)") }
        try end(name)
    }

    private mutating func end(_ name: String) throws(Failure) {
        // By code points: a String's `==` would take a canonically equivalent name for the same.
        guard let last = open.last, last.name.utf8.elementsEqual(name.utf8) else {
            throw failure("</\(name)> does not close the open element")
        }
        open.removeLast()
        flushText()
        events.append(.end(name))
    }

    /// A CDATA section's text, as it stands.
    private mutating func characterData() throws(Failure) {
        position += "<![CDATA[".unicodeScalars.count
        while !consume("]]>") {
            guard position < scalars.count else { throw failure("unterminated CDATA section") }
            let character = nextCharacter()
            text.unicodeScalars.append(character)
        }
    }

    private mutating func flushText() {
        guard !text.isEmpty else { return }
        events.append(.text(text))
        text = ""
    }

    func failure(_ message: String) -> Failure {
        Failure(message: message, offset: position)
    }
}
