import DownloadCore
import Persistence
import TestSupport
import Testing

/// Every column of the downloads table (`DownloadTable`) on every backend: written at insert and
/// read back; a state change writes the state's columns and leaves the client's; a client's change
/// writes the client's and leaves the state's; a row that cannot be read is an error naming the column.
@Suite struct ColumnTableConformanceTests {
    @Test(arguments: StoreBackend.all) func everyColumnRoundTripsThroughInsertAndBothKindsOfChange(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        let inserted = everyFieldSet("01A", variant: 1)
        #expect(try db.store.insert(inserted, idempotency: nil) == .created)
        var stored = try #require(try db.store.download(id: "01A"))
        expectColumns(of: stored, as: inserted, "insert")

        // Every column written anew, the client's too: a state change writes only the state's
        // (not the attempt's own, the object upload).
        let stateChange = everyFieldSet("01A", variant: 2, state: .paused)
        expectEveryColumnDiffers(stateChange, from: stored)
        #expect(try db.store.update(stateChange, expecting: [.queued]))
        let afterStateChange = try #require(try db.store.download(id: "01A"))
        expectColumns(of: afterStateChange, as: try mixing(client: stored, others: stateChange, alsoKeeping: [.attempt]),
                      revision: stored.revision + 1, "state change")
        stored = afterStateChange

        // The attempt's own column by its own change, in the states it names only.
        let upload = try #require(stateChange.objectUpload)
        #expect(try db.store.apply([.objectUpload(id: "01A", upload: upload, expecting: [.running])]) == [false])
        #expect(try db.store.apply([.objectUpload(id: "01A", upload: upload, expecting: [.paused])]) == [true])
        let afterUpload = try #require(try db.store.download(id: "01A"))
        #expect(afterUpload.objectUpload == upload && afterUpload.revision == stored.revision + 1)
        stored = afterUpload

        // The client's columns and every other anew: a client's change writes only the client's
        // (and, as `JobStore.change` says, `awaitingURLSince`, kept here as stored; a paused job's
        // `runAt` stays).
        var clientChange = try mixing(client: everyFieldSet("01A", variant: 2), others: everyFieldSet("01A", variant: 3, state: .queued))
        clientChange.awaitingURLSince = stored.awaitingURLSince
        expectEveryColumnDiffers(clientChange, from: stored, but: ["awaiting_url_since"])
        let changed = try #require(try db.store.change(clientChange, expectingRevision: stored.revision))
        #expect(try db.store.download(id: "01A") == changed)
        expectColumns(of: changed, as: try mixing(client: clientChange, others: stored), revision: stored.revision + 1, "client change")
    }

    /// A batch takes another way into the table on each backend (many rows to a statement).
    @Test(arguments: StoreBackend.all) func everyColumnRoundTripsThroughABatch(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        let jobs = (0..<60).map { everyFieldSet(String(format: "01B%02d", $0), variant: 1 + $0 % 3) }
        #expect(try db.store.insert(jobs.map { NewJob(download: $0, idempotency: nil) }).allSatisfy { $0 == .created })
        for job in jobs {
            expectColumns(of: try #require(try db.store.download(id: job.id)), as: job, "batch")
        }
    }

    /// What the store never writes, stored behind its back: reading the job is a store error that
    /// names the job and the column, never the job read as something else (an unknown state as
    /// `failed`, ranges as none).
    @Test(arguments: StoreBackend.all) func anUnreadableRowIsAStoreErrorNamingTheColumn(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        let corruptions = [
            ("state", "'exploded'"), ("checksum", "'md5:not-hex'"), ("headers", "'not json'"), ("mirrors", "'[\"a\", 1]'"),
            ("ranges", "'9-1-5'"), ("object_upload", "'key only'"),
        ]
        for (index, (column, value)) in corruptions.enumerated() {
            let id = "01C\(index)"
            _ = try db.store.insert(makeDownload(id), idempotency: nil)
            try db.tamper("UPDATE downloads SET \(column) = \(value) WHERE id = '\(id)'")
            #expect {
                try db.store.download(id: id)
            } throws: { error in
                (error as? UnreadableJob).map { $0.id == id && $0.column == column } ?? false
            }
        }
        #expect(throws: UnreadableJob.self) { try db.store.list(kind: .download, state: nil, session: nil, limit: 10, cursor: nil) }
    }

    /// Each column of `stored` as it is in `expected`, the revision as the store moved it.
    private func expectColumns(of stored: Download, as expected: Download, revision: Int64 = 0, _ step: String,
                               sourceLocation: SourceLocation = #_sourceLocation) {
        var expected = expected
        expected.revision = revision
        let storedValues = columnValues(stored), expectedValues = columnValues(expected)
        for (index, column) in DownloadTable.columns.enumerated() {
            #expect(storedValues[index] == expectedValues[index], "\(step): \(column.name)", sourceLocation: sourceLocation)
        }
        #expect(stored == expected, "\(step)", sourceLocation: sourceLocation)
    }

    /// Every column but the key, the revision and `except` differs: so a column the change writes,
    /// or leaves, shows.
    private func expectEveryColumnDiffers(_ job: Download, from stored: Download, but except: Set<String> = [],
                                          sourceLocation: SourceLocation = #_sourceLocation) {
        let jobValues = columnValues(job), storedValues = columnValues(stored)
        for (index, column) in DownloadTable.columns.enumerated() where column.owner != .key && column.owner != .store {
            guard !except.contains(column.name) else { continue }
            #expect(jobValues[index] != storedValues[index], "\(column.name) must differ to be seen", sourceLocation: sourceLocation)
        }
    }
}
