import DownloadCore
import Persistence
import TestSupport
import Testing

/// What nodes sharing one store rely on: leases on running jobs, fencing of a lost attempt,
/// takeover of a stopped node's jobs, the load of other nodes in a claim pass, leased webhook
/// deliveries. A store only one process uses (SQLite) answers for itself: it is the only node.
@Suite struct NodeConformanceTests {
    /// Inserts `id` and claims it through `store` as the next attempt.
    func claimed(_ id: String, host: String = "example.com:80", by store: any JobStore) throws -> Download {
        var job = makeDownload(id)
        job.hostKey = host
        _ = try store.insert(job, idempotency: nil)
        let result = try store.claim(ClaimPass(now: 0, agedBefore: .max, agingDelay: 0,
                                               candidates: { _ in (limit: 10, excludingHosts: []) },
                                               choose: { var started = $0; started.state = .running; started.attempts += 1; return started }))
        return try #require(result.claimed.first { $0.id == id })
    }

    @Test(arguments: StoreBackend.all) func liveNodesAreListedWithTheJobsTheyRun(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        guard try db.store.liveNodes() != nil else {
            #expect(try db.store.renewLease())
            return
        }
        let other = try db.another()
        _ = try claimed("01A", by: other)
        #expect(try db.store.renewLease())
        let nodes = try #require(try db.store.liveNodes())
        #expect(nodes.count == 2)
        #expect(nodes.map(\.runningTransfers).sorted() == [0, 1])
    }

    @Test(arguments: StoreBackend.all) func aJobChangedElsewhereNoLongerRunsHere(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        let running = try claimed("01A", by: db.store)
        _ = try claimed("01B", by: db.store)
        #expect(try db.store.jobsNotRunningHere(["01A", "01B", "01Z"]).isEmpty)
        var cancelled = running
        cancelled.state = .cancelled
        cancelled.finishedAt = 5
        #expect(try db.another().update(cancelled, expecting: [.running]))
        #expect(try db.store.jobsNotRunningHere(["01A", "01B"]) == ["01A": .cancelled])
    }

    /// A node that stops leaves its running jobs to the others, who settle them; what it would
    /// write later about the attempt it ran is refused (fencing).
    @Test(arguments: StoreBackend.all) func aStoppedNodesJobsAreTakenOverAndItsLateSettlementRefused(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        let node = try db.another()
        guard try node.liveNodes() != nil else {
            _ = try claimed("01A", by: db.store)
            #expect(try db.store.takeOverAbandonedJobs().isEmpty)
            return
        }
        let attempt = try claimed("01A", by: node)
        #expect(try db.store.takeOverAbandonedJobs().isEmpty)
        node.close()
        let taken = try db.store.takeOverAbandonedJobs()
        #expect(taken.map(\.id) == ["01A"])
        #expect(try db.store.takeOverAbandonedJobs().isEmpty)
        var requeued = taken[0]
        requeued.state = .queued
        #expect(try db.store.update(requeued, expecting: [.running]))
        _ = try db.store.claim(ClaimPass(now: 0, agedBefore: .max, agingDelay: 0, candidates: { _ in (limit: 10, excludingHosts: []) },
                                         choose: { var started = $0; started.state = .running; started.attempts += 1; return started }))

        var late = attempt
        late.state = .completed
        late.finishedAt = 9
        #expect(try !db.store.update(late, expecting: [.running]))
        #expect(try db.store.download(id: "01A")?.state == .running)
        #expect(try db.store.download(id: "01A")?.attempts == attempt.attempts + 1)
    }

    @Test(arguments: StoreBackend.all) func aClaimPassIsToldWhatOtherNodesRunPerHost(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        _ = try claimed("01A", host: "a.example:80", by: db.store)
        _ = try claimed("01B", host: "a.example:80", by: db.store)
        var told: [String: Int]?
        var pass = ClaimPass(now: 0, agedBefore: .max, agingDelay: 0, candidates: { _ in nil }, choose: { _ in nil })
        pass.otherNodesRunning = { told = $0 }
        let other = try db.another()
        _ = try other.claim(pass)
        if try db.store.liveNodes() == nil {
            #expect(told == nil)
        } else {
            #expect(told == ["a.example:80": 2])
            _ = try db.store.claim(pass)
            #expect(told == [:])
        }
    }

    /// Event streams on one node report the progress of jobs the others run, as they save it.
    @Test(arguments: StoreBackend.all) func theProgressOfJobsOtherNodesRunIsReadAsSaved(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        _ = try claimed("01A", by: db.store)
        guard try db.store.liveNodes() != nil else {
            #expect(try db.store.runningElsewhere().isEmpty)
            return
        }
        let other = try db.another()
        var remote = try claimed("01B", by: other)
        #expect(try other.apply([.progress(id: remote.id, bytesReceived: 700, bytesExpected: 2048, validator: nil)]) == [true])
        #expect(try db.store.runningElsewhere() == [RunningProgress(id: "01B", session: remote.session, bytesReceived: 700, bytesExpected: 2048)])
        #expect(try other.runningElsewhere().map(\.id) == ["01A"])
        remote.state = .paused
        #expect(try other.update(remote, expecting: [.running]))
        #expect(try db.store.runningElsewhere().isEmpty)
    }

    /// A due delivery one node is sending is not handed to another until its outcome is recorded.
    @Test(arguments: StoreBackend.all) func aDeliveryInFlightOnOneNodeIsNotSentByAnother(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        var job = makeDownload("01A")
        _ = try db.store.insert(job, idempotency: nil)
        job.state = .cancelled
        job.finishedAt = 5
        let event = WebhookEvent(id: "msg_1", type: "download.cancelled", payload: Array("{}".utf8), urls: ["http://a/"], session: "default")
        #expect(try db.store.update(job, expecting: [.queued], events: [event]))
        guard try db.store.liveNodes() != nil else { return }
        let other = try db.another()
        let leased = try db.store.dueDeliveries(now: 10, limit: 10, excluding: [])
        #expect(leased.map(\.eventID) == ["msg_1"])
        #expect(try other.dueDeliveries(now: 10, limit: 10, excluding: []).isEmpty)
        try other.recordDeliveryAttempt(leased[0], delivered: true, retryAt: nil, status: 200, error: nil, now: 11)
        #expect(try db.store.webhookBacklog().pending == 1)
        try db.store.recordDeliveryAttempt(leased[0], delivered: true, retryAt: nil, status: 200, error: nil, now: 11)
        #expect(try db.store.webhookBacklog().pending == 0)
    }
}
