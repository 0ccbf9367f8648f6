import DownloadCore
import Testing

private let hour: Int64 = 3_600_000

@Suite struct SchedulingPolicyTests {
    let policy = SchedulingPolicy(capacity: Capacity(
        maxTransfers: 4, maxTransfersPerHost: 2, discretionaryMaxShare: 0.5, discretionaryMaxDelay: .milliseconds(24 * hour),
        discretionaryWindow: DailyWindow("01:00-06:00"), diskReserve: 100))

    func job(_ id: String = "01A", host: String = "a:80", discretionary: Bool = false, runAt: Int64 = 0,
             createdAt: Int64 = 0, size: Int64? = nil) -> Download {
        var submission = NewDownload(url: "http://a/", parsedURL: HTTPURL(scheme: "http", host: "a", port: 80), destination: Destination(stored: id))
        submission.discretionary = discretionary
        submission.expectedBytesToReceive = size
        var download = submission.makeDownload(id: id, now: createdAt)
        download.runAt = runAt
        download.hostKey = host
        return download
    }

    let twoAM: Int64 = 2 * hour
    let noon: Int64 = 12 * hour

    @Test func aJobWaitsForItsDateThenForASlotThenForItsHost() {
        #expect(policy.decide(job(runAt: noon + 1), now: noon, load: Load()) == .wait(.earliestBeginDate))
        var retrying = job(runAt: noon + 1)
        retrying.nextAttemptAt = noon + 1
        #expect(policy.decide(retrying, now: noon, load: Load()) == .wait(.retry))
        #expect(policy.decide(job(), now: noon, load: Load(running: 4)) == .wait(.slot))
        #expect(policy.decide(job(), now: noon, load: Load(running: 2, runningByHost: ["a:80": 2])) == .wait(.hostLimit))
        #expect(policy.decide(job(host: "b:80"), now: noon, load: Load(running: 2, runningByHost: ["a:80": 2])) == .start)
    }

    @Test func aHostThatAskedEveryoneToWaitHoldsItsJobsOnlyUntilThen() {
        var load = Load()
        load.hostBackoffs = ["a:80": noon + 1000]
        #expect(policy.decide(job(), now: noon, load: load) == .wait(.hostBackoff))
        #expect(policy.decide(job(host: "a:8080"), now: noon, load: load) == .start)
        #expect(policy.decide(job(), now: noon + 1000, load: load) == .start)
    }

    @Test func startsToOneHostAreSpacedByTheMinimumInterval() {
        var load = Load()
        load.hostSpacing = ["a:80": noon + 200]
        #expect(policy.decide(job(), now: noon, load: load) == .wait(.hostLimit))
        #expect(policy.decide(job(host: "b:80"), now: noon, load: load) == .start)
        #expect(policy.decide(job(), now: noon + 200, load: load) == .start)
    }

    @Test func discretionaryJobsStartOnlyInsideTheWindowAndWithinTheirShare() {
        let lazy = job(discretionary: true, createdAt: noon - hour)
        #expect(policy.decide(lazy, now: noon, load: Load()) == .wait(.discretionary))  // window closed at noon
        var inWindow = lazy
        inWindow.createdAt = twoAM - hour
        #expect(policy.decide(inWindow, now: twoAM, load: Load()) == .start)
        #expect(policy.decide(inWindow, now: twoAM, load: Load(running: 2, runningDiscretionary: 2)) == .wait(.discretionary))
    }

    @Test func afterTheMaximumDelayADiscretionaryJobRunsLikeANormalOne() {
        let old = job(discretionary: true, createdAt: 0)
        #expect(policy.decide(old, now: 24 * hour - 1, load: Load()) == .wait(.discretionary))
        #expect(policy.decide(old, now: 24 * hour + noon, load: Load()) == .start)
        #expect(!policy.actsDiscretionary(old, now: 24 * hour))
    }

    @Test func aJobThatWouldNotFitOnDiskWaitsForSpace() {
        #expect(policy.decide(job(size: 1000), now: noon, load: Load(freeDiskBytes: 1050)) == .wait(.diskSpace))
        #expect(policy.decide(job(size: 1000), now: noon, load: Load(freeDiskBytes: 1100)) == .start)
        // A resume needs only what is missing.
        #expect(policy.decide(job(size: 1000), now: noon, load: Load(freeDiskBytes: 600), partialBytes: 500) == .start)
        #expect(policy.decide(job(size: nil), now: noon, load: Load(freeDiskBytes: 0)) == .start)
    }

    @Test func theWindowWrapsPastMidnightAndKnowsWhenItOpens() throws {
        let night = try #require(DailyWindow("22:00-04:00"))
        #expect(night.contains(23 * hour))
        #expect(night.contains(3 * hour))
        #expect(!night.contains(12 * hour))
        #expect(night.nextOpening(after: 12 * hour) == 22 * hour)
        #expect(night.nextOpening(after: 23 * hour) == (24 + 22) * hour)
        #expect(policy.nextWindowOpening(after: noon) == 25 * hour)
        #expect(policy.nextWindowOpening(after: twoAM) == nil)
        for bad in ["", "1-6", "01:00", "01:00-01:00", "25:00-02:00", "01:60-02:00"] { #expect(DailyWindow(bad) == nil, "\(bad)") }
    }

    @Test func fairTagsInterleaveSessions() {
        // Session A queues three jobs, then B queues one while nothing has started (virtual time 0).
        var last: [String: Int64] = [:]
        var tags: [(String, Int64)] = []
        for session in ["A", "A", "A", "B"] {
            let tag = FairQueue.tag(sessionLastTag: last[session] ?? 0, virtualTime: 0)
            last[session] = tag
            tags.append((session, tag))
        }
        #expect(tags.map(\.1) == [1, 2, 3, 1])
    }
}
