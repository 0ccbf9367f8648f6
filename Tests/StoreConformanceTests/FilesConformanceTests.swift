import DownloadCore
import Persistence
import TestSupport
import Testing

/// The fields of files and checksums on every backend: stored, read back, written with a state
/// change; and directory destinations, which any number of live jobs share.
@Suite struct FilesConformanceTests {
    @Test(arguments: StoreBackend.all) func theFileFieldsRoundTripAndThePathIsWrittenWithTheCompletion(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        var download = makeDownload("01A", destination: "inbox/")
        download.checksum = Checksum(algorithm: .sha512, hex: String(repeating: "c", count: 128))
        download.checksumURL = "https://example.com/SHA512SUMS"
        download.renameOnConflict = true
        download.resourceTimeout = "90s"
        #expect(download.path == nil)
        #expect(try db.store.insert(download, idempotency: nil) == .created)
        #expect(try db.store.download(id: "01A") == download)

        var done = try db.claimQueued("01A")
        done.state = .completed
        done.finishedAt = 5
        done.path = "inbox/report (1).pdf"
        #expect(try db.store.update(done, expecting: [.running]))
        let read = try #require(try db.store.download(id: "01A"))
        #expect(read.path == "inbox/report (1).pdf" && read.checksum == download.checksum && read.renameOnConflict)
    }

    @Test(arguments: StoreBackend.all) func liveJobsShareADirectoryDestinationAndComeBackTogether(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        for id in ["01A", "01B"] {
            let download = makeDownload(id, destination: "inbox/", session: "s")
            #expect(try db.store.insert(download, idempotency: nil) == .created)
        }
        // A named file under the directory is a destination of its own, still with one owner.
        _ = try db.store.insert(makeDownload("01C", destination: "inbox/a.bin"), idempotency: nil)
        #expect(try db.store.insert(makeDownload("01D", destination: "inbox/a.bin"), idempotency: nil) == .destinationBusy)

        for id in ["01A", "01B"] { _ = try db.failQueued(id) }
        let retried = try db.store.act(SessionAction(kind: .retry, session: "s", state: nil, now: 10, events: { _ in [] },
                                                     sessionFinished: { _ in [] }))
        #expect(Set(retried.changed) == ["01A", "01B"])
    }
}
