import DownloadCore
import Persistence
import TestSupport
import Testing

/// What every `JobStore` must do, run against each backend in `StoreBackend.all`.
@Suite struct JobStoreConformanceTests {
    @Test(arguments: StoreBackend.all) func insertsAndReadsBackEveryField(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        var download = makeDownload("01A")
        download.headers = [OriginHeader(name: "X-Key", value: "v")]
        download.expectedSHA256 = String(repeating: "a", count: 64)
        download.earliestBeginDate = 1234
        #expect(try db.store.insert(download, idempotency: nil) == .created)
        #expect(try db.store.download(id: "01A") == download)
        #expect(try db.store.download(id: "nope") == nil)
    }

    @Test(arguments: StoreBackend.all) func aLiveDestinationHasOneOwner(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        _ = try db.store.insert(makeDownload("01A", destination: "same"), idempotency: nil)
        #expect(try db.store.insert(makeDownload("01B", destination: "same"), idempotency: nil) == .destinationBusy)
        var first = try #require(try db.store.download(id: "01A"))
        first.state = .cancelled
        #expect(try db.store.update(first, expecting: [.queued]))
        #expect(try db.store.insert(makeDownload("01C", destination: "same"), idempotency: nil) == .created)
    }

    @Test(arguments: StoreBackend.all) func aBatchCommitsEachJobAsIfAlone(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        let key = IdempotencyRecord(principal: "anonymous", key: "k1", bodySHA256: "h1")
        let first = makeDownload("01A", destination: "same")
        let keyed = makeDownload("01C")
        let outcomes = try db.store.insert([
            NewJob(download: first, idempotency: nil),
            NewJob(download: makeDownload("01B", destination: "same"), idempotency: nil),
            NewJob(download: keyed, idempotency: key),
            NewJob(download: makeDownload("01D"), idempotency: key),
            NewJob(download: makeDownload("01E"), idempotency: IdempotencyRecord(principal: "anonymous", key: "k1", bodySHA256: "h2")),
        ])
        #expect(outcomes == [.created, .destinationBusy, .created, .replayed(keyed), .keyMismatch])
        #expect(try db.store.list(kind: .download, state: nil, session: nil, limit: 10, cursor: nil).items.map(\.id) == ["01C", "01A"])
    }

    @Test(arguments: StoreBackend.all) func readsSeeEveryCommittedWrite(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        for index in 0..<20 {
            let download = makeDownload(String(format: "01%02d", index))
            _ = try db.store.insert(download, idempotency: nil)
            // Reads go to other connections than the write: each must see the commit just made.
            #expect(try db.store.download(id: download.id) == download)
        }
        #expect(try db.store.counts()[.queued] == 20)
    }

    /// The kept counts agree with counting the table through inserts, claims, transitions and pruning.
    @Test(arguments: StoreBackend.all) func keptCountsFollowEveryChange(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        func expectCountsMatchTheTable() throws {
            // All jobs are in "s": the session's counts and the whole table's, each kept on its own.
            let counted = try db.store.counts(session: "s")
            #expect(try db.store.counts() == counted)
        }
        for index in 0..<6 { _ = try db.store.insert(makeDownload("01\(index)", session: "s"), idempotency: nil) }
        try expectCountsMatchTheTable()
        var running = try #require(try db.store.download(id: "010"))
        running.state = .running
        #expect(try db.claim(running))
        var done = try #require(try db.store.download(id: "011"))
        done.state = .completed
        done.finishedAt = 1
        #expect(try db.store.update(done, expecting: [.queued]))
        var paused = try #require(try db.store.download(id: "012"))
        paused.state = .paused
        #expect(try db.store.update(paused, expecting: [.queued]))
        #expect(try db.store.update(paused, expecting: [.queued]) == false)  // no change, no count change
        try expectCountsMatchTheTable()
        #expect(try db.store.counts(session: "s") == [.queued: 3, .running: 1, .paused: 1, .completed: 1, .failed: 0, .cancelled: 0])
        _ = try db.store.prune(finishedBefore: 10, settledBefore: 10, keysBefore: 10)
        try expectCountsMatchTheTable()
        #expect(try db.store.counts(session: "s") == [.queued: 3, .running: 1, .paused: 1, .completed: 0, .failed: 0, .cancelled: 0])
        #expect(try db.store.counts(session: "other")[.queued] == 0)
    }

    @Test(arguments: StoreBackend.all) func updatesAreCompareAndSetOnTheExpectedState(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        var download = makeDownload("01A")
        _ = try db.store.insert(download, idempotency: nil)
        download.state = .running
        #expect(try db.store.update(download, expecting: [.paused]) == false)
        #expect(try db.store.download(id: "01A")?.state == .queued)
        #expect(try db.store.update(download, expecting: [.queued]))
        #expect(try db.store.download(id: "01A")?.state == .running)
    }

    @Test(arguments: StoreBackend.all) func idempotencyKeysReplayOrMismatch(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        let record = IdempotencyRecord(principal: "anonymous", key: "k1", bodySHA256: "h1")
        let first = makeDownload("01A")
        #expect(try db.store.insert(first, idempotency: record) == .created)
        #expect(try db.store.insert(makeDownload("01B"), idempotency: record) == .replayed(first))
        #expect(try db.store.insert(makeDownload("01C"), idempotency: IdempotencyRecord(principal: "anonymous", key: "k1", bodySHA256: "h2")) == .keyMismatch)
        // Keys are scoped per principal.
        let other = makeDownload("01D")
        #expect(try db.store.insert(other, idempotency: IdempotencyRecord(principal: "token:x", key: "k1", bodySHA256: "h1")) == .created)
    }

    @Test(arguments: StoreBackend.all) func listsNewestFirstWithCursorAndFilters(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        for i in 0..<5 { _ = try db.store.insert(makeDownload("01A\(i)", session: i % 2 == 0 ? "even" : "odd"), idempotency: nil) }
        let page1 = try db.store.list(kind: .download, state: nil, session: nil, limit: 2, cursor: nil)
        #expect(page1.items.map(\.id) == ["01A4", "01A3"])
        let page2 = try db.store.list(kind: .download, state: nil, session: nil, limit: 2, cursor: page1.nextCursor)
        #expect(page2.items.map(\.id) == ["01A2", "01A1"])
        let page3 = try db.store.list(kind: .download, state: nil, session: nil, limit: 2, cursor: page2.nextCursor)
        #expect(page3.items.map(\.id) == ["01A0"])
        #expect(page3.nextCursor == nil)
        #expect(try db.store.list(kind: .download, state: nil, session: "even", limit: 10, cursor: nil).items.map(\.id) == ["01A4", "01A2", "01A0"])
        #expect(try db.store.list(kind: .download, state: .running, session: nil, limit: 10, cursor: nil).items.isEmpty)
        let queuedEven = try db.store.list(kind: .download, state: .queued, session: "even", limit: 2, cursor: nil)
        #expect(queuedEven.items.map(\.id) == ["01A4", "01A2"])
        #expect(try db.store.list(kind: .download, state: .queued, session: "even", limit: 2, cursor: queuedEven.nextCursor).items.map(\.id) == ["01A0"])
        #expect(try db.store.list(kind: .download, state: .running, session: "even", limit: 10, cursor: nil).items.isEmpty)
        #expect(try db.store.list(kind: .download, state: .completed, session: "even", limit: 10, cursor: nil).items.isEmpty)
    }

    @Test(arguments: StoreBackend.all) func terminalTransitionsRecordTheirEventsAndFinishTheSession(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        _ = try db.store.insert(makeDownload("01A", session: "s"), idempotency: nil)
        var done = try #require(try db.store.download(id: "01A"))
        done.state = .cancelled
        done.finishedAt = 10
        var snapshots: [SessionSnapshot] = []
        let event = WebhookEvent(id: "msg_1", type: "download.cancelled", payload: Array("{}".utf8), urls: ["http://a/", "http://b/"], session: "s")
        #expect(try db.store.update(done, expecting: [.queued], events: [event]) { snapshot in
            snapshots.append(snapshot)
            return [WebhookEvent(id: "msg_2", type: "session.finished", payload: Array("{}".utf8), urls: ["http://a/"], session: "s")]
        })
        #expect(snapshots.map(\.session) == ["s"])
        #expect(snapshots.first?.counts[.cancelled] == 1)
        let due = try db.store.dueDeliveries(now: 10, limit: 10, excluding: [])
        // session.finished to http://a/ waits for the job's own event there.
        #expect(Set(due.map(\.key)) == ["msg_1 http://a/", "msg_1 http://b/"])
    }

    @Test(arguments: StoreBackend.all) func sessionFinishedWaitsForEarlierEventsToTheSameURL(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        _ = try db.store.insert(makeDownload("01A", session: "s"), idempotency: nil)
        var done = try #require(try db.store.download(id: "01A"))
        done.state = .cancelled
        let jobEvent = WebhookEvent(id: "msg_1", type: "download.cancelled", payload: [], urls: ["http://a/"], session: "s")
        _ = try db.store.update(done, expecting: [.queued], events: [jobEvent]) { _ in
            [WebhookEvent(id: "msg_2", type: "session.finished", payload: [], urls: ["http://a/"], session: "s")]
        }
        let first = try db.store.dueDeliveries(now: 0, limit: 10, excluding: [])
        #expect(first.map(\.eventID) == ["msg_1"])
        try db.store.recordDeliveryAttempt(first[0], delivered: false, retryAt: 100, status: 500, error: nil, now: 0)
        #expect(try db.store.dueDeliveries(now: 50, limit: 10, excluding: []).isEmpty)
        let retry = try db.store.dueDeliveries(now: 100, limit: 10, excluding: [])
        try db.store.recordDeliveryAttempt(retry[0], delivered: true, retryAt: nil, status: 200, error: nil, now: 100)
        #expect(try db.store.dueDeliveries(now: 100, limit: 10, excluding: []).map(\.eventID) == ["msg_2"])
    }

    /// One subscriber of many sessions: a session's finish waits for its own events only.
    @Test(arguments: StoreBackend.all) func sessionFinishedDoesNotWaitForOtherSessions(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        for (id, session) in [("01A", "busy"), ("01B", "done")] {
            _ = try db.store.insert(makeDownload(id, session: session), idempotency: nil)
            var job = try #require(try db.store.download(id: id))
            job.state = .cancelled
            let event = WebhookEvent(id: "msg_\(id)", type: "download.cancelled", payload: [], urls: ["http://a/"], session: session)
            _ = try db.store.update(job, expecting: [.queued], events: [event]) { snapshot in
                [WebhookEvent(id: "msg_\(id)z", type: "session.finished", payload: [], urls: ["http://a/"], session: snapshot.session)]
            }
        }
        let first = try db.store.dueDeliveries(now: 0, limit: 10, excluding: [])
        #expect(first.map(\.eventID) == ["msg_01A", "msg_01B"])
        // The busy session's event is still failing; the other session's finish is not held up by it.
        try db.store.recordDeliveryAttempt(first[1], delivered: true, retryAt: nil, status: 200, error: nil, now: 0)
        try db.store.recordDeliveryAttempt(first[0], delivered: false, retryAt: 100, status: 500, error: nil, now: 0)
        #expect(try db.store.dueDeliveries(now: 0, limit: 10, excluding: []).map(\.eventID) == ["msg_01Bz"])
    }

    @Test(arguments: StoreBackend.all) func deliveriesAreRetriedThenDelivered(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        _ = try db.store.insert(makeDownload("01A"), idempotency: nil)
        var done = try #require(try db.store.download(id: "01A"))
        done.state = .cancelled
        let event = WebhookEvent(id: "msg_1", type: "download.cancelled", payload: Array("{}".utf8), urls: ["http://a/"], session: "default")
        _ = try db.store.update(done, expecting: [.queued], events: [event])
        let delivery = try #require(try db.store.dueDeliveries(now: 0, limit: 10, excluding: []).first)
        try db.store.recordDeliveryAttempt(delivery, delivered: false, retryAt: 500, status: 500, error: "answered 500", now: 0)
        #expect(try db.store.dueDeliveries(now: 499, limit: 10, excluding: []).isEmpty)
        #expect(try db.store.nextDeliveryAt(after: 0) == 500)
        let retry = try #require(try db.store.dueDeliveries(now: 500, limit: 10, excluding: []).first)
        #expect(retry.attempts == 1)
        #expect(try db.store.dueDeliveries(now: 500, limit: 10, excluding: [retry.key]).isEmpty)
        try db.store.recordDeliveryAttempt(retry, delivered: true, retryAt: nil, status: 200, error: nil, now: 500)
        #expect(try db.store.dueDeliveries(now: 10_000, limit: 10, excluding: []).isEmpty)
    }

    @Test(arguments: StoreBackend.all) func attemptsAreRecordedWithTheTransitionThatEndsThem(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        var job = makeDownload("01A")
        _ = try db.store.insert(job, idempotency: nil)
        job.state = .running
        job.attempts = 1
        #expect(try db.store.update(job, expecting: [.queued]))
        job.state = .queued
        let retry = AttemptRecord(number: 1, startedAt: 10, endedAt: 20, outcome: "retry",
                                  error: DownloadError(code: "http_status", message: "503"), httpStatus: 503,
                                  bytesTransferred: 0, bytesOnDisk: 0)
        // A failed compare-and-set records nothing.
        #expect(try db.store.update(job, expecting: [.paused], attempt: retry) == false)
        #expect(try db.store.attempts(of: "01A").isEmpty)
        #expect(try db.store.update(job, expecting: [.running], attempt: retry))
        let paused = AttemptRecord(number: 2, startedAt: 30, endedAt: 40, outcome: "paused", error: nil, httpStatus: 200,
                                   bytesTransferred: 5, bytesOnDisk: 5)
        _ = try db.store.apply([.attempt(paused, of: "01A")])
        #expect(try db.store.attempts(of: "01A") == [retry, paused])
    }
}

@Suite struct RetentionConformanceTests {
    @Test(arguments: StoreBackend.all) func pruningRemovesOnlyOldTerminalJobsAndSettledDeliveries(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        for (id, state, finished) in [("01A", DownloadState.completed, Int64(100)), ("01B", .failed, 900), ("01C", .queued, 0)] {
            var job = makeDownload(id)
            _ = try db.store.insert(job, idempotency: IdempotencyRecord(principal: "p", key: id, bodySHA256: "h"))
            guard state != .queued else { continue }
            job.state = state
            job.finishedAt = finished
            let event = WebhookEvent(id: "msg_\(id)", type: "download.\(state.rawValue)", payload: [], urls: ["http://a/"], session: "default")
            _ = try db.store.update(job, expecting: [.queued], events: [event])
        }
        let pending = try db.store.dueDeliveries(now: 1000, limit: 10, excluding: [])
        try db.store.recordDeliveryAttempt(pending[0], delivered: true, retryAt: nil, status: 200, error: nil, now: 200)

        let pruned = try db.store.prune(finishedBefore: 500, settledBefore: 500, keysBefore: 0)

        #expect(pruned == Pruned(downloads: 1, deliveries: 1, idempotencyKeys: 0))
        #expect(try db.store.download(id: "01A") == nil)
        #expect(try db.store.download(id: "01B") != nil)
        #expect(try db.store.download(id: "01C") != nil)  // live jobs are never pruned
        #expect(try db.store.dueDeliveries(now: 1000, limit: 10, excluding: []).count == 1)  // the pending one stays
        #expect(try db.store.prune(finishedBefore: 500, settledBefore: 500, keysBefore: 10_000).idempotencyKeys == 3)
    }
}

@Suite struct HostBackoffConformanceTests {
    @Test(arguments: StoreBackend.all) func aHeldHostStaysHeldUntilItsTimeAndALaterHoldWins(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        #expect(try db.store.apply([.holdHost("a.example:443", until: 5000), .holdHost("b.example:80", until: 2000)]) == [true, true])
        #expect(try db.store.apply([.holdHost("a.example:443", until: 3000)]) == [true])  // earlier: the later hold stays
        #expect(try db.store.hostBackoffs(after: 1000) == ["a.example:443": 5000, "b.example:80": 2000])
        #expect(try db.store.hostBackoffs(after: 2000) == ["a.example:443": 5000])
        #expect(try db.store.hostBackoffs(after: 5000).isEmpty)
    }
}
