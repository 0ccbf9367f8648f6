import DownloadCore
import Testing

/// Cron expressions and the times watches check at.
@Suite struct WatchTimingTests {
    /// 2026-03-02T10:17:30Z, a Monday.
    let monday: Int64 = 1_772_446_650_000

    func cron(_ text: String) throws -> CronExpression {
        try CronExpression.parse(text).get()
    }

    @Test func cronNamesItsMinutes() throws {
        #expect(try cron("* * * * *").next(after: monday) == 1_772_446_680_000)  // 10:18
        #expect(try cron("*/15 * * * *").next(after: monday) == 1_772_447_400_000)  // 10:30
        #expect(try cron("0 3 * * *").next(after: monday) == 1_772_506_800_000)  // Tuesday 03:00
        #expect(try cron("5/20 10 * * *").next(after: monday) == 1_772_447_100_000)  // 10:25
    }

    @Test func dayFieldsAndRanges() throws {
        // Weekdays 09:00: Monday 10:17 is past, so Tuesday.
        #expect(try cron("0 9 * * 1-5").next(after: monday) == 1_772_528_400_000)
        // Sunday is 0 and 7.
        #expect(try cron("0 0 * * 7").next(after: monday) == (try cron("0 0 * * 0")).next(after: monday))
        // Both day fields restricted: either matches (Friday the 6th comes before the 13th).
        #expect(try cron("0 0 13 * 5").next(after: monday) == 1_772_755_200_000)
        #expect(try cron("30 12 1 * *").next(after: monday) == 1_775_046_600_000)  // 2026-04-01T12:30Z
    }

    @Test func badExpressionsSayWhy() {
        for text in ["* * * *", "60 * * * *", "* 24 * * *", "*/0 * * * *", "a * * * *", "1-0 * * * *", "* * * * * *"] {
            #expect(throws: CronExpression.Problem.self, "\(text)") { try CronExpression.parse(text).get() }
        }
    }

    @Test func intervalsCountFromTheAnchorAndSkipMissedTimes() {
        let timing = WatchTiming.interval(milliseconds: 60_000)
        // No spread: the next whole interval after now, never the anchor itself.
        #expect(timing.nextCheck(after: 1000, anchor: 1000, spread: 0) == 61_000)
        #expect(timing.nextCheck(after: 61_000, anchor: 1000, spread: 0) == 121_000)
        // Down for ten intervals: one check, at the next time.
        #expect(timing.nextCheck(after: 605_000, anchor: 1000, spread: 0) == 661_000)
        // The spread shifts every time by the watch's own share of a tenth of the interval.
        #expect(timing.nextCheck(after: 1000, anchor: 1000, spread: 0.5) == 64_000)
        #expect(timing.nextCheck(after: 64_000, anchor: 1000, spread: 0.5) == 124_000)
    }

    @Test func schedulesSpreadOverATenthOfTheirGap() throws {
        let timing = WatchTiming.schedule(try cron("*/10 * * * *"))
        let tenPast: Int64 = 1_772_446_200_000  // 10:10
        #expect(timing.nextCheck(after: tenPast, anchor: 0, spread: 0) == tenPast + 600_000)
        #expect(timing.nextCheck(after: tenPast, anchor: 0, spread: 0.5) == tenPast + 30_000)
        #expect(timing.nextCheck(after: tenPast + 30_000, anchor: 0, spread: 0.5) == tenPast + 630_000)
    }

    @Test func eachWatchHasItsOwnStableSpread() {
        let spreads = (0..<1000).map { WatchTiming.spread(of: "watch-\($0)") }
        #expect(spreads.allSatisfy { (0..<1).contains($0) })
        #expect(Set(spreads.map { Int($0 * 10) }).count == 10)
        #expect(WatchTiming.spread(of: "a") == WatchTiming.spread(of: "a"))
    }
}
