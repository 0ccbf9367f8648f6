import DownloadCore
@testable import DownloadService
import Foundation
import TestSupport
import Testing

/// The start after a crash: what was running when fetchd stopped, and partial files left behind.
@Suite struct RecoveryTests {
    func recover(_ fixture: ServiceFixture) throws {
        try fixture.recovery.run(now: fixture.clock.now)
    }

    /// Crashed after the finished file was linked into place and before the completion was committed.
    @Test func aPlacedButUncommittedCompletionIsCommitted() throws {
        let fixture = try ServiceFixture()
        try fixture.submit("j1")
        _ = try fixture.claim("j1")
        let body = Array("finished before the crash\n".utf8)
        let digest = try fixture.writePartial("j1", body)
        try FileManager.default.createDirectory(atPath: fixture.files.root + "/files", withIntermediateDirectories: true)
        try FileManager.default.linkItem(atPath: fixture.partials.path("j1"), toPath: fixture.files.root + "/files/j1")

        fixture.clock.advance(by: .seconds(30))
        try recover(fixture)

        let done = try fixture.job("j1")
        #expect(done.state == .completed)
        #expect(done.sha256 == digest)
        #expect(done.bytesReceived == Int64(body.count))
        #expect(done.finishedAt == fixture.clock.now)
        #expect(fixture.destinationBytes("files/j1") == body)
        #expect(!fixture.partialExists("j1"))
        #expect(try fixture.webhooksDue() == ["download.completed"])
    }

    /// The same for a directory destination (or a rename): the file went under a name chosen at
    /// placement, found again as the directory's entry that is the partial file.
    @Test func aPlacedCompletionUnderAChosenNameIsCommittedWithItsPath() throws {
        let fixture = try ServiceFixture()
        let url = "http://origin.example/j1"
        let job = NewDownload(url: url, parsedURL: try HTTPURL.parse(url).get(), destination: try Destination.parse("inbox/").get())
            .makeDownload(id: "j1", now: fixture.clock.now)
        #expect(try fixture.store.insert(job, idempotency: nil) == .created)
        _ = try fixture.claim("j1")
        let body = Array("named by the origin\n".utf8)
        try fixture.writePartial("j1", body)
        try FileManager.default.createDirectory(atPath: fixture.files.root + "/inbox", withIntermediateDirectories: true)
        try Data("someone else's".utf8).write(to: URL(fileURLWithPath: fixture.files.root + "/inbox/other.pdf"))
        try FileManager.default.linkItem(atPath: fixture.partials.path("j1"), toPath: fixture.files.root + "/inbox/report.pdf")

        try recover(fixture)

        let done = try fixture.job("j1")
        #expect(done.state == .completed && done.path == "inbox/report.pdf")
        #expect(fixture.destinationBytes("inbox/report.pdf") == body)
        #expect(!fixture.partialExists("j1"))
    }

    /// A watch's check placed before the crash: its watch records the change, `watch.changed` is
    /// sent (not `download.completed`: a check speaks through its watch) and the next check made.
    @Test func aPlacedCheckIsCommittedThroughItsWatch() throws {
        let fixture = try ServiceFixture()
        let spec: [String: JSONValue] = ["url": .string("http://origin.example/feed"), "destination": .string("feed.xml"),
                                         "interval": .string("1h")]
        var watch = Watch(id: "w1", spec: spec, destination: try Destination.parse("feed.xml").get(), createdAt: fixture.clock.now)
        watch.revision = 1
        var check = try #require(WatchChecks.check(of: watch, id: "c1", runAt: fixture.clock.now, now: fixture.clock.now))
        watch.checkID = check.id
        check.overwrite = true
        #expect(try fixture.store.insertWatch(watch, firstCheck: check, idempotency: nil) == .created)
        _ = try fixture.claim("c1")
        let digest = try fixture.writePartial("c1", Array("<feed/>\n".utf8))
        try FileManager.default.linkItem(atPath: fixture.partials.path("c1"), toPath: fixture.files.root + "/feed.xml")

        try recover(fixture)

        #expect(try fixture.job("c1").state == .completed)
        let recorded = try #require(try fixture.store.watch(id: "w1"))
        #expect(recorded.changes == 1 && recorded.lastResult == .changed && recorded.sha256 == digest)
        let next = try #require(recorded.checkID)
        #expect(next != "c1")
        #expect(try fixture.job(next).state == .queued)
        #expect(try fixture.webhooksDue() == ["watch.changed"])
    }

    /// Stopped after an upload's completion committed and before its `deleteSource` removed the
    /// source: the partial file that marks the removal as left to do is found, and the source
    /// removed — if it is still the file sent.
    @Test(arguments: [false, true])
    func aCompletedUploadsSourceLeftBehindIsRemovedAtStart(_ changedAfterwards: Bool) throws {
        let fixture = try ServiceFixture()
        let sourcePath = try completedUploadWithItsSourceLeft(fixture)
        if changedAfterwards {
            #expect(FileManager.default.createFile(atPath: sourcePath, contents: Data("id\n2\n3\n".utf8)))
        }

        try recover(fixture)

        #expect(FileManager.default.fileExists(atPath: sourcePath) == changedAfterwards)
        #expect(!fixture.partialExists("up1"))
        #expect(try fixture.job("up1").state == .completed)
    }

    /// The same left by a node that never starts again: another node's housekeeper removes the
    /// source once the node would have been taken for dead, and not before (it may be about to).
    @Test func aCompletedUploadsSourceLeftBehindIsRemovedByTheHousekeeperOnceItsNodeIsDead() throws {
        let fixture = try ServiceFixture()
        let sourcePath = try completedUploadWithItsSourceLeft(fixture)
        let housekeeper = Housekeeper(store: fixture.store, retention: .seconds(3600), partials: fixture.partials,
                                      sources: UploadSources(root: fixture.directory + "/uploads"), clock: fixture.clock.clock,
                                      logger: ServiceFixture.quiet)
        defer { housekeeper.stop() }
        let pass = { housekeeper.queue.sync { housekeeper.run() } }

        fixture.clock.advance(by: .seconds(10))
        pass()
        #expect(FileManager.default.fileExists(atPath: sourcePath) && fixture.partialExists("up1"))

        fixture.clock.advance(by: .seconds(30))
        pass()
        #expect(!FileManager.default.fileExists(atPath: sourcePath) && !fixture.partialExists("up1"))
        #expect(try fixture.job("up1").state == .completed)
    }

    /// An upload with `deleteSource`, committed as completed, its source still there beside the
    /// partial file that marks the removal as left to do. Returns the source's path.
    private func completedUploadWithItsSourceLeft(_ fixture: ServiceFixture) throws -> String {
        let sourcePath = fixture.directory + "/uploads/a.csv"
        try FileManager.default.createDirectory(atPath: fixture.directory + "/uploads", withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: sourcePath, contents: Data("id\n1\n".utf8)))
        let source = try Destination.parse("a.csv").get()
        var job = makeDownload("up1")
        job.upload = UploadPlan(source: source, method: .put, deleteSource: true,
                                pin: try UploadSources(root: fixture.directory + "/uploads").pin(source).get())
        job.state = .completed
        job.finishedAt = fixture.clock.now
        #expect(try fixture.store.insert(job, idempotency: nil) == .created)
        #expect(fixture.partials.mark("up1"))
        return sourcePath
    }

    /// A client paused or cancelled the job while its completion, placed, waited to commit; the
    /// stop came before the refused commit took the file back out. The start does: a paused job
    /// keeps its partial data, a cancelled one loses it; the housekeeper alone leaves both.
    @Test(arguments: [DownloadState.paused, .cancelled])
    func aPlacedCompletionARefusedCommitLeftIsTakenBackOut(_ state: DownloadState) throws {
        let fixture = try ServiceFixture()
        try fixture.submit("j1")
        var job = try fixture.claim("j1")
        try fixture.writePartial("j1", Array("placed, never committed\n".utf8))
        try FileManager.default.createDirectory(atPath: fixture.files.root + "/files", withIntermediateDirectories: true)
        try FileManager.default.linkItem(atPath: fixture.partials.path("j1"), toPath: fixture.files.root + "/files/j1")
        job.state = state
        #expect(try fixture.store.update(job, expecting: [.running]))

        try PartialFiles.removeUnkept(fixture.partials, store: fixture.store)
        #expect(fixture.partialExists("j1") && fixture.destinationBytes("files/j1") != nil)

        try recover(fixture)

        #expect(fixture.destinationBytes("files/j1") == nil)
        #expect(fixture.partialExists("j1") == (state == .paused))
        #expect(try fixture.job("j1").state == state)
    }

    @Test func anInterruptedTransferIsQueuedWithWhatItsFileHolds() throws {
        let fixture = try ServiceFixture()
        try fixture.submit("j1")
        _ = try fixture.claim("j1")
        try fixture.writePartial("j1", Array("half".utf8))

        fixture.clock.advance(by: .seconds(30))
        try recover(fixture)

        let queued = try fixture.job("j1")
        #expect(queued.state == .queued)
        #expect(queued.bytesReceived == 4)
        #expect(queued.runAt == fixture.clock.now)
        // The attempt the crash cut is not counted against the retry budget.
        #expect(queued.attempts == 1 && queued.outageAttempts == 1)
        #expect(fixture.partialExists("j1"))
        #expect(fixture.destinationBytes("files/j1") == nil)
        #expect(try fixture.webhooksDue() == [])
    }

    /// Partial files of no job or of a completed or cancelled one go; those of jobs that may still
    /// resume stay — a failed job's too, for `POST /downloads/{id}/retry` (failing removes the
    /// data a retry could not use before it commits).
    @Test func partialFilesNoLiveJobOwnsAreRemoved() throws {
        let fixture = try ServiceFixture()
        for id in ["queued", "paused", "failed"] { try fixture.submit(id) }
        for (id, state) in [("paused", DownloadState.paused), ("failed", .failed)] {
            var job = try fixture.job(id)
            job.state = state
            #expect(try fixture.store.update(job, expecting: [.queued]))
        }
        for id in ["queued", "paused", "failed", "orphan"] { try fixture.writePartial(id, [1, 2, 3]) }

        try recover(fixture)

        #expect(fixture.partials.ids().sorted() == ["failed", "paused", "queued"])
    }
}
