import DownloadCore
import Foundation
import Testing

@Suite struct HexTests {
    @Test func everyByteIsTwoLowercaseDigits() {
        let bytes = (0...255).map(UInt8.init)
        #expect(bytes.hex == bytes.map { String(format: "%02x", $0) }.joined())
        #expect(bytes.prefix(0).hex == "")
        #expect(Data([0xde, 0xad, 0xbe, 0xef]).hex == "deadbeef")
        // Bytes that come one by one, as a digest hands them out.
        #expect(AnySequence(bytes).hex == bytes.hex)
    }
}
