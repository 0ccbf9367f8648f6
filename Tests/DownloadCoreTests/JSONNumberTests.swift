import DownloadCore
import Testing

@Suite struct JSONNumberTests {
    @Test func writesIntegersAsDecimalText() {
        for number: Int64 in [0, 7, -7, 10, 1_795_000_000_000, .max, .min] {
            var bytes = Array("x".utf8)
            JSONNumber.append(number, to: &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == "x\(number)")
        }
    }
}
