import DownloadCore
@testable import DownloadService
import Testing

/// The writer keeps its bytes in memory of its own: what it writes must read back as what was
/// given, across growth past its first capacity, escapes included.
@Suite struct JSONWriterTests {
    @Test func writesEveryKindOfValueExactly() {
        var json = JSONWriter(capacity: 1)
        json.beginObject()
        json.field("text", "plain")
        json.field("none", nil as String?)
        json.field("min", Int64.min)
        json.field("zero", 0 as Int64?)
        json.field("negative", -42 as Int?)
        json.field("fraction", 0.25)
        json.field("infinite", Double.infinity)
        json.field("yes", true)
        json.field("texts", ["a", "b\""])
        json.field("noTexts", [])
        json.key(text: "run\"time")
        json.beginArray()
        json.value(1 as Int64?)
        json.beginObject()
        json.endObject()
        json.raw(Array("{\"kept\":[]}".utf8))
        json.endArray()
        json.endObject()
        #expect(String(decoding: json.bytes, as: UTF8.self) == """
            {"text":"plain","none":null,"min":-9223372036854775808,"zero":0,"negative":-42,"fraction":0.25,\
            "infinite":null,"yes":true,"texts":["a","b\\""],"noTexts":[],"run\\"time":[1,{},{"kept":[]}]}
            """)
        #expect(json.count == json.bytes.count)
    }

    /// A repeated number is written from the text kept of the last one: the same text, and a
    /// different one (zero's sign included) for a different number.
    @Test func repeatedNumbersAndDatesAreWrittenAsFormatted() {
        var json = JSONWriter(capacity: 1)
        json.beginArray()
        for number in [0.5, 0.5, 1, 1, 0, -0.0, 1e300] { json.value(number) }
        for millis in [1_764_000_000_123, -1, 253_402_300_800_000] as [Int64] { json.value(date: millis) }
        json.value(date: nil)
        json.endArray()
        #expect(String(decoding: json.bytes, as: UTF8.self) == """
            [0.5,0.5,1.0,1.0,0.0,-0.0,1e+300,"2025-11-24T16:00:00Z","1969-12-31T23:59:59Z","10000-01-01T00:00:00Z",null]
            """)
    }

    @Test func escapedAndLongStringsReadBackAsGiven() throws {
        let texts = ["quote \" backslash \\ newline \n tab \t bell \u{7} end", "é ü 日本 🎉", String(repeating: "x", count: 100_000)]
        var json = JSONWriter(capacity: 16)
        json.beginArray()
        for text in texts { json.value(text) }
        json.endArray()
        #expect(try JSONParser.parse(json.bytes) == .array(texts.map(JSONValue.string)))
    }
}
