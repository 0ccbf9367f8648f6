/// The pieces of XML below elements: names, references, attribute values, comments, processing
/// instructions and the XML declaration, and the characters each may hold (XML 1.0, fifth edition).
extension XMLReader {
    /// `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>`, the last two optional.
    mutating func declaration() throws(Failure) {
        position += "<?xml".unicodeScalars.count
        guard try pseudoAttribute("version", required: true) == "1.0" else { throw failure("an XML version other than 1.0") }
        if let encoding = try pseudoAttribute("encoding", required: false) {
            guard ["utf-8", "utf8"].contains(encoding.lowercased()) else { throw failure("an encoding other than UTF-8") }
        }
        if let standalone = try pseudoAttribute("standalone", required: false) {
            guard standalone == "yes" || standalone == "no" else { throw failure("standalone is neither yes nor no") }
        }
        skipWhitespace()
        guard consume("?>") else { throw failure("expected '?>' to end the XML declaration") }
    }

    /// The value of the declaration's `name="…"`, nil when an optional one is not next.
    private mutating func pseudoAttribute(_ name: String, required: Bool) throws(Failure) -> String? {
        let start = position
        guard skipWhitespace(), consume(name) else {
            guard !required else { throw failure("expected \(name) in the XML declaration") }
            position = start
            return nil
        }
        try equals()
        guard let quote = scalars[safe: position], quote == "\"" || quote == "'" else { throw failure("expected a quoted value") }
        position += 1
        var value = ""
        while let scalar = scalars[safe: position], scalar != quote {
            value.unicodeScalars.append(scalar)
            position += 1
        }
        guard consume(String(quote)) else { throw failure("unterminated value in the XML declaration") }
        return value
    }

    /// `Eq`: an equals sign, white space allowed around it.
    mutating func equals() throws(Failure) {
        skipWhitespace()
        guard consume("=") else { throw failure("expected '='") }
        skipWhitespace()
    }

    /// A quoted attribute value, references resolved.
    mutating func attributeValue() throws(Failure) -> String {
        guard let quote = scalars[safe: position], quote == "\"" || quote == "'" else { throw failure("expected a quoted value") }
        position += 1
        var value = ""
        while true {
            guard let scalar = scalars[safe: position] else { throw failure("unterminated attribute value") }
            switch scalar {
            case quote: position += 1; return value
            case "<": throw failure("'<' in an attribute value")
            case "&": value.unicodeScalars.append(try reference())
            default: value.unicodeScalars.append(nextCharacter())
            }
        }
    }

    /// `&lt;`, `&#233;` or `&#xE9;` at `position`: the character it stands for. Only the five
    /// entities XML predefines exist, there being no DTD.
    mutating func reference() throws(Failure) -> Unicode.Scalar {
        let start = position
        position += 1
        if consume("#") {
            let radix: UInt32 = consume("x") ? 16 : 10
            var value: UInt32 = 0
            var digits = 0
            while let scalar = scalars[safe: position], let digit = Character(scalar).hexDigitValue, digit < radix {
                // Any value past U+10FFFF is refused below; stop growing before it overflows.
                value = min(value * radix + UInt32(digit), 0x11_0000)
                digits += 1
                position += 1
            }
            guard digits > 0, consume(";") else { throw Failure(message: "a malformed character reference", offset: start) }
            guard let character = Unicode.Scalar(value), Self.isCharacter(character) else {
                throw Failure(message: "a reference to a character XML does not allow", offset: start)
            }
            return character
        }
        guard let name = readName(), consume(";"), let character = Self.predefinedEntities[name] else {
            throw Failure(message: "a reference to an undeclared entity", offset: start)
        }
        return character
    }

    private static let predefinedEntities: [String: Unicode.Scalar] = ["lt": "<", "gt": ">", "amp": "&", "quot": "\"", "apos": "'"]

    /// `<!-- … -->`, holding no `--`.
    mutating func comment() throws(Failure) {
        position += "<!--".unicodeScalars.count
        while !starts(with: "--") {
            guard position < scalars.count else { throw failure("unterminated comment") }
            position += 1
        }
        guard consume("-->") else { throw failure("'--' within a comment") }
    }

    /// `<?target …?>`: its target a name without a colon, and none that starts with `xml` in any
    /// case, a prefix XML reserves (the declaration comes only first), but the two the W3C defines.
    mutating func processingInstruction() throws(Failure) {
        position += 2
        guard let target = readName(), !target.utf8.contains(UInt8(ascii: ":")),
              !Self.startsWithXML(target) || target == "xml-stylesheet" || target == "xml-model" else {
            throw failure("expected the name of a processing instruction")
        }
        if consume("?>") { return }
        guard skipWhitespace() else { throw failure("expected white space after <?\(target)") }
        while !consume("?>") {
            guard position < scalars.count else { throw failure("unterminated processing instruction") }
            position += 1
        }
    }

    /// Whether `name` starts with the letters x, m, l in any case (by code points, not characters).
    private static func startsWithXML(_ name: String) -> Bool {
        name.utf8.count >= 3 && zip(name.utf8, "xml".utf8).allSatisfy { $0 | 0x20 == $1 }
    }

    /// A `Name` at `position`, nil (and nothing read) if none starts there.
    mutating func readName() -> String? {
        guard let first = scalars[safe: position], Self.isNameStart(first) else { return nil }
        var name = String(first)
        position += 1
        while let scalar = scalars[safe: position], Self.isNameCharacter(scalar) {
            name.unicodeScalars.append(scalar)
            position += 1
        }
        return name
    }

    /// Reads the character at `position`: a carriage return (alone or before a line feed) as a
    /// line feed, as XML normalizes line ends before it reads a document.
    mutating func nextCharacter() -> Unicode.Scalar {
        let scalar = scalars[position]
        position += 1
        guard scalar == "\r" else { return scalar }
        if scalars[safe: position] == "\n" { position += 1 }
        return "\n"
    }

    /// Skips white space; whether there was any.
    @discardableResult
    mutating func skipWhitespace() -> Bool {
        let start = position
        while let scalar = scalars[safe: position], Self.isWhitespace(scalar) { position += 1 }
        return position > start
    }

    /// Reads past `literal` if the document goes on with it.
    mutating func consume(_ literal: String) -> Bool {
        guard starts(with: literal) else { return false }
        position += literal.unicodeScalars.count
        return true
    }

    func starts(with literal: String) -> Bool {
        scalars[position...].starts(with: literal.unicodeScalars)
    }

    static func isWhitespace(_ scalar: Unicode.Scalar) -> Bool {
        scalar == " " || scalar == "\t" || scalar == "\n" || scalar == "\r"
    }

    /// `Char`: what a document may hold at all.
    static func isCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x9, 0xA, 0xD, 0x20...0xD7FF, 0xE000...0xFFFD, 0x1_0000...0x10_FFFF: true
        default: false
        }
    }

    /// `NameStartChar`.
    static func isNameStart(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x3A, 0x41...0x5A, 0x5F, 0x61...0x7A, 0xC0...0xD6, 0xD8...0xF6, 0xF8...0x2FF, 0x370...0x37D,
             0x37F...0x1FFF, 0x200C...0x200D, 0x2070...0x218F, 0x2C00...0x2FEF, 0x3001...0xD7FF,
             0xF900...0xFDCF, 0xFDF0...0xFFFD, 0x1_0000...0xE_FFFF: true
        default: false
        }
    }

    /// `NameChar`.
    static func isNameCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x2D, 0x2E, 0x30...0x39, 0xB7, 0x300...0x36F, 0x203F...0x2040: true
        default: isNameStart(scalar)
        }
    }
}

extension Array {
    fileprivate subscript(safe index: Int) -> Element? {
        indices.contains(index) ? self[index] : nil
    }
}
