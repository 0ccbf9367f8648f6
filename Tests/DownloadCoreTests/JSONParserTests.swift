import DownloadCore
import Foundation
import Testing
import TestSupport

@Suite struct JSONParserTests {
    func parse(_ text: String) throws -> JSONValue {
        try JSONParser.parse(Array(text.utf8))
    }

    func failure(_ text: String) -> String? {
        do {
            _ = try parse(text)
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test func parsesEveryKindOfValue() throws {
        let value = try parse(#" {"a": [1, -2, 3.5, -0.25e2, 1E3, true, false, null], "b": {"c": ""}, "d": "x"} "#)
        #expect(value == .object([
            "a": .array([.integer(1), .integer(-2), .number(3.5), .number(-25), .number(1000), .bool(true), .bool(false), .null]),
            "b": .object(["c": .string("")]),
            "d": .string("x"),
        ]))
        #expect(try parse("[]") == .array([]))
        #expect(try parse("{}") == .object([:]))
        #expect(try parse("0") == .integer(0))
        #expect(try parse("-0") == .integer(0))
    }

    @Test func integersBeyondInt64BecomeNumbers() throws {
        #expect(try parse("9223372036854775807") == .integer(.max))
        #expect(try parse("-9223372036854775808") == .integer(.min))
        #expect(try parse("9223372036854775808") == .number(9223372036854775808))
        #expect(try parse("1.0") == .number(1))
    }

    @Test func decodesEscapes() throws {
        #expect(try parse(#""a\"b\\c\/d\b\f\n\r\t""#) == .string("a\"b\\c/d\u{8}\u{C}\n\r\t"))
        #expect(try parse(#""\u00e9\u4e2d\ud83d\ude00""#) == .string("é中😀"))
        #expect(try parse("\"é中😀\"") == .string("é中😀"))
        #expect(try parse(#""\u0000""#) == .string("\u{0}"))
    }

    @Test(arguments: [
        "", " ", "{", "}", "[1,]", "[,1]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "{'a':1}", "[1 2]", "01", "-", "1.", ".5",
        "1e", "1e+", "+1", "0x10", "NaN", "Infinity", "1e999", "tru", "nul", "True", "\"abc", "\"\\x\"", "\"\\u12\"",
        "\"\\ud83d\"", "\"\\ude00\"", "\"\\ud83d\\u0041\"", "\"a\tb\"", "\"a\nb\"", "[1] [2]", "{\"a\":1}x", "{\"a\":1,\"a\":2}",
        "/* c */ 1", "[1]\u{0}",
    ])
    func rejects(_ text: String) {
        #expect(throws: JSONParser.Failure.self) { try parse(text) }
    }

    @Test func rejectsInvalidUTF8() {
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse([0x22, 0xC3, 0x28, 0x22]) }
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse([0x22, 0xED, 0xA0, 0x80, 0x22]) }
    }

    @Test func saysWhatIsWrongAndWhere() {
        #expect(failure(#"{"url":1, "url":2}"#) == "duplicate key \"url\" at byte 10")
        #expect(failure("[1 2]") == "expected ',' or ']' at byte 3")
        #expect(failure("\"a\u{1}\"") == "control character in a string at byte 2")
    }

    @Test func limitsNesting() throws {
        let deepest = String(repeating: "[", count: JSONParser.maxDepth) + String(repeating: "]", count: JSONParser.maxDepth)
        _ = try parse(deepest)
        let tooDeep = String(repeating: "[", count: JSONParser.maxDepth + 1) + String(repeating: "]", count: JSONParser.maxDepth + 1)
        #expect(throws: JSONParser.Failure.self) { try parse(tooDeep) }
        // Deep input fails fast instead of recursing until the stack runs out.
        #expect(throws: JSONParser.Failure.self) { try parse(String(repeating: "[", count: 1_000_000)) }
    }

    /// `jsonText` orders keys alike whatever order the parsed dictionary keeps them in, keys that
    /// String's `<` cannot order too (a composed "é." and a decomposed "é"), so a value's text
    /// reads back as itself. Each dictionary alive at once has an order of its own.
    @Test func textOrdersKeysWhateverTheDictionaryOrder() throws {
        let values = try (0..<32).map { _ in try parse("{\"\u{E9}.\": 1, \"e\u{301}\": 2}") }
        for value in values {
            #expect(Array(value.jsonText.utf8) == Array("{\"e\u{301}\":2,\"\u{E9}.\":1}".utf8))
        }
    }

    /// Random documents written by Foundation's JSONSerialization parse back to what was written.
    @Test func agreesWithFoundationOnRandomDocuments() throws {
        var generator = SplitMix64(seed: 7)
        for _ in 0..<500 {
            let (object, expected) = randomValue(depth: 0, using: &generator)
            let data = try JSONSerialization.data(withJSONObject: [object], options: [.fragmentsAllowed])
            #expect(try JSONParser.parse(Array(data)) == .array([expected]))
        }
    }

    private func randomValue(depth: Int, using generator: inout SplitMix64) -> (Any, JSONValue) {
        switch generator.next() % (depth > 3 ? 5 : 7) {
        case 0: return (NSNull(), .null)
        case 1: let flag = generator.next() % 2 == 0; return (flag, .bool(flag))
        case 2: let number = Int64(bitPattern: generator.next()) >> (generator.next() % 64); return (number, .integer(number))
        case 3: let number = (Double(Int64(bitPattern: generator.next()) >> 20) * 2 + 1) / 2048; return (number, .number(number))
        case 4:
            let alphabet = Array("aZ09 \"\\/\n\t\u{1}é中😀\u{7F}")
            let text = String((0..<(generator.next() % 12)).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] })
            return (text, .string(text))
        case 5:
            let elements = (0..<(generator.next() % 4)).map { _ in randomValue(depth: depth + 1, using: &generator) }
            return (elements.map(\.0), .array(elements.map(\.1)))
        default:
            var object: [String: Any] = [:]
            var expected: [String: JSONValue] = [:]
            for index in 0..<(generator.next() % 4) {
                let (value, parsed) = randomValue(depth: depth + 1, using: &generator)
                object["k\(index)é"] = value
                expected["k\(index)é"] = parsed
            }
            return (object, .object(expected))
        }
    }
}
