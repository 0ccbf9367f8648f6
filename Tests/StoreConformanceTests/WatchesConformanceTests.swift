import DownloadCore
import Persistence
import TestSupport
import Testing

/// Watches in every `JobStore`: a watch and its first check stored together, one owner per
/// destination, a check's settlement and the next check in one transaction, a change that finds
/// the watch moved on writes nothing (a throwing one undoes what came before it), watches left
/// without a live check are found, and a rescheduled check queues as a new arrival.
@Suite struct WatchesConformanceTests {
    func watch(_ id: String, destination: String = "feed.xml") throws -> Watch {
        let spec: [String: JSONValue] = ["url": .string("https://example.com/feed.xml"), "destination": .string(destination),
                                         "interval": .string("1m")]
        var watch = Watch(id: id, spec: spec, destination: try Destination.parse(destination).get(), createdAt: 1000)
        watch.checkID = "C" + id
        return watch
    }

    func check(of watch: Watch) throws -> Download {
        var job = makeDownload(try #require(watch.checkID), destination: watch.destination.path)
        job.watch = WatchLink(id: watch.id, etag: "\"v1\"", sha256: String(repeating: "a", count: 64))
        return job
    }

    @Test(arguments: StoreBackend.all) func aWatchAndItsCheckHoldTheDestination(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        let first = try watch("W1")
        #expect(try db.store.insertWatch(first, firstCheck: try check(of: first), idempotency: nil) == .created)
        #expect(try db.store.watch(id: "W1")?.checkID == "CW1")
        #expect(try db.store.download(id: "CW1")?.watch == (try check(of: first)).watch)
        // Another watch of the destination, or a job at it: the watch's live check holds it.
        let second = try watch("W2")
        #expect(try db.store.insertWatch(second, firstCheck: try check(of: second), idempotency: nil) == .destinationBusy)
        #expect(try db.store.insert(makeDownload("01X", destination: "feed.xml"), idempotency: nil) == .destinationBusy)
        // A watch whose destination a live job holds is not stored, nor its check.
        #expect(try db.store.insert(makeDownload("01Y", destination: "busy.xml"), idempotency: nil) == .created)
        let third = try watch("W3", destination: "busy.xml")
        #expect(try db.store.insertWatch(third, firstCheck: try check(of: third), idempotency: nil) == .destinationBusy)
        #expect(try db.store.watch(id: "W3") == nil)
        #expect(try db.store.download(id: "CW3") == nil)
        #expect(try db.store.watchCount() == 1)
    }

    @Test(arguments: StoreBackend.all) func anIdempotencyKeyReplaysTheWatch(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        let key = IdempotencyRecord(principal: "p", key: "k", bodySHA256: "b")
        let first = try watch("W1")
        #expect(try db.store.insertWatch(first, firstCheck: try check(of: first), idempotency: key) == .created)
        let again = try watch("W2", destination: "other.xml")
        guard case .replayed(let original) = try db.store.insertWatch(again, firstCheck: try check(of: again), idempotency: key) else {
            Issue.record("the key did not replay the watch")
            return
        }
        #expect(original.id == "W1")
        var other = key
        other.bodySHA256 = "c"
        #expect(try db.store.insertWatch(again, firstCheck: try check(of: again), idempotency: other) == .keyMismatch)
    }

    @Test(arguments: StoreBackend.all) func aChangeWritesTheWatchItsEventsAndTheNextCheck(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        let stored = try watch("W1")
        #expect(try db.store.insertWatch(stored, firstCheck: try check(of: stored), idempotency: nil) == .created)
        var done = try #require(try db.store.download(id: "CW1"))
        done.state = .completed
        done.finishedAt = 2000
        var next = makeDownload("CW1B", destination: "feed.xml")
        next.watch = WatchLink(id: "W1")
        next.runAt = 60_000
        let event = WebhookEvent(id: "msg_1", type: "watch.changed", payload: Array("{}".utf8), urls: ["https://hooks.example/"],
                                 session: "default")
        let results = try db.store.apply([
            .update(done, expecting: [.queued]),
            .watch(WatchChange(id: "W1", afterPrevious: true) { watch, checkState in
                #expect(checkState == .completed)
                var changed = watch
                changed.changes += 1
                changed.checkID = "CW1B"
                return WatchWrite(watch: changed, events: [event], newCheck: next, now: 2000)
            }),
        ])
        #expect(results == [true, true])
        let after = try #require(try db.store.watch(id: "W1"))
        #expect(after.changes == 1 && after.checkID == "CW1B" && after.revision == stored.revision + 2)
        #expect(try db.store.download(id: "CW1B")?.state == .queued)
        #expect(try db.store.dueDeliveries(now: 3000, limit: 10, excluding: []).map(\.type) == ["watch.changed"])

        // A change after one that did not apply writes nothing; so does one that returns nil.
        let skipped = try db.store.apply([
            .update(done, expecting: [.queued]),
            .watch(WatchChange(id: "W1", afterPrevious: true) { watch, _ in WatchWrite(watch: nil, now: 3000) }),
            .watch(WatchChange(id: "W1") { _, _ in nil }),
        ])
        #expect(skipped == [false, false, false])
        #expect(try db.store.watch(id: "W1") != nil)
    }

    /// A watch change that throws undoes the changes before it in the same `apply`: a client's
    /// transition of the check is not written without the watch's change.
    @Test(arguments: StoreBackend.all) func aWatchChangeThatThrowsUndoesTheCheckTransitionBeforeIt(_ backend: StoreBackend) throws {
        struct Moved: Error {}
        let db = try backend.scratch()
        let stored = try watch("W1")
        #expect(try db.store.insertWatch(stored, firstCheck: try check(of: stored), idempotency: nil) == .created)
        let revision = try #require(try db.store.watch(id: "W1")).revision
        var cancelled = try #require(try db.store.download(id: "CW1"))
        cancelled.state = .cancelled
        cancelled.finishedAt = 2000
        #expect(throws: Moved.self) {
            try db.store.apply([
                .update(cancelled, expecting: [.queued]),
                .watch(WatchChange(id: "W1", afterPrevious: true) { _, _ in throw Moved() }),
            ])
        }
        #expect(try db.store.download(id: "CW1")?.state == .queued)
        #expect(try db.store.watch(id: "W1")?.revision == revision)
    }

    @Test(arguments: StoreBackend.all) func aRescheduleMovesTheQueuedCheckAndWatchesWithoutACheckAreFound(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        let stored = try watch("W1")
        #expect(try db.store.insertWatch(stored, firstCheck: try check(of: stored), idempotency: nil) == .created)
        #expect(try db.store.apply([.watch(WatchChange(id: "W1") { watch, _ in
            WatchWrite(watch: watch, reschedule: ("CW1", 90_000), now: 2000)
        })]) == [true])
        let moved = try #require(try db.store.download(id: "CW1"))
        #expect(moved.runAt == 90_000 && moved.earliestBeginDate == 90_000)
        #expect(try db.store.watchesWithoutLiveCheck(limit: 10).isEmpty)

        var cancelled = moved
        cancelled.state = .cancelled
        cancelled.finishedAt = 3000
        #expect(try db.store.update(cancelled, expecting: [.queued]))
        #expect(try db.store.watchesWithoutLiveCheck(limit: 10) == ["W1"])
        #expect(try db.store.watches(limit: 10, cursor: nil).items.map(\.id) == ["W1"])
        #expect(try db.store.apply([.watch(WatchChange(id: "W1") { _, _ in WatchWrite(watch: nil, now: 4000) })]) == [true])
        #expect(try db.store.watch(id: "W1") == nil)
    }

    /// A check that goes back to wait for its next time (an unchanged one) queues as a job
    /// arriving then: behind a job queued after its first time, not ahead of it for ever.
    @Test(arguments: StoreBackend.all) func aRescheduledCheckQueuesBehindWhatCameAfterIt(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        let stored = try watch("W1")
        var check = try check(of: stored)
        #expect(try db.store.insertWatch(stored, firstCheck: check, idempotency: nil) == .created)
        #expect(try db.store.insert([NewJob(download: makeDownload("A1"), idempotency: nil)]).count == 1)
        check.state = .running
        #expect(try db.claim(check))

        var waiting = check
        waiting.state = .queued
        #expect(try db.store.apply([.update(waiting, expecting: [.running]), .watch(WatchChange(id: "W1") { watch, _ in
            WatchWrite(watch: watch, reschedule: ("CW1", 1000), now: 1000)
        })]) == [true, true])
        #expect(try db.candidates(now: 2000) == ["A1", "CW1"])
    }
}
