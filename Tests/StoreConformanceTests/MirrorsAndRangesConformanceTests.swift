import DownloadCore
import Persistence
import TestSupport
import Testing

/// What every `JobStore` must keep for mirrors and segmented downloads: the fields round-trip,
/// a job's ranges are saved with its progress, the mirrors and the cap are the client's (a PATCH
/// changes them, a state change does not undo it), and each attempt keeps its URL.
@Suite struct MirrorsAndRangesConformanceTests {
    @Test(arguments: StoreBackend.all) func theFieldsRoundTrip(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        var download = makeDownload("01A")
        download.mirrors = ["http://mirror.example/a", "https://other.example/b"]
        download.connections = 8
        download.maxBytesPerSecond = 65536
        download.mirrorIndex = 2
        download.mirrorMisses = 1
        download.ranges = [RangeProgress(start: 0, end: 10, next: 4), RangeProgress(start: 10, end: 20, next: 20)]
        _ = try db.store.insert(download, idempotency: nil)
        #expect(try db.store.download(id: "01A") == download)
    }

    @Test(arguments: StoreBackend.all) func rangesAreSavedWithProgressAndByStateChanges(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        _ = try db.store.insert(makeDownload("01A"), idempotency: nil)
        var running = try db.claimQueued("01A")
        let ranges = [RangeProgress(start: 0, end: 50, next: 30), RangeProgress(start: 50, end: 100, next: 60)]
        _ = try db.store.apply([.ranges(id: "01A", ranges: ranges, bytesReceived: 40, bytesExpected: 100, validator: "\"v\"")])
        var stored = try #require(try db.store.download(id: "01A"))
        #expect(stored.ranges == ranges && stored.bytesReceived == 40 && stored.bytesExpectedFromOrigin == 100)
        #expect(stored.validator == "\"v\"")

        running.ranges = []
        running.mirrorIndex = 1
        running.state = .queued
        let attempt = AttemptRecord(number: 1, startedAt: 1, endedAt: 2, outcome: "retry", error: nil, httpStatus: 503,
                                    bytesTransferred: 40, bytesOnDisk: 40, url: "http://mirror.example/a")
        #expect(try db.store.apply([.update(running, expecting: [.running], attempt: attempt)]) == [true])
        stored = try #require(try db.store.download(id: "01A"))
        #expect(stored.ranges.isEmpty && stored.mirrorIndex == 1)
        #expect(try db.store.attempts(of: "01A").map(\.url) == ["http://mirror.example/a"])
    }

    /// A client's pause read before the attempt saved its ranges is refused, not written over them;
    /// read again, it keeps them.
    @Test(arguments: StoreBackend.all) func aTransitionFromACopyOlderThanTheRangesIsRefused(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        _ = try db.store.insert(makeDownload("01A"), idempotency: nil)
        _ = try db.claimQueued("01A")
        let readBefore = try #require(try db.store.download(id: "01A"))
        let ranges = [RangeProgress(start: 0, end: 50, next: 30), RangeProgress(start: 50, end: 100, next: 60)]
        _ = try db.store.apply([.ranges(id: "01A", ranges: ranges, bytesReceived: 40, bytesExpected: 100, validator: "\"v\"")])
        #expect(try db.store.download(id: "01A")?.revision == readBefore.revision + 1)

        var paused = readBefore
        paused.state = .paused
        #expect(try !db.store.update(paused, expecting: [.running], unchangedSince: readBefore.revision))
        var stored = try #require(try db.store.download(id: "01A"))
        #expect(stored.state == .running && stored.ranges == ranges)

        paused = stored
        paused.state = .paused
        #expect(try db.store.update(paused, expecting: [.running], unchangedSince: stored.revision))
        stored = try #require(try db.store.download(id: "01A"))
        #expect(stored.state == .paused && stored.ranges == ranges && stored.bytesReceived == 40 && stored.validator == "\"v\"")
        #expect(stored.revision == paused.revision + 1)
    }

    /// The same for a transition that ends the job (a cancel), which the stores may write together
    /// with other jobs that end.
    @Test(arguments: StoreBackend.all) func anEndingTransitionFromAnOlderCopyIsRefused(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        _ = try db.store.insert(makeDownload("01A"), idempotency: nil)
        _ = try db.claimQueued("01A")
        var cancelled = try #require(try db.store.download(id: "01A"))
        _ = try db.store.apply([.progress(id: "01A", bytesReceived: 40, bytesExpected: 100, validator: nil)])
        #expect(try db.store.download(id: "01A")?.revision == cancelled.revision + 1)
        cancelled.state = .cancelled
        #expect(try db.store.apply([.update(cancelled, expecting: [.running], unchangedSince: cancelled.revision)]) == [false])
        #expect(try db.store.download(id: "01A")?.state == .running)
    }

    @Test(arguments: StoreBackend.all) func mirrorsAndTheCapAreTheClients(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        _ = try db.store.insert(makeDownload("01A"), idempotency: nil)
        let running = try db.claimQueued("01A")
        var patched = try #require(try db.store.download(id: "01A"))
        patched.mirrors = ["http://mirror.example/a"]
        patched.maxBytesPerSecond = 4096
        _ = try #require(try db.store.change(patched, expectingRevision: patched.revision))
        var settled = running  // the scheduler's older copy, without the client's change
        settled.state = .queued
        #expect(try db.store.update(settled, expecting: [.running]))
        let stored = try #require(try db.store.download(id: "01A"))
        #expect(stored.mirrors == ["http://mirror.example/a"] && stored.maxBytesPerSecond == 4096)
    }
}
