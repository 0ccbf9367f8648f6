import DownloadCore
import Persistence
import Testing

/// What every `JobStore` must do for jobs steered after submit: metadata, revisions, a client's
/// change that state changes never undo, and failed jobs coming back.
@Suite struct SteeringConformanceTests {
    @Test(arguments: StoreBackend.all) func metadataAndTheRetryMarkRoundTrip(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        var download = makeDownload("01A")
        download.metadata = #"{"order":42,"tags":["a","b"]}"#
        download.attemptsBeforeRetry = 3
        _ = try db.store.insert(download, idempotency: nil)
        let stored = try #require(try db.store.download(id: "01A"))
        #expect(stored.metadata == download.metadata)
        #expect(stored.attemptsBeforeRetry == 3)
    }

    @Test(arguments: StoreBackend.all) func everyWriteMovesTheRevisionOn(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        _ = try db.store.insert(makeDownload("01A"), idempotency: nil)
        var seen: Set<Int64> = [try #require(try db.store.download(id: "01A")).revision]
        func expectNewRevision() throws {
            let revision = try #require(try db.store.download(id: "01A")).revision
            #expect(seen.insert(revision).inserted, "revision \(revision) came back")
        }
        var running = try #require(try db.store.download(id: "01A"))
        running.state = .running
        #expect(try db.claim(running))
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
        var running = try #require(try db.store.download(id: "01A"))
        running.state = .running
        #expect(try db.claim(running))
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
        var failed = try #require(try db.store.download(id: "01A"))
        failed.state = .failed
        failed.finishedAt = 1
        #expect(try db.store.update(failed, expecting: [.queued]))
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
