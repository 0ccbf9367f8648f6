import DownloadCore
import Foundation
import Persistence
import TestSupport
import Testing

/// What every `JobStore` must do for jobs steered after submit: metadata, revisions, a client's
/// change that state changes never undo, and failed jobs coming back.
@Suite struct SteeringConformanceTests {
    @Test(arguments: StoreBackend.all) func metadataAndTheRetryMarkRoundTrip(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        var download = makeDownload("01A")
        download.metadata = #"{"order":42,"tags":["a","b"]}"#
        download.attemptsBeforeRetry = 3
        download.urlRefresh = true
        _ = try db.store.insert(download, idempotency: nil)
        let stored = try #require(try db.store.download(id: "01A"))
        #expect(stored.metadata == download.metadata)
        #expect(stored.attemptsBeforeRetry == 3 && stored.urlRefresh && stored.awaitingURLSince == nil)
    }

    @Test(arguments: StoreBackend.all) func aNewURLEndsTheWaitForOne(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        var download = makeDownload("01A")
        download.urlRefresh = true
        _ = try db.store.insert(download, idempotency: nil)
        let running = try db.claimQueued("01A")
        var waiting = running
        waiting.state = .queued
        waiting.awaitingURLSince = 50
        waiting.runAt = 10_000
        #expect(try db.store.update(waiting, expecting: [.running]))
        let stored = try #require(try db.store.download(id: "01A"))
        #expect(stored.awaitingURLSince == 50 && stored.runAt == 10_000)
        #expect(try db.candidates(now: 9_999).isEmpty, "not due before its deadline")
        var patched = stored
        patched.url = "http://example.com/fresh"
        patched.awaitingURLSince = nil
        patched.runAt = 60
        let changed = try #require(try db.store.change(patched, expectingRevision: stored.revision))
        #expect(changed.awaitingURLSince == nil && changed.runAt == 60 && changed.url == patched.url)
        #expect(try db.candidates(now: 60, agedBefore: .max) == ["01A"])
    }

    @Test(arguments: StoreBackend.all) func everyWriteMovesTheRevisionOn(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        _ = try db.store.insert(makeDownload("01A"), idempotency: nil)
        var seen: Set<Int64> = [try #require(try db.store.download(id: "01A")).revision]
        func expectNewRevision() throws {
            let revision = try #require(try db.store.download(id: "01A")).revision
            #expect(seen.insert(revision).inserted, "revision \(revision) came back")
        }
        _ = try db.claimQueued("01A")
        try expectNewRevision()
        _ = try db.store.apply([.progress(id: "01A", bytesReceived: 10, bytesExpected: 100, validator: nil)])
        try expectNewRevision()
        var paused = try #require(try db.store.download(id: "01A"))
        paused.state = .paused
        #expect(try db.store.update(paused, expecting: [.running]))
        try expectNewRevision()
        var patched = try #require(try db.store.download(id: "01A"))
        patched.priority = 0.9
        #expect(try db.store.change(patched, expectingRevision: patched.revision) != nil)
        try expectNewRevision()
    }

    @Test(arguments: StoreBackend.all) func aChangeIsACompareAndSetOnTheRevisionOfALiveJob(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        var download = makeDownload("01A")
        download.metadata = #"{"a":1}"#
        _ = try db.store.insert(download, idempotency: nil)
        let current = try #require(try db.store.download(id: "01A"))
        var patched = current
        patched.url = "http://mirror.example.com/01A"
        patched.hostKey = "mirror.example.com:80"
        patched.headers = [OriginHeader(name: "Authorization", value: "Bearer new")]
        patched.priority = 0.1
        patched.earliestBeginDate = 5000
        patched.runAt = 5000
        patched.discretionary = true
        patched.webhookURL = "http://hooks.example.com/"
        patched.metadata = nil
        patched.bytesReceived = 999  // not the client's: left as stored
        let stored = try #require(try db.store.change(patched, expectingRevision: current.revision))
        #expect(stored.url == patched.url && stored.hostKey == patched.hostKey && stored.headers == patched.headers)
        #expect(stored.priority == 0.1 && stored.earliestBeginDate == 5000 && stored.discretionary)
        #expect(stored.webhookURL == patched.webhookURL && stored.metadata == nil)
        #expect(stored.runAt == 5000 && stored.bytesReceived == 0)
        #expect(try db.store.download(id: "01A") == stored)
        // The old revision no longer matches.
        #expect(try db.store.change(patched, expectingRevision: current.revision) == nil)
        // A queued job whose date moved on is not offered before it.
        #expect(try db.candidates(now: 4000).isEmpty)
        #expect(try db.candidates(now: 5000, agedBefore: .max) == ["01A"])
        // Terminal jobs do not change.
        var cancelled = stored
        cancelled.state = .cancelled
        cancelled.finishedAt = 1
        #expect(try db.store.update(cancelled, expecting: [.queued]))
        let final = try #require(try db.store.download(id: "01A"))
        #expect(try db.store.change(final, expectingRevision: final.revision) == nil)
    }

    @Test(arguments: StoreBackend.all) func aStateChangeNeverUndoesAClientsChange(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        _ = try db.store.insert(makeDownload("01A"), idempotency: nil)
        _ = try db.claimQueued("01A")
        let claimed = try #require(try db.store.download(id: "01A"))
        var patched = claimed
        patched.priority = 0.9
        patched.metadata = #"{"b":2}"#
        _ = try #require(try db.store.change(patched, expectingRevision: claimed.revision))
        // The scheduler settles the attempt from the copy it claimed.
        var settled = claimed
        settled.state = .queued
        settled.bytesReceived = 50
        #expect(try db.store.update(settled, expecting: [.running]))
        let stored = try #require(try db.store.download(id: "01A"))
        #expect(stored.priority == 0.9 && stored.metadata == #"{"b":2}"# && stored.bytesReceived == 50 && stored.state == .queued)
    }

    @Test(arguments: StoreBackend.all) func aFailedJobComesBackUnlessItsDestinationIsTaken(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        _ = try db.store.insert(makeDownload("01A", destination: "same"), idempotency: nil)
        let failed = try db.failQueued("01A")
        var retried = try #require(try db.store.download(id: "01A"))
        retried.state = .queued
        retried.finishedAt = nil
        retried.attemptsBeforeRetry = retried.attempts
        #expect(try db.store.update(retried, expecting: [.failed]))
        #expect(try db.store.download(id: "01A")?.state == .queued)
        #expect(try db.store.counts()[.queued] == 1 && db.store.counts()[.failed] == 0)

        #expect(try db.store.update(failed, expecting: [.queued]))
        _ = try db.store.insert(makeDownload("01B", destination: "same"), idempotency: nil)
        #expect(throws: DestinationBusy.self) { try db.store.update(retried, expecting: [.failed]) }
        #expect(try db.store.download(id: "01A")?.state == .failed)
    }
}

@Suite struct SessionActionConformanceTests {
    private func act(_ db: ScratchStore, _ kind: SessionActionKind, _ session: String, state: DownloadState? = nil,
                     now: Int64 = 100) throws -> SessionActionResult {
        try db.store.act(SessionAction(kind: kind, session: session, state: state, now: now, events: { job in
            [WebhookEvent(id: "e-\(job.id)", type: "download.\(job.state.rawValue)", payload: Array(job.id.utf8),
                          urls: ["http://hooks.example/"], session: job.session)]
        }, sessionFinished: { _ in [] }))
    }

    @Test(arguments: StoreBackend.all) func actionsChangeTheirSessionInTheStatesTheyApplyTo(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        for id in ["01A", "01B", "01C"] { _ = try db.store.insert(makeDownload(id, session: "s"), idempotency: nil) }
        _ = try db.store.insert(makeDownload("01Z", session: "other"), idempotency: nil)
        _ = try db.claimQueued("01A")
        var failed = try #require(try db.store.download(id: "01C"))
        failed.state = .failed
        failed.attempts = 3
        failed.finishedAt = 5
        failed.error = DownloadError(code: "network", message: "reset")
        #expect(try db.store.update(failed, expecting: [.queued]))
        let before = try #require(try db.store.download(id: "01B")).revision

        let paused = try act(db, .pause, "s")
        #expect(paused.matched == 3 && Set(paused.changed) == ["01A", "01B"] && paused.wereRunning == ["01A"])
        #expect(try db.store.download(id: "01B")?.revision != before)
        #expect(try act(db, .resume, "s", state: .queued) == SessionActionResult(matched: 0, changed: [], wereRunning: []))
        let resumed = try act(db, .resume, "s", now: 200)
        #expect(Set(resumed.changed) == ["01A", "01B"] && resumed.wereRunning.isEmpty)
        #expect(try db.store.download(id: "01B")?.runAt == 200)

        let retried = try act(db, .retry, "s", now: 300)
        #expect(retried.changed == ["01C"])
        let revived = try #require(try db.store.download(id: "01C"))
        #expect(revived.state == .queued && revived.error == nil && revived.finishedAt == nil && revived.attemptsBeforeRetry == 3)

        let cancelled = try act(db, .cancel, "s", now: 400)
        #expect(cancelled.matched == 3 && Set(cancelled.changed) == ["01A", "01B", "01C"])
        #expect(try db.store.download(id: "01A")?.finishedAt == 400)
        #expect(try db.store.dueDeliveries(now: 1000, limit: 10, excluding: []).map(\.eventID).sorted() == ["e-01A", "e-01B", "e-01C"])
        #expect(try db.store.counts(session: "s")[.cancelled] == 3 && db.store.counts()[.cancelled] == 3)
        #expect(try db.store.download(id: "01Z")?.state == .queued)
    }

    @Test(arguments: StoreBackend.all) func aRetryLeavesAJobWhoseDestinationIsTakenFailed(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        for id in ["01A", "01B"] { _ = try db.store.insert(makeDownload(id, destination: "same-\(id)", session: "s"), idempotency: nil) }
        for id in ["01A", "01B"] { _ = try db.failQueued(id) }
        _ = try db.store.insert(makeDownload("01C", destination: "same-01A", session: "t"), idempotency: nil)
        #expect(try act(db, .retry, "s").changed == ["01B"])
        #expect(try db.store.download(id: "01A")?.state == .failed)
    }
}

@Suite struct BatchConformanceTests {
    @Test(arguments: StoreBackend.all) func aKeyedBatchIsOneRequest(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        let key = IdempotencyRecord(principal: "anonymous", key: "b1", bodySHA256: "h1")
        let jobs = [makeDownload("01A", destination: "same"), makeDownload("01B", destination: "same"), makeDownload("01C")]
            .map { NewJob(download: $0, idempotency: nil) }
        var asked: [InsertOutcome] = []
        let first = try db.store.insertBatch(jobs, idempotency: key, now: 10) { outcomes in
            asked = outcomes
            return Array("answer".utf8)
        }
        #expect(first == .inserted([.created, .destinationBusy, .created]))
        #expect(asked.count == 3)
        let again = try db.store.insertBatch([NewJob(download: makeDownload("01D"), idempotency: nil)], idempotency: key, now: 20) { _ in [] }
        #expect(again == .replayed(Array("answer".utf8)))
        let other = IdempotencyRecord(principal: "anonymous", key: "b1", bodySHA256: "h2")
        #expect(try db.store.insertBatch([], idempotency: other, now: 20) { _ in [] } == .keyMismatch)
        #expect(try db.store.download(id: "01D") == nil)
        // Kept as long as single keys are.
        _ = try db.store.prune(finishedBefore: 0, settledBefore: 0, keysBefore: 11)
        #expect(try db.store.insertBatch([], idempotency: other, now: 30) { _ in [] } == .inserted([]))
    }
}

@Suite struct EventLogConformanceTests {
    @Test(arguments: StoreBackend.all) func everyStateChangeIsLoggedInOneSequence(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        #expect(try db.store.eventLogSpan() == EventLogSpan(oldest: nil, newest: 0))
        _ = try db.store.insert(makeDownload("01A", session: "a"), idempotency: nil)
        _ = try db.store.insert(makeDownload("01B", session: "b"), idempotency: nil)
        let running = try db.claimQueued("01A")
        _ = try db.store.apply([.progress(id: "01A", bytesReceived: 5, bytesExpected: nil, validator: nil)])  // not a state change
        var done = running
        done.state = .completed
        done.finishedAt = 1
        #expect(try db.store.update(done, expecting: [.running]))
        _ = try db.store.act(SessionAction(kind: .cancel, session: "b", state: nil, now: 2, events: { _ in [] }, sessionFinished: { _ in [] }))

        let all = try db.store.loggedEvents(after: 0, session: nil, limit: 100)
        #expect(all.map(\.downloadID) == ["01A", "01B", "01A", "01A", "01B"])
        #expect(all.map(\.sequence) == all.map(\.sequence).sorted() && Set(all.map(\.sequence)).count == 5)
        #expect(all.allSatisfy { !$0.payload.isEmpty })
        #expect(try db.store.loggedEvents(after: all[1].sequence, session: "a", limit: 100).map(\.sequence) == [all[2].sequence, all[3].sequence])
        #expect(try db.store.loggedEvents(after: 0, session: nil, limit: 2).count == 2)
        #expect(try db.store.eventLogSpan() == EventLogSpan(oldest: all[0].sequence, newest: all[4].sequence))
    }

    @Test(arguments: StoreBackend.all) func aSessionActionLogsEachChangedJobAsItLeftIt(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        for id in ["01A", "01B"] { _ = try db.store.insert(makeDownload(id, session: "a"), idempotency: nil) }
        _ = try db.store.insert(makeDownload("01C", session: "b"), idempotency: nil)
        let inserted = try db.store.eventLogSpan().newest
        for kind in [SessionActionKind.pause, .resume] {
            _ = try db.store.act(SessionAction(kind: kind, session: "a", state: nil, now: 2, events: { _ in [] }, sessionFinished: { _ in [] }))
        }

        let logged = try db.store.loggedEvents(after: inserted, session: nil, limit: 100)
        let states = try logged.map { event -> [String] in
            let json = try #require(try JSONSerialization.jsonObject(with: Data(event.payload)) as? [String: Any])
            return [event.downloadID, event.session, json["id"] as? String ?? "", json["state"] as? String ?? ""]
        }
        // Each action's jobs together, in the order the action wrote them.
        #expect(states.count == 4)
        #expect(states.prefix(2).sorted { $0[0] < $1[0] } == [["01A", "a", "01A", "paused"], ["01B", "a", "01B", "paused"]])
        #expect(states.suffix(2).sorted { $0[0] < $1[0] } == [["01A", "a", "01A", "queued"], ["01B", "a", "01B", "queued"]])
        // Read a page at a time, as a stream follows.
        #expect(try db.store.loggedEvents(after: logged[1].sequence, session: "a", limit: 1) == [logged[2]])
    }

    /// A batch and a session action log many jobs at once (SQLite keeps a run of one session's jobs
    /// in one row); each event still reads back alone, from any point, in any page size.
    @Test(arguments: StoreBackend.all) func eventsWrittenTogetherReadBackOneByOne(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        let batch = zip(["01A", "01B", "01C", "01D", "01E", "01F"], ["a", "a", "a", "b", "a", "a"]).map { makeDownload($0, session: $1) }
        _ = try db.store.insert(batch.map { NewJob(download: $0, idempotency: nil) })
        let action = try db.store.act(SessionAction(kind: .pause, session: "a", state: nil, now: 2, events: { _ in [] }, sessionFinished: { _ in [] }))
        #expect(action.changed.count == 5)

        let all = try db.store.loggedEvents(after: 0, session: nil, limit: 100)
        #expect(all.prefix(6).map(\.downloadID) == batch.map(\.id))
        #expect(all.suffix(5).map(\.downloadID).sorted() == ["01A", "01B", "01C", "01E", "01F"])
        #expect(all.map(\.session) == batch.map(\.session) + Array(repeating: "a", count: 5))
        #expect(zip(all, all.dropFirst()).allSatisfy { $0.sequence < $1.sequence })
        for (index, event) in all.enumerated() {
            #expect(try db.store.loggedEvents(after: event.sequence, session: nil, limit: 2) == Array(all.dropFirst(index + 1).prefix(2)))
            #expect(try db.store.loggedEvents(after: event.sequence, session: "a", limit: 3)
                == Array(all.dropFirst(index + 1).filter { $0.session == "a" }.prefix(3)))
        }
        #expect(try db.store.loggedEvents(after: 0, session: "b", limit: 100) == [all[3]])
        #expect(try db.store.eventLogSpan() == EventLogSpan(oldest: all[0].sequence, newest: all[10].sequence))

        // Pruning keeps at least the newest asked for, and what it keeps reads as before.
        let pruned = try db.store.pruneEventLog(before: .max, keepingLast: 3)
        let kept = try db.store.loggedEvents(after: 0, session: nil, limit: 100)
        #expect(pruned == all.count - kept.count && kept.count >= 3)
        #expect(kept == Array(all.suffix(kept.count)))
        #expect(try db.store.eventLogSpan() == EventLogSpan(oldest: kept[0].sequence, newest: all[10].sequence))
        _ = try db.store.insert(makeDownload("01Z", session: "c"), idempotency: nil)
        #expect(try db.store.loggedEvents(after: all[10].sequence, session: nil, limit: 100).map(\.downloadID) == ["01Z"])
    }

    @Test(arguments: StoreBackend.all) func pruningKeepsTheNewestAndTheRecent(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        for index in 0..<6 { _ = try db.store.insert(makeDownload("01\(index)"), idempotency: nil) }
        let all = try db.store.loggedEvents(after: 0, session: nil, limit: 100)
        #expect(try db.store.pruneEventLog(before: 0, keepingLast: 1) == 0, "nothing is older than the epoch")
        #expect(try db.store.pruneEventLog(before: .max, keepingLast: 4) == 2)
        #expect(try db.store.eventLogSpan() == EventLogSpan(oldest: all[2].sequence, newest: all[5].sequence))
        // Sequence numbers are never reused.
        _ = try db.store.insert(makeDownload("01Z"), idempotency: nil)
        #expect(try db.store.eventLogSpan().newest > all[5].sequence)
    }
}

extension ScratchStore {
    /// Claims a queued job as a scheduling pass would; returns it as claimed.
    func claimQueued(_ id: String) throws -> Download {
        var running = try #require(try store.download(id: id))
        running.state = .running
        #expect(try claim(running))
        return running
    }

    /// Fails a queued job, as settling would; returns it as written.
    func failQueued(_ id: String) throws -> Download {
        var failed = try #require(try store.download(id: id))
        failed.state = .failed
        failed.finishedAt = 1
        #expect(try store.update(failed, expecting: [.queued]))
        return failed
    }
}
