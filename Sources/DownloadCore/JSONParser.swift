/// A strict RFC 8259 parser from bytes to `JSONValue`, for request bodies. It is several times
/// cheaper than `JSONDecoder` into `JSONValue` (which tries each type in turn), and it says what
/// is wrong and where. Beyond the RFC it refuses what a client cannot mean: duplicate keys (which
/// parsers resolve differently) and nesting deeper than `maxDepth`.
public struct JSONParser {
    public struct Failure: Error, Equatable, CustomStringConvertible {
        public var message: String
        public var offset: Int
        public var description: String { "\(message) at byte \(offset)" }
    }

    public static let maxDepth = 64

    private let bytes: [UInt8]
    private var position = 0
    private var depth = 0

    /// Parses one JSON text: a value with only whitespace around it.
    public static func parse(_ bytes: [UInt8]) throws(Failure) -> JSONValue {
        var parser = JSONParser(bytes: bytes)
        parser.skipWhitespace()
        let value = try parser.value()
        parser.skipWhitespace()
        guard parser.position == bytes.count else { throw parser.failure("unexpected text after the value") }
        return value
    }

    private init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    private mutating func value() throws(Failure) -> JSONValue {
        guard position < bytes.count else { throw failure("unexpected end of input") }
        switch bytes[position] {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw failure("unexpected character")
        }
    }

    private mutating func object() throws(Failure) -> JSONValue {
        try enter()
        skipWhitespace()
        if consume(UInt8(ascii: "}")) { depth -= 1; return .object([:]) }
        // Room for a submission's usual few fields at once, not grown (and rehashed) key by key.
        var members = [String: JSONValue](minimumCapacity: 8)
        repeat {
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw failure("expected a key in quotes") }
            let keyOffset = position
            let key = try string()
            skipWhitespace()
            guard consume(UInt8(ascii: ":")) else { throw failure("expected ':' after a key") }
            skipWhitespace()
            let member = try value()
            guard members.updateValue(member, forKey: key) == nil else {
                throw Failure(message: "duplicate key \"\(key)\"", offset: keyOffset)
            }
            skipWhitespace()
        } while consume(UInt8(ascii: ","))
        guard consume(UInt8(ascii: "}")) else { throw failure("expected ',' or '}'") }
        depth -= 1
        return .object(members)
    }

    private mutating func array() throws(Failure) -> JSONValue {
        try enter()
        var elements: [JSONValue] = []
        skipWhitespace()
        if consume(UInt8(ascii: "]")) { depth -= 1; return .array(elements) }
        repeat {
            skipWhitespace()
            elements.append(try value())
            skipWhitespace()
        } while consume(UInt8(ascii: ","))
        guard consume(UInt8(ascii: "]")) else { throw failure("expected ',' or ']'") }
        depth -= 1
        return .array(elements)
    }

    /// Steps over the opening bracket, counting the depth.
    private mutating func enter() throws(Failure) {
        depth += 1
        guard depth <= Self.maxDepth else { throw failure("nested deeper than \(Self.maxDepth) levels") }
        position += 1
    }

    private mutating func string() throws(Failure) -> String {
        position += 1  // the opening quote
        let start = position
        // The common case, no escapes: one copy straight from the input. ASCII (no byte with the
        // high bit) is valid UTF-8 as it is, which spares checking it again.
        var highBits: UInt8 = 0
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let text = highBits < 0x80 ? String(decoding: bytes[start..<position], as: UTF8.self)
                    : try decodeUTF8(bytes[start..<position], at: start)
                position += 1
                return text
            }
            highBits |= byte
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw failure("control character in a string") }
            position += 1
        }
        var unescaped = Array(bytes[start..<position])
        while position < bytes.count {
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "\""):
                let text = try decodeUTF8(unescaped[...], at: start)
                position += 1
                return text
            case UInt8(ascii: "\\"):
                try escape(into: &unescaped)
            case ..<0x20:
                throw failure("control character in a string")
            default:
                unescaped.append(byte)
                position += 1
            }
        }
        throw failure("unterminated string")
    }

    private mutating func escape(into output: inout [UInt8]) throws(Failure) {
        position += 1
        guard position < bytes.count else { throw failure("unterminated string") }
        let byte = bytes[position]
        position += 1
        if let plain = JSONString.unescaped(byte) {
            output.append(plain)
            return
        }
        switch byte {
        case UInt8(ascii: "u"):
            var scalar = UInt32(try hex4())
            if (0xD800..<0xDC00).contains(scalar) {
                // A high surrogate must be followed by an escaped low one.
                guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u") else {
                    throw failure("unpaired surrogate in \\u escape")
                }
                position += 2
                let low = UInt32(try hex4())
                guard (0xDC00..<0xE000).contains(low) else { throw failure("unpaired surrogate in \\u escape") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw failure("unpaired surrogate in \\u escape") }
            output.append(contentsOf: Character(unicode).utf8)
        default:
            throw failure("unknown escape \\\(Character(Unicode.Scalar(byte)))")
        }
    }

    private mutating func hex4() throws(Failure) -> UInt16 {
        guard position + 4 <= bytes.count else { throw failure("short \\u escape") }
        var value: UInt16 = 0
        for byte in bytes[position..<position + 4] {
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure("bad hex digit in \\u escape")
            }
            value = value << 4 | UInt16(digit)
        }
        position += 4
        return value
    }

    /// An integer when the text has no fraction or exponent and fits in Int64, else a double.
    private mutating func number() throws(Failure) -> JSONValue {
        let start = position
        _ = consume(UInt8(ascii: "-"))
        if consume(UInt8(ascii: "0")) {
            if position < bytes.count, isDigit(bytes[position]) { throw failure("leading zero in a number") }
        } else {
            guard try digits() > 0 else { throw failure("expected a digit") }
        }
        var isInteger = true
        if consume(UInt8(ascii: ".")) {
            isInteger = false
            guard try digits() > 0 else { throw failure("expected a digit after '.'") }
        }
        if position < bytes.count, bytes[position] | 0x20 == UInt8(ascii: "e") {
            isInteger = false
            position += 1
            if !consume(UInt8(ascii: "+")) { _ = consume(UInt8(ascii: "-")) }
            guard try digits() > 0 else { throw failure("expected a digit in the exponent") }
        }
        let text = String(decoding: bytes[start..<position], as: UTF8.self)
        if isInteger, let integer = Int64(text) { return .integer(integer) }
        guard let double = Double(text), double.isFinite else { throw Failure(message: "number out of range", offset: start) }
        return .number(double)
    }

    private mutating func digits() throws(Failure) -> Int {
        let start = position
        while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        return position - start
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private mutating func literal(_ word: StaticString) throws(Failure) {
        let count = word.utf8CodeUnitCount
        guard position + count <= bytes.count,
              bytes[position..<position + count].elementsEqual(UnsafeBufferPointer(start: word.utf8Start, count: count)) else {
            throw failure("unexpected character")
        }
        position += count
    }

    private mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    private mutating func consume(_ byte: UInt8) -> Bool {
        guard position < bytes.count, bytes[position] == byte else { return false }
        position += 1
        return true
    }

    private func decodeUTF8(_ slice: ArraySlice<UInt8>, at offset: Int) throws(Failure) -> String {
        guard let text = String(validating: slice, as: UTF8.self) else { throw Failure(message: "invalid UTF-8 in a string", offset: offset) }
        return text
    }

    private func failure(_ message: String) -> Failure {
        Failure(message: message, offset: position)
    }
}
