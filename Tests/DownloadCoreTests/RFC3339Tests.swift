import DownloadCore
import Testing

@Suite struct RFC3339Tests {
    @Test(arguments: [
        ("1970-01-01T00:00:00Z", Int64(0)),
        ("2026-11-21T10:00:00Z", Int64(1_795_255_200_000)),
        ("2026-11-21T10:00:00.250Z", Int64(1_795_255_200_250)),
        ("2026-11-21T12:00:00+02:00", Int64(1_795_255_200_000)),
        ("2026-11-21t09:30:00-00:30", Int64(1_795_255_200_000)),
        ("2024-02-29T00:00:00Z", Int64(1_709_164_800_000)),
    ])
    func parses(text: String, millis: Int64) {
        #expect(RFC3339.parse(text) == millis)
    }

    @Test(arguments: [
        "", "2026-11-21", "2026-11-21T10:00:00", "2026-13-01T00:00:00Z", "2025-02-29T00:00:00Z",
        "2026-11-21T24:00:00Z", "2026-11-21T10:00:00.Z", "2026-11-21T10:00:00Zjunk", "tomorrow", "2026-11-21 10:00:00Z",
    ])
    func rejects(text: String) {
        #expect(RFC3339.parse(text) == nil)
    }

    @Test func formatsWholeSecondsRoundedDown() {
        #expect(RFC3339.format(1_795_255_200_999) == "2026-11-21T10:00:00Z")
        #expect(RFC3339.format(0) == "1970-01-01T00:00:00Z")
        #expect(RFC3339.format(-1) == "1969-12-31T23:59:59Z")
    }

    @Test func formatsWithMillisecondsForLogs() {
        #expect(RFC3339.formatWithMilliseconds(1_795_255_200_250) == "2026-11-21T10:00:00.250Z")
        #expect(RFC3339.formatWithMilliseconds(0) == "1970-01-01T00:00:00.000Z")
        #expect(RFC3339.formatWithMilliseconds(-1) == "1969-12-31T23:59:59.999Z")
    }

    @Test func roundTrips() {
        for millis in stride(from: Int64(-86_400_000), to: 4_102_444_800_000, by: 7_777_777_777) {
            #expect(RFC3339.parse(RFC3339.formatWithMilliseconds(millis)) == millis)
            let wholeSeconds = millis - ((millis % 1000) + 1000) % 1000
            #expect(RFC3339.parse(RFC3339.format(millis)) == wholeSeconds)
        }
    }
}
