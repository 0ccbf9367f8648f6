import DownloadCore
import Testing

@Suite struct UnitsTests {
    @Test func durations() {
        #expect(Units.duration("200ms") == .milliseconds(200))
        #expect(Units.duration("5s") == .seconds(5))
        #expect(Units.duration("5") == .seconds(5))
        #expect(Units.duration("1.5") == .milliseconds(1500))
        #expect(Units.duration("10m") == .seconds(600))
        #expect(Units.duration("24h") == .seconds(86400))
        #expect(Units.duration("7d") == .seconds(604800))
        #expect(Units.duration("0") == .zero)
        for bad in ["", "s", "-1s", "5 parsecs", "1e3s", "ms", "nan"] { #expect(Units.duration(bad) == nil, "\(bad)") }
    }

    @Test func sizes() {
        #expect(Units.size("512") == 512)
        #expect(Units.size("512B") == 512)
        #expect(Units.size("64KiB") == 65536)
        #expect(Units.size("10MiB") == 10_485_760)
        #expect(Units.size("1GiB") == 1_073_741_824)
        for bad in ["", "KiB", "1 lot", "-5", "1KB"] { #expect(Units.size(bad) == nil, "\(bad)") }
    }
}
