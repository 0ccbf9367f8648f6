import DownloadCore
import Persistence
@testable import SQLiteStore
import TestSupport
import Testing

@Suite struct QueueTests {
    func ids(_ jobs: [Download]) -> [String] { jobs.map(\.id) }

    @Test func jobsBecomeDueWhenPromotedAndComeByPriorityThenAge() throws {
        let db = try TemporaryStore()
        _ = try db.store.insert(makeDownload("01A", priority: 0.1, runAt: 1000), idempotency: nil)
        _ = try db.store.insert(makeDownload("01B", priority: 0.9, runAt: 1000), idempotency: nil)
        _ = try db.store.insert(makeDownload("01C", priority: 0.9, runAt: 1000), idempotency: nil)
        _ = try db.store.insert(makeDownload("01D", priority: 1.0, runAt: 5000), idempotency: nil)
        #expect(try db.store.dueJobs(lane: .normal, excludingHosts: [], limit: 10).isEmpty)  // not promoted yet
        try db.store.promote(now: 1000, agedBefore: 0)
        #expect(try ids(db.store.dueJobs(lane: .normal, excludingHosts: [], limit: 10)) == ["01B", "01C", "01A"])
        #expect(try db.store.nextQueueChange(after: 1000, agingDelay: 86_400_000) == 5000)
        try db.store.promote(now: 5000, agedBefore: 0)
        #expect(try ids(db.store.dueJobs(lane: .normal, excludingHosts: [], limit: 1)) == ["01D"])
    }

    /// One at a time or many together: a job that may run from its creation needs no promotion.
    @Test func aJobThatMayRunWhenCreatedIsDueAtOnce() throws {
        let db = try TemporaryStore()
        _ = try db.store.insert(makeDownload("01A", runAt: 100, createdAt: 100), idempotency: nil)
        _ = try db.store.insert(makeDownload("01B", runAt: 200, createdAt: 100), idempotency: nil)
        _ = try db.store.insert([
            NewJob(download: makeDownload("01C", runAt: 100, createdAt: 100), idempotency: nil),
            NewJob(download: makeDownload("01D", runAt: 300, createdAt: 100), idempotency: nil),
        ])
        #expect(try ids(db.store.dueJobs(lane: .normal, excludingHosts: [], limit: 10)) == ["01A", "01C"])
        #expect(try db.store.nextQueueChange(after: 100, agingDelay: 86_400_000) == 200)
    }

    @Test func fullHostsAreLeftOutWithoutHidingOtherHosts() throws {
        let db = try TemporaryStore()
        for i in 0..<5 { _ = try db.store.insert(makeDownload("01A\(i)"), idempotency: nil) }
        var other = makeDownload("01B0")
        other.hostKey = "other.example:80"
        _ = try db.store.insert(other, idempotency: nil)
        try db.store.promote(now: 0, agedBefore: -1)
        #expect(try ids(db.store.dueJobs(lane: .normal, excludingHosts: ["example.com:80"], limit: 2)) == ["01B0"])
    }

    /// A full host's jobs fill more of the lane's top than `dueJobs` walks: the other hosts' best come instead, in order.
    @Test func jobsBehindManyJobsOfAFullHostComeInOrder() throws {
        let db = try TemporaryStore()
        for i in 0..<50 { _ = try db.store.insert(makeDownload(String(format: "01A%02d", i), priority: 0.9), idempotency: nil) }
        for (id, host, priority) in [("01B0", "b.example:80", 0.2), ("01B1", "b.example:80", 0.3), ("01C0", "c.example:80", 0.25),
                                     ("01D0", "d.example:80", 0.1)] {
            var job = makeDownload(id, priority: priority)
            job.hostKey = host
            _ = try db.store.insert(job, idempotency: nil)
        }
        try db.store.promote(now: 0, agedBefore: -1)
        #expect(try ids(db.store.dueJobs(lane: .normal, excludingHosts: ["example.com:80"], limit: 3)) == ["01B1", "01C0", "01B0"])
        #expect(try ids(db.store.dueJobs(lane: .normal, excludingHosts: ["example.com:80", "b.example:80"], limit: 3)) == ["01C0", "01D0"])
        #expect(try ids(db.store.dueJobs(lane: .normal, excludingHosts: [], limit: 2)) == ["01A00", "01A01"])
    }

    /// A pass that takes no more stops the walk: nothing after is offered, by the walk or by the
    /// hosts' seeks that follow it; what the walk offered the seeks do not offer again.
    @Test func theWalkStopsWhenThePassTakesNoMore() throws {
        let db = try TemporaryStore()
        for i in 0..<10 { _ = try db.store.insert(makeDownload(String(format: "01A%02d", i), priority: 0.9), idempotency: nil) }
        for (id, host, priority) in [("01C0", "c.example:80", 0.85), ("01B1", "b.example:80", 0.3), ("01B0", "b.example:80", 0.2)] {
            var job = makeDownload(id, priority: priority)
            job.hostKey = host
            _ = try db.store.insert(job, idempotency: nil)
        }
        try db.store.promote(now: 0, agedBefore: -1)
        let fullHost = ["example.com:80"]
        #expect(try ids(db.store.dueJobs(lane: .normal, excludingHosts: fullHost, limit: 3)) == ["01C0", "01B1", "01B0"])
        #expect(try ids(db.store.dueJobs(lane: .normal, excludingHosts: fullHost, limit: 3, taking: 1)) == ["01C0"])
        #expect(try ids(db.store.dueJobs(lane: .normal, excludingHosts: fullHost, limit: 3, taking: 2)) == ["01C0", "01B1"])
        #expect(try ids(db.store.dueJobs(lane: .normal, excludingHosts: [], limit: 5, taking: 2)) == ["01A00", "01A01"])
    }

    @Test func discretionaryJobsBehindAFullHostComeSmallestFirst() throws {
        let db = try TemporaryStore()
        let fullHost = (0..<10).map { (String(format: "01A%02d", $0), "example.com:80", Int64($0)) }
        for (id, host, size) in fullHost + [("01B0", "b.example:80", 900), ("01C0", "c.example:80", 500), ("01C1", "c.example:80", 700)] {
            var job = makeDownload(id)
            job.hostKey = host
            job.discretionary = true
            job.expectedBytesToReceive = size
            _ = try db.store.insert(job, idempotency: nil)
        }
        try db.store.promote(now: 0, agedBefore: -1)
        #expect(try ids(db.store.dueJobs(lane: .discretionary, excludingHosts: ["example.com:80"], limit: 2)) == ["01C0", "01C1"])
        #expect(try ids(db.store.dueJobs(lane: .discretionary, excludingHosts: ["c.example:80"], limit: 1)) == ["01A00"])
    }

    @Test func sessionsAreInterleavedFairly() throws {
        let db = try TemporaryStore()
        for i in 0..<100 { _ = try db.store.insert(makeDownload(String(format: "01A%03d", i), session: "big"), idempotency: nil) }
        _ = try db.store.insert(makeDownload("01B", session: "small"), idempotency: nil)
        try db.store.promote(now: 0, agedBefore: -1)
        let order = try ids(db.store.dueJobs(lane: .normal, excludingHosts: [], limit: 3))
        #expect(order == ["01A000", "01B", "01A001"])
    }

    @Test func aSessionArrivingLaterStartsAfterWhatAlreadyRan() throws {
        let db = try TemporaryStore()
        for i in 0..<10 { _ = try db.store.insert(makeDownload("01A\(i)", session: "early"), idempotency: nil) }
        try db.store.promote(now: 0, agedBefore: -1)
        for var job in try db.store.dueJobs(lane: .normal, excludingHosts: [], limit: 5) {
            job.state = .running
            #expect(try db.store.claim(job))
        }
        _ = try db.store.insert(makeDownload("01B", session: "late"), idempotency: nil)
        try db.store.promote(now: 0, agedBefore: -1)
        // The late session's job follows the jobs already started, ahead of the early session's backlog.
        #expect(try ids(db.store.dueJobs(lane: .normal, excludingHosts: [], limit: 2)) == ["01A5", "01B"])
    }

    @Test func discretionaryJobsHaveTheirOwnLaneSmallestFirstUntilTheyAge() throws {
        let db = try TemporaryStore()
        for (id, size, created) in [("01D1", Int64(900), Int64(0)), ("01D2", 100, 50), ("01D3", 500, 100)] {
            var job = makeDownload(id, createdAt: created)
            job.discretionary = true
            job.expectedBytesToReceive = size
            _ = try db.store.insert(job, idempotency: nil)
        }
        try db.store.promote(now: 200, agedBefore: -1)
        #expect(try db.store.dueJobs(lane: .normal, excludingHosts: [], limit: 10).isEmpty)
        #expect(try ids(db.store.dueJobs(lane: .discretionary, excludingHosts: [], limit: 10)) == ["01D2", "01D3", "01D1"])
        #expect(try db.store.nextQueueChange(after: 200, agingDelay: 1000) == 1000)
        try db.store.promote(now: 1000, agedBefore: 0)  // created at or before 0: waited its maximum delay
        #expect(try ids(db.store.dueJobs(lane: .normal, excludingHosts: [], limit: 10)) == ["01D1"])
    }

    @Test func aClaimIsACompareAndSetOnQueued() throws {
        let db = try TemporaryStore()
        var job = makeDownload("01A")
        _ = try db.store.insert(job, idempotency: nil)
        job.state = .running
        #expect(try db.store.claim(job))
        #expect(try db.store.claim(job) == false)
    }
}
