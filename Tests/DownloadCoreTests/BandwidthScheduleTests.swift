import DownloadCore
import Testing

private let minute: Int64 = 60_000
private let hour: Int64 = 60 * minute
private let day: Int64 = 24 * hour
private let kib: Int64 = 1024
private let mib: Int64 = 1_048_576

@Suite struct BandwidthScheduleTests {
    func schedule(_ text: String) throws -> BandwidthSchedule {
        try BandwidthSchedule.parse(text).get()
    }

    @Test func aSingleRateHoldsAllDay() throws {
        let cap = try schedule("20MiB")
        #expect(cap.limit(at: 0) == 20 * mib)
        #expect(cap.limit(at: 13 * hour + 5 * minute) == 20 * mib)
        #expect(cap.nextChange(after: 0) == nil)
        #expect(try schedule("off").limit(at: 0) == nil)
        #expect(try schedule(" 4096 ").limit(at: 0) == 4096)
    }

    @Test func aScheduleGivesEachWindowItsRateAndWrapsPastMidnight() throws {
        let cap = try schedule("08:00-18:00=2MiB,18:00-08:00=off")
        #expect(cap.limit(at: 8 * hour) == 2 * mib)
        #expect(cap.limit(at: 18 * hour - 1) == 2 * mib)
        #expect(cap.limit(at: 18 * hour) == nil)
        #expect(cap.limit(at: 3 * hour) == nil)
        #expect(cap.limit(at: 5 * day + 9 * hour) == 2 * mib)
        // Before 1970 too.
        #expect(cap.limit(at: -day + 9 * hour) == 2 * mib)
    }

    @Test func outsideEveryWindowThereIsNoCap() throws {
        let cap = try schedule("22:00-06:00=512KiB")
        #expect(cap.limit(at: 23 * hour) == 512 * kib)
        #expect(cap.limit(at: 5 * hour + 59 * minute) == 512 * kib)
        #expect(cap.limit(at: 12 * hour) == nil)
    }

    @Test func nextChangeIsTheNextBoundaryWhereTheCapDiffers() throws {
        let cap = try schedule("08:00-18:00=2MiB,18:00-08:00=off")
        #expect(cap.nextChange(after: 7 * hour) == 8 * hour)
        #expect(cap.nextChange(after: 8 * hour) == 18 * hour)
        #expect(cap.nextChange(after: 20 * hour) == day + 8 * hour)
        // Two adjacent windows with the same rate are no change.
        let same = try schedule("08:00-12:00=1MiB,12:00-18:00=1MiB")
        #expect(same.nextChange(after: 9 * hour) == 18 * hour)
    }

    @Test func badSettingsSayWhatIsWrong() {
        let bad = [
            "", "fast", "-1", "100", "1MiB/s", "08:00-18:00", "08:00-18:00=", "08:00-18:00=fast",
            "8-18=1MiB", "08:00-08:00=1MiB", "08:00-18:00=1MiB,17:00-19:00=2MiB", "08:00-18:00=1MiB,",
            "08:00-18:00=1MiB=2MiB", "25:00-02:00=1MiB",
        ]
        for text in bad {
            guard case .failure(let problem) = BandwidthSchedule.parse(text) else {
                Issue.record("accepted \(text)")
                continue
            }
            #expect(!problem.message.isEmpty)
        }
    }
}
