import DownloadCore
import Persistence
import TestSupport
import Testing

/// Uploads in every `JobStore`: their plan kept with the job, no destination held (any number of
/// them live at once), and each kind listed on its own.
@Suite struct UploadsConformanceTests {
    func upload(_ id: String) throws -> Download {
        var job = makeDownload(id, destination: "")
        job.upload = UploadPlan(source: try Destination.parse("exports/\(id).csv").get(), pin: SourcePin(size: 3, modifiedAt: 4))
        return job
    }

    @Test(arguments: StoreBackend.all) func uploadsHoldNoDestinationAndAreListedApart(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        #expect(try db.store.insert(makeDownload("01A"), idempotency: nil) == .created)
        #expect(try db.store.insert(try upload("01B"), idempotency: nil) == .created)
        #expect(try db.store.insert(try upload("01C"), idempotency: nil) == .created)
        #expect(try db.store.download(id: "01B")?.upload == (try upload("01B")).upload)

        #expect(try db.store.list(kind: .download, state: nil, session: nil, limit: 10, cursor: nil).items.map(\.id) == ["01A"])
        let uploads = try db.store.list(kind: .upload, state: .queued, session: nil, limit: 1, cursor: nil)
        #expect(uploads.items.map(\.id) == ["01C"])
        #expect(try db.store.list(kind: .upload, state: .queued, session: nil, limit: 1, cursor: uploads.nextCursor).items.map(\.id) == ["01B"])
    }

    @Test(arguments: StoreBackend.all) func uploadsRunSideBySide(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        var first = try upload("01B"), second = try upload("01C")
        #expect(try db.store.insert(first, idempotency: nil) == .created)
        #expect(try db.store.insert(second, idempotency: nil) == .created)
        first.state = .running
        second.state = .running
        #expect(try db.claim(first))
        #expect(try db.claim(second))
        #expect(try db.store.download(id: "01C")?.state == .running)
    }

    @Test(arguments: StoreBackend.all) func uploadsAreCountedByStateApart(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        #expect(try db.store.insert(makeDownload("01A"), idempotency: nil) == .created)
        #expect(try db.store.insert(try upload("01B"), idempotency: nil) == .created)
        var running = try upload("01C")
        #expect(try db.store.insert(running, idempotency: nil) == .created)
        running.state = .running
        #expect(try db.claim(running))
        let counts = try db.store.uploadCounts()
        #expect(counts[.queued] == 1 && counts[.running] == 1 && counts[.completed] == 0 && counts.count == DownloadState.allCases.count)
        #expect(try db.store.counts(session: nil)[.queued] == 2)
    }
}
