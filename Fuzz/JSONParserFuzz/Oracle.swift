import DownloadCore
import Foundation
import FuzzSupport

/// Reads one input with `JSONParser` and with Foundation's `JSONSerialization`: both must accept
/// or both refuse, and what both accept must have the same value. Where the API means to differ
/// from Foundation, the oracle checks that the refusal is that difference and nothing else (each
/// case below says why it differs). What the parser accepts must also read back unchanged from
/// its own writer, `jsonText`, in which the store keeps a job's metadata.
enum Oracle: FuzzOracle {
    static func check(_ input: [UInt8]) throws {
        let parsed = parse(input)
        if case .success(let value) = parsed { try checkRoundTrip(value) }
        // Foundation also reads UTF-16 and UTF-32 (told by a byte-order mark or by NULs among the
        // first four bytes) and skips a UTF-8 byte-order mark. The API reads UTF-8 without a BOM,
        // as RFC 8259 §8.1 asks of JSON between systems; no such text holds a NUL byte (a control
        // character, escaped in strings), so these inputs are refused whatever Foundation makes of them.
        if input.contains(0) || input.starts(with: [0xEF, 0xBB, 0xBF]) {
            guard case .failure = parsed else { throw OracleFailure(description: "accepted a NUL byte or a byte-order mark") }
            return
        }
        try compare(input, parsed: parsed)
    }

    private static func parse(_ text: [UInt8]) -> Result<JSONValue, JSONParser.Failure> {
        Result { () throws(JSONParser.Failure) in try JSONParser.parse(text) }
    }

    /// Foundation's reading, nil when it refuses. Top-level scalars are allowed: RFC 8259 allows
    /// them, and so does the parser.
    private static func foundation(_ text: [UInt8]) -> Any? {
        try? JSONSerialization.jsonObject(with: Data(escapingFEFF(text)), options: .fragmentsAllowed)
    }

    /// `text` with each U+FEFF written as the escape `\uFEFF`, which means the same. Foundation
    /// decodes a string's text between escapes with `String(bytes:encoding:)`, which drops a U+FEFF
    /// at its start as a byte-order mark; an escaped one it keeps, as the parser keeps every one.
    private static func escapingFEFF(_ text: [UInt8]) -> [UInt8] {
        let feff: [UInt8] = [0xEF, 0xBB, 0xBF]
        guard text.contains(feff[0]) else { return text }
        var escaped: [UInt8] = []
        var index = 0
        while index < text.count {
            if text[index] == UInt8(ascii: "\\") {
                // An escape's second byte is never the start of a U+FEFF to escape.
                escaped.append(contentsOf: text[index..<min(index + 2, text.count)])
                index += 2
            } else if text[index...].starts(with: feff) {
                escaped.append(contentsOf: #"\uFEFF"#.utf8)
                index += feff.count
            } else {
                escaped.append(text[index])
                index += 1
            }
        }
        return escaped
    }

    /// Compares the two readings of `input`. Where the parser refuses what Foundation accepts, an
    /// intended difference is rewritten away and the comparison goes on with the rewritten text,
    /// until the readings agree or the refusal is one that nothing rewrites (nesting). Each rewrite
    /// reads the whole text again, so after `maxRewrites` the input is judged no further: one full
    /// of differences costs no more than a few plain inputs, and fuzzing meets whatever follows
    /// them in shorter ones.
    private static func compare(_ input: [UInt8], parsed: Result<JSONValue, JSONParser.Failure>) throws {
        var text = input
        var parsed = parsed
        var reference = foundation(input)
        for _ in 0...maxRewrites {
            switch (parsed, reference) {
            case (.success(let value), let accepted?):
                guard agree(value, accepted) else {
                    throw OracleFailure(description: "the parser read \(value.jsonText), Foundation \(accepted)")
                }
                // Of what the parser must refuse and Foundation takes (nesting too deep, trailing
                // commas, duplicate keys), Foundation's reading keeps no trace of the last two:
                // the text itself must show none of them.
                let layout = Layout(text[...])
                guard layout.deepest <= JSONParser.maxDepth, !layout.trailingComma, layout.keys == memberCount(accepted) else {
                    throw OracleFailure(description: "accepted nesting too deep, a trailing comma or a duplicate key: \(layout)")
                }
                return
            case (.success(let value), nil):
                throw OracleFailure(description: "accepted what Foundation refuses: \(value.jsonText)")
            case (.failure, nil):
                return
            case (.failure(let failure), let accepted?):
                guard let rewritten = try rewrite(text, refusedWith: failure, accepted: accepted) else { return }
                (text, reference) = rewritten
                parsed = parse(text)
            }
        }
    }

    private static let maxRewrites = 32

    /// The parser refused `text`, which Foundation read as `accepted`: the refusal must be one the
    /// API means. Returns the text without that difference and Foundation's reading of it, or nil
    /// when the refusal stands as it is.
    private static func rewrite(_ text: [UInt8], refusedWith failure: JSONParser.Failure, accepted: Any) throws -> ([UInt8], Any)? {
        // Made only when thrown: describing Foundation's reading costs more than the checks.
        var unexplained: OracleFailure { OracleFailure(description: "refused what Foundation accepts (\(accepted)): \(failure)") }
        guard failure.offset < text.count else { throw unexplained }
        switch text[failure.offset] {
        // Nesting deeper than `JSONParser.maxDepth` is refused (Foundation allows 512 levels):
        // request bodies need a few, and the limit bounds the parser's recursion. The refusal
        // falls on the bracket that opens one level too many.
        case UInt8(ascii: "["), UInt8(ascii: "{"):
            guard Layout(text[..<failure.offset]).open == JSONParser.maxDepth else { throw unexplained }
            return nil
        // Foundation takes a comma before a closing bracket (`[1,]`, `{"a":1,}`); RFC 8259's
        // grammar has none. With the comma blanked, the parser must read Foundation's value.
        case UInt8(ascii: "]"), UInt8(ascii: "}"):
            guard let comma = text[..<failure.offset].lastIndex(where: { !isWhitespace($0) }),
                  text[comma] == UInt8(ascii: ",") else { throw unexplained }
            var blanked = text
            blanked[comma] = UInt8(ascii: " ")
            return (blanked, accepted)
        // A duplicate key is refused: parsers differ on which value counts (Foundation keeps the
        // last). Keys are equal as Swift strings are, canonically equivalent, in the parser's
        // dictionaries as in Foundation's. The key must equal one before it in its object; with a
        // U+0001 appended to it, the parser must read what Foundation reads.
        case UInt8(ascii: "\""):
            // Most duplicates are written alike, which spares decoding every key before them.
            let written = stringText(at: failure.offset, in: text)
            guard let key = foundation(Array(written)) as? String,
                  let earlier = Layout(text[..<failure.offset]).openKeys.last,
                  earlier.contains(where: { text[$0...].starts(with: written) })
                    || earlier.contains(where: { foundation(Array(stringText(at: $0, in: text))) as? String == key })
            else { throw unexplained }
            var renamed = text
            renamed.insert(contentsOf: #"\u0001"#.utf8, at: closingQuote(of: failure.offset, in: text[...]))
            guard let reference = foundation(renamed) else { throw unexplained }
            return (renamed, reference)
        // A number beyond Double's range is refused, by Foundation too; but Foundation converts
        // numbers only after it has dropped the values of duplicate keys, and so misses one
        // there. On its own Foundation must refuse it; written as 0, the parser must go on.
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let end = text[failure.offset...].firstIndex { !"0123456789+-.eE".utf8.contains($0) } ?? text.count
            guard foundation(Array(text[failure.offset..<end])) == nil else { throw unexplained }
            var zeroed = text
            zeroed.replaceSubrange(failure.offset..<end, with: [UInt8(ascii: "0")])
            return (zeroed, accepted)
        default:
            throw unexplained
        }
    }

    /// The string literal that starts at `start`, quotes included.
    private static func stringText(at start: Int, in text: [UInt8]) -> ArraySlice<UInt8> {
        text[start..<min(closingQuote(of: start, in: text[...]) + 1, text.count)]
    }

    /// How many members the objects of Foundation's reading `object` have, however deep.
    private static func memberCount(_ object: Any) -> Int {
        if let members = object as? [String: Any] {
            return members.count + members.values.reduce(0) { $0 + memberCount($1) }
        }
        if let items = object as? [Any] {
            return items.reduce(0) { $0 + memberCount($1) }
        }
        return 0
    }

    /// What Foundation's reading does not show of a text it accepted (or of the start of one): how
    /// deeply it nests, how many keys it writes (Foundation keeps one of each duplicate), whether
    /// a comma comes right before a closing bracket; and, for each bracket open at its end, where
    /// the keys written so far inside it start.
    private struct Layout {
        var deepest = 0
        var keys = 0
        var trailingComma = false
        var openKeys: [[Int]] = []

        var open: Int { openKeys.count }

        init(_ text: ArraySlice<UInt8>) {
            var last: UInt8 = 0  // the last byte outside strings that is not whitespace
            var lastString = 0
            var index = text.startIndex
            while index < text.endIndex {
                let byte = text[index]
                switch byte {
                case UInt8(ascii: "\""):
                    lastString = index
                    index = closingQuote(of: index, in: text)
                case UInt8(ascii: "["), UInt8(ascii: "{"):
                    openKeys.append([])
                    deepest = max(deepest, open)
                case UInt8(ascii: "]"), UInt8(ascii: "}"):
                    _ = openKeys.popLast()
                    trailingComma = trailingComma || last == UInt8(ascii: ",")
                case UInt8(ascii: ":"):
                    keys += 1
                    if !openKeys.isEmpty { openKeys[openKeys.count - 1].append(lastString) }
                default: break
                }
                if !isWhitespace(byte) { last = byte }
                index += 1
            }
        }
    }

    /// Where the string that opens at `start` closes (the end of `text` if it does not).
    private static func closingQuote(of start: Int, in text: ArraySlice<UInt8>) -> Int {
        var index = start + 1
        while index < text.endIndex, text[index] != UInt8(ascii: "\"") {
            index += text[index] == UInt8(ascii: "\\") ? 2 : 1
        }
        return min(index, text.endIndex)
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    /// Whether the parser's value is Foundation's reading: strings (keys too) scalar for scalar,
    /// as Swift's `==` would take canonically equivalent ones for equal.
    private static func agree(_ value: JSONValue, _ reference: Any) -> Bool {
        switch value {
        case .null:
            return reference is NSNull
        case .bool(let flag):
            guard let number = reference as? NSNumber, isBoolean(number) else { return false }
            return number.boolValue == flag
        case .integer, .number:
            guard let number = reference as? NSNumber, !isBoolean(number) else { return false }
            return sameNumber(value, number)
        case .string(let text):
            guard let string = reference as? String else { return false }
            return string.unicodeScalars.elementsEqual(text.unicodeScalars)
        case .array(let items):
            guard let elements = reference as? [Any], elements.count == items.count else { return false }
            return zip(items, elements).allSatisfy { agree($0, $1) }
        case .object(let members):
            guard let dictionary = reference as? [String: Any], dictionary.count == members.count else { return false }
            return members.allSatisfy { key, member in
                guard let index = dictionary.index(forKey: key) else { return false }
                return dictionary[index].key.unicodeScalars.elementsEqual(key.unicodeScalars) && agree(member, dictionary[index].value)
            }
        }
    }

    /// JSONSerialization makes `true` and `false` with `NSNumber(value: Bool)`, the only numbers it
    /// makes whose type is C's `char`.
    private static func isBoolean(_ number: NSNumber) -> Bool {
        String(cString: number.objCType) == "c"
    }

    /// Foundation keeps an integer that fits Int64 or UInt64 as one, reads another number of at
    /// most 17 characters with `Double(String)` as the parser does, and a longer one as a Decimal.
    private static func sameNumber(_ value: JSONValue, _ number: NSNumber) -> Bool {
        let type = String(cString: number.objCType)
        switch (value, number) {
        case (.integer(let integer), let decimal as NSDecimalNumber):
            // Foundation counts the sign as a digit, so a negative integer of 19 digits is a
            // Decimal, exact at that size.
            return decimal.decimalValue == Decimal(integer)
        case (.number(let double), let decimal as NSDecimalNumber):
            // Decimal's conversion to Double is not correctly rounded: it scales by ten once per
            // power of ten (at most 128 times), rounding each time. The parser's Double is the one
            // nearest the text, so the two agree to within 2^-45 of the value, not exactly.
            return abs(decimal.doubleValue - double) <= abs(double) * 0x1p-45
        case (.integer(let integer), _):
            return ["s", "i", "l", "q"].contains(type) && number.int64Value == integer
        case (.number(let double), _) where type == "Q":
            // An integer beyond Int64 that fits UInt64: JSONValue has no UInt64 and keeps the
            // Double nearest the text.
            return double == Double(number.uint64Value)
        case (.number(let double), _):
            return type == "d" && double.bitPattern == number.doubleValue.bitPattern
        default:
            return false
        }
    }

    /// The parser reads what `jsonText` writes of its value back to the same text: the writer is
    /// one-to-one (keys sorted, a fraction always with `.` or `e`), so the value is the same too.
    private static func checkRoundTrip(_ value: JSONValue) throws {
        let text = value.jsonText
        guard case .success(let again) = parse(Array(text.utf8)), again.jsonText.utf8.elementsEqual(text.utf8) else {
            throw OracleFailure(description: "\(text) does not read back as itself")
        }
    }
}
