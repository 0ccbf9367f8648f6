import CSQLite
import DownloadCore
import Persistence
@testable import SQLiteStore
import TestSupport
import Testing

/// Retention also drops sessions' fair-queueing rows, but only those that no longer decide any
/// job's tag: without it every session name ever used stays in the database.
@Suite struct SessionPruningTests {
    struct SQLiteFailure: Error { let code: Int32 }

    /// One integer, read on a connection of its own: the store does not expose these columns.
    func integer(_ db: TemporaryStore, _ sql: String) throws -> Int64? {
        var handle: OpaquePointer?
        defer { sqlite3_close(handle) }
        let opened = sqlite3_open(db.path, &handle)
        guard opened == SQLITE_OK else { throw SQLiteFailure(code: opened) }
        var statement: OpaquePointer?
        defer { sqlite3_finalize(statement) }
        let prepared = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard prepared == SQLITE_OK else { throw SQLiteFailure(code: prepared) }
        return sqlite3_step(statement) == SQLITE_ROW ? sqlite3_column_int64(statement, 0) : nil
    }

    func fairTag(_ db: TemporaryStore, _ id: String) throws -> Int64? {
        try integer(db, "SELECT fair_tag FROM downloads WHERE id = '\(id)'")
    }

    func sessionRow(_ db: TemporaryStore, _ name: String) throws -> Int64? {
        try integer(db, "SELECT last_tag FROM sessions WHERE name = '\(name)'")
    }

    func insert(_ db: TemporaryStore, _ id: String, session: String) throws {
        _ = try db.store.insert(makeDownload(id, session: session), idempotency: nil)
    }

    /// Claiming a job moves the virtual time up to its tag.
    func start(_ db: TemporaryStore, _ id: String) throws {
        var job = try #require(try db.store.download(id: id))
        job.state = .running
        #expect(try db.store.claim(job))
    }

    @Test func onlyRowsTheVirtualTimeHasPassedGoAndTagsStayTheSame() throws {
        let db = try TemporaryStore()
        try insert(db, "01A", session: "done")            // tag 1
        try start(db, "01A")                               // virtual time 1
        try insert(db, "01B1", session: "ahead")           // tag 2
        try insert(db, "01B2", session: "ahead")           // tag 3: its own backlog comes first
        #expect(try db.store.prune(finishedBefore: 0, settledBefore: 0, keysBefore: 0) == Pruned(sessions: 1))
        #expect(try sessionRow(db, "done") == nil)
        #expect(try sessionRow(db, "ahead") == 3)

        // The pruned session's next job gets the tag its row would have given: max(1, 1) + 1.
        try insert(db, "01C", session: "done")
        #expect(try fairTag(db, "01C") == 2)
        // The kept row still orders the session behind its backlog: max(3, 1) + 1, not 2.
        try insert(db, "01B3", session: "ahead")
        #expect(try fairTag(db, "01B3") == 4)
        // Both rows are now ahead of the virtual time, so both stay.
        #expect(try db.store.prune(finishedBefore: 0, settledBefore: 0, keysBefore: 0).sessions == 0)
    }

    @Test func sessionsFinishedLongAgoAreAllPrunedInBatches() throws {
        let db = try TemporaryStore()
        let count = 2_500  // more than one batch
        // Each is its session's first job at virtual time 0: every row holds tag 1.
        for i in 0..<count { try insert(db, "01S\(i)", session: "s\(i)") }
        try start(db, "01S0")  // virtual time 1: every row is spent
        #expect(try db.store.prune(finishedBefore: 0, settledBefore: 0, keysBefore: 0).sessions == count)
        #expect(try integer(db, "SELECT COUNT(*) FROM sessions") == 0)
    }
}
