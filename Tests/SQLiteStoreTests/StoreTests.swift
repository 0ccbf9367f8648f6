import CSQLite
import DownloadCore
import Foundation
import Persistence
@testable import SQLiteStore
import Synchronization
import TestSupport
import Testing

/// A store in a fresh temporary directory, removed afterwards.
final class TemporaryStore {
    let directory: String
    let path: String
    let store: SQLiteStore

    /// `statePayload`: the event log's encoder (none: the minimal payload).
    init(statePayload: (@Sendable (Download) -> [UInt8])? = nil) throws {
        directory = try temporaryDirectory()
        path = directory + "/fetchd.sqlite"
        store = try SQLiteStore(path: path, statePayload: statePayload)
    }

    deinit {
        store.close()
        try? FileManager.default.removeItem(atPath: directory)
    }
}


/// A new empty directory under the system's temporary one (the caller removes it).
func temporaryDirectory() throws -> String {
    let directory = NSTemporaryDirectory() + "fetchd-store-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    return directory
}

/// A connection to a new database at `path` as a fetchd of schema `version` left it.
func database(at path: String, version: Int) throws -> SQLiteConnection {
    let old = try SQLiteConnection(path: path)
    try old.execute("CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (\(version))")
    for migration in Migrations.all.prefix(version) { try old.execute(migration) }
    return old
}

/// Inserts `job` into a database of an older version: the columns its table has at that version.
func insert(_ job: Download, intoOld db: SQLiteConnection) throws {
    let existing = Set(try db.prepare("SELECT name FROM pragma_table_info('downloads')").query { $0.string(0) })
    let columns = zip(DownloadTable.insertColumns.names, DownloadColumns.values(job)).filter { existing.contains($0.0) }
    try db.prepare("INSERT INTO downloads (\(columns.map(\.0).joined(separator: ", "))) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))")
        .run(columns.map(\.1))
}

/// The claim step's parts, one at a time, for tests of the queue's SQL.
extension SQLiteStore {
    func promote(now: Int64, agedBefore: Int64) throws {
        try withConnection { db in try db.transaction { try Self.promote(db, now: now, agedBefore: agedBefore) } }
    }

    /// Every due job the walk offers, or the first `taking` of them (the walk stops there).
    func dueJobs(lane: Lane, excludingHosts: [String], limit: Int, taking: Int = .max) throws -> [Download] {
        var offered: [Download] = []
        try withConnection { db in
            try Self.dueJobs(db, lane: lane, excludingHosts: excludingHosts, limit: limit) { job in
                offered.append(job)
                return offered.count < taking
            }
        }
        return offered
    }

    func nextQueueChange(after now: Int64, agingDelay: Int64) throws -> Int64? {
        try withConnection { db in try Self.nextQueueChange(db, after: now, agingDelay: agingDelay) }
    }

    func claim(_ job: Download) throws -> Bool {
        try withConnection { db in try db.transaction { try self.claim(db, [job], readAs: [:]).count == 1 } }
    }
}

/// What only the SQLite backend has: its schema's checks and its migrations.
@Suite struct SQLiteStoreTests {
    /// Migration 18 on a database of 17: live jobs keep their destinations, a finished job's is
    /// free, the counts go on, and the log's rows from before read back as they were.
    @Test func migration18KeepsTheLiveDestinationsCountsAndLog() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/fetchd.sqlite"
        let old = try database(at: path, version: 17)
        var done = makeDownload("01B", destination: "done")
        done.state = .completed
        done.finishedAt = 1
        for job in [makeDownload("01A", destination: "live"), done, makeDownload("01C", destination: "shared/")] {
            try insert(job, intoOld: old)
        }
        try old.execute("INSERT INTO event_log (session, download_id, created_at, payload) VALUES ('default', '01A', 1, '{\"id\":\"01A\"}')")
        old.close()

        let store = try SQLiteStore(path: path)
        defer { store.close() }
        let outcomes = try store.insert(["live", "done", "shared/"].enumerated().map {
            NewJob(download: makeDownload("01D\($0.offset)", destination: $0.element), idempotency: nil)
        })
        #expect(outcomes.map { if case .created = $0 { "created" } else { "\($0)" } } == ["destinationBusy", "created", "created"])
        #expect(try store.counts()[.queued] == 4 && store.counts()[.completed] == 1)
        let logged = try store.loggedEvents(after: 0, session: nil, limit: 10)
        #expect(logged.first == LoggedEvent(sequence: 1, downloadID: "01A", session: "default", payload: Array(#"{"id":"01A"}"#.utf8)))
        #expect(logged.dropFirst().map(\.downloadID) == ["01D1", "01D2"])

        // A write that ends or restarts a job's life without naming the column still frees or takes its destination.
        var handle: OpaquePointer?
        #expect(sqlite3_open(path, &handle) == SQLITE_OK)
        defer { sqlite3_close(handle) }
        #expect(sqlite3_exec(handle, "UPDATE downloads SET state = 'completed' WHERE id = '01A'", nil, nil, nil) == SQLITE_OK)
        #expect(sqlite3_exec(handle, "UPDATE downloads SET state = 'paused' WHERE id = '01D1'", nil, nil, nil) == SQLITE_OK)
        let after = try store.insert(["live", "done"].enumerated().map {
            NewJob(download: makeDownload("01E\($0.offset)", destination: $0.element), idempotency: nil)
        })
        #expect(after.map { if case .created = $0 { "created" } else { "\($0)" } } == ["created", "destinationBusy"])
        #expect(sqlite3_exec(handle, "UPDATE downloads SET state = 'queued' WHERE id = '01A'", nil, nil, nil) == SQLITE_CONSTRAINT)
    }

    @Test func theStateColumnRejectsUnknownStates() throws {
        let db = try TemporaryStore()
        _ = try db.store.insert(makeDownload("01A"), idempotency: nil)
        var handle: OpaquePointer?
        #expect(sqlite3_open(db.path, &handle) == SQLITE_OK)
        defer { sqlite3_close(handle) }
        #expect(sqlite3_exec(handle, "UPDATE downloads SET state = 'exploded'", nil, nil, nil) == SQLITE_CONSTRAINT)
    }

    /// SQLite checks a constant IN list of three or more values through a temporary b-tree that it
    /// builds on every execution of a statement writing the row (migrations 17 and 20): neither the
    /// partial indexes nor the state column's CHECK may do so when a job is inserted.
    @Test func insertingAJobBuildsNoTemporaryTree() throws {
        let db = try TemporaryStore()
        let opcodes = try db.store.withConnection { connection in
            try connection.prepare("EXPLAIN INSERT INTO downloads (\(DownloadColumns.insertList)) VALUES (\(DownloadColumns.placeholders))")
                .query(Array(repeating: SQLValue.null, count: DownloadTable.insertColumns.indices.count)) { $0.string(1) }
        }
        #expect(opcodes.contains("IdxInsert"))
        #expect(!opcodes.contains("OpenEphemeral"))
    }

    /// A batch is inserted many rows to a statement; a run with a destination already live (in the
    /// store or earlier in the batch) is inserted one job at a time: only those jobs are refused,
    /// and every other is stored, counted and logged, in order.
    @Test func aBatchRefusesOnlyTheJobsWhoseDestinationIsBusy() throws {
        let db = try TemporaryStore()
        _ = try db.store.insert(makeDownload("00A", destination: "taken"), idempotency: nil)
        let total = 2 * SQLiteStore.rowsPerInsert + 7
        let destinations = (0..<total).map { index in
            switch index {
            case 3: "taken"
            case SQLiteStore.rowsPerInsert + 1: "twice"
            case SQLiteStore.rowsPerInsert + 2: "twice"
            default: "files/\(index)"
            }
        }
        let jobs = destinations.enumerated().map { index, destination in
            NewJob(download: makeDownload(String(format: "01%04d", index), destination: destination), idempotency: nil)
        }
        let outcomes = try db.store.insert(jobs)
        let busy = outcomes.indices.filter { if case .destinationBusy = outcomes[$0] { true } else { false } }
        #expect(busy == [3, SQLiteStore.rowsPerInsert + 2])
        #expect(outcomes.count == total && outcomes.allSatisfy { if case .created = $0 { true } else if case .destinationBusy = $0 { true } else { false } })
        #expect(try db.store.counts()[.queued] == 1 + total - 2)
        #expect(try db.store.download(id: "01\(String(format: "%04d", SQLiteStore.rowsPerInsert + 1))")?.destination.path == "twice")
        let logged = try db.store.loggedEvents(after: 0, session: nil, limit: 1000).map(\.downloadID)
        #expect(logged == ["00A"] + jobs.map(\.download.id).enumerated().filter { !busy.contains($0.offset) }.map(\.element))
    }

    /// A new job's event is logged as its row's snapshot (built by the insert, not by SQLite): it
    /// reads back as the Download inserted, every field, whatever its text holds.
    @Test func anInsertedJobsLoggedSnapshotReadsBackAsTheJob() throws {
        // Every field of the Download, so that the test sees any one the snapshot loses.
        let db = try TemporaryStore(statePayload: { Array(String(reflecting: $0).utf8) })
        let store = db.store
        var odd = makeDownload("01A", session: "s", priority: 0.375)
        odd.headers = [OriginHeader(name: "X-Tab", value: "a\tb")]
        odd.metadata = #"{"é":"\"\u0002 😀 \\","n":[-1,2.5e-3]}"#
        odd.expectedBytesToSend = 1 << 33
        odd.url = "http://example.com/%E2%82%AC?q=\u{20ac}"
        var plain = makeDownload("01B", destination: "b/", session: "s")
        plain.earliestBeginDate = 4_102_444_800_000
        plain.runAt = 4_102_444_800_000
        _ = try store.insert([NewJob(download: odd, idempotency: nil), NewJob(download: plain, idempotency: nil)])
        let logged = try store.loggedEvents(after: 0, session: nil, limit: 10)
        let stored = try [odd, plain].map { try #require(try store.download(id: $0.id)) }
        #expect(logged.map { String(decoding: $0.payload, as: UTF8.self) } == stored.map { String(reflecting: $0) })
        #expect(stored.map(\.metadata) == [odd.metadata, nil] && stored.map(\.url) == [odd.url, plain.url])
    }

    /// Migration 19 on a database of 18: the state CHECKs of jobs and deliveries, rewritten in
    /// place, still refuse an unknown state and keep the rows there were.
    @Test func migration19KeepsTheStateChecksAndTheRows() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/fetchd.sqlite"
        let old = try database(at: path, version: 18)
        try insert(makeDownload("01A", destination: "old"), intoOld: old)
        try old.execute("""
            INSERT INTO webhook_events (id, type, payload, created_at) VALUES ('e1', 'download.completed', '{}', 1);
            INSERT INTO webhook_deliveries (event_id, url, state, next_attempt_at, updated_at) VALUES ('e1', 'http://127.0.0.1:9/', 'pending', 1, 1);
            """)
        old.close()

        let store = try SQLiteStore(path: path)
        defer { store.close() }
        #expect(try store.download(id: "01A")?.destination.path == "old")
        let tables = try store.withConnection { db in
            try db.prepare("SELECT sql FROM sqlite_schema WHERE name IN ('downloads', 'webhook_deliveries')").query { $0.string(0) }
        }
        #expect(tables.count == 2 && tables.allSatisfy { !$0.contains(" IN (") && $0.contains("state = 'failed'") })
        var handle: OpaquePointer?
        #expect(sqlite3_open(path, &handle) == SQLITE_OK)
        defer { sqlite3_close(handle) }
        #expect(sqlite3_exec(handle, "UPDATE downloads SET state = 'exploded'", nil, nil, nil) == SQLITE_CONSTRAINT)
        #expect(sqlite3_exec(handle, "UPDATE webhook_deliveries SET state = 'lost'", nil, nil, nil) == SQLITE_CONSTRAINT)
        #expect(sqlite3_exec(handle, "UPDATE downloads SET state = 'paused'", nil, nil, nil) == SQLITE_OK)
        #expect(sqlite3_exec(handle, "UPDATE webhook_deliveries SET state = 'delivered'", nil, nil, nil) == SQLITE_OK)
    }

    @Test func aFailedStatementNamesItsSQLButNotItsValues() throws {
        let db = try TemporaryStore()
        _ = try db.store.insert(makeDownload("01A"), idempotency: nil)
        let sql = """
            UPDATE downloads
            SET state = ? WHERE id = ?
            """
        let secret = "https://user:hunter2@example.com/?token=s3cr3t"
        #expect {
            try db.store.withConnection { connection in try connection.prepare(sql).run([.text(secret), .text("01A")]) }
        } throws: { error in
            guard let error = error as? SQLiteError else { return false }
            return error.isConstraintViolation && error.statement == sql
                && "\(error)".hasSuffix("(in: UPDATE downloads SET state = ? WHERE id = ?)") && !"\(error)".contains("\n")
                && !"\(error)".contains("hunter2") && !"\(error)".contains("s3cr3t")
        }
    }

    /// Two writers' batches back to back, so a checkpoint beside them is always behind: the log
    /// still starts over once it holds `Checkpointer.restartPages`, instead of growing with every
    /// batch, and every job is there. (Without the restart the log grew to all 238 MB written here.)
    @Test func theWriteAheadLogStaysBoundedUnderBatchAfterBatch() throws {
        let db = try TemporaryStore()
        let writers = 2, batches = 12, jobsPerBatch = 1000
        let metadata = String(repeating: "m", count: 3000)  // ~10 KB of log a job, with its indexes and event
        let store = db.store, logPath = db.path + "-wal"
        let largestLog = Mutex<UInt64>(0)
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: writers) { writer in
            do {
                for batch in 0..<batches {
                    let jobs = (0..<jobsPerBatch).map { index in
                        var job = makeDownload(String(format: "%d-%02d-%04d", writer, batch, index))
                        job.metadata = metadata
                        return NewJob(download: job, idempotency: nil)
                    }
                    _ = try store.insert(jobs)
                    let size = try FileManager.default.attributesOfItem(atPath: logPath)[.size] as? UInt64 ?? 0
                    largestLog.withLock { $0 = max($0, size) }
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty)
        let restartBytes = UInt64(Checkpointer.restartPages * SQLiteStore.pageSize)
        let largest = largestLog.withLock { $0 }
        // From `Checkpointer.ceilingPages` (twice `restartPages`) on, a write waits for the
        // checkpoint: the log holds at most that and a batch (10 MB) of each writer, however slow
        // the checkpoint is.
        #expect(largest < restartBytes * 3, "the log reached \(largest) bytes")
        #expect(try db.store.counts(session: nil)[.queued] == writers * batches * jobsPerBatch)
    }

    @Test func aDatabaseFromANewerFetchdIsRefused() throws {
        let directory = NSTemporaryDirectory() + "fetchd-store-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/fetchd.sqlite"
        try SQLiteStore(path: path).close()
        var handle: OpaquePointer?
        #expect(sqlite3_open(path, &handle) == SQLITE_OK)
        #expect(sqlite3_exec(handle, "UPDATE schema_version SET version = 999", nil, nil, nil) == SQLITE_OK)
        sqlite3_close(handle)
        #expect {
            try SQLiteStore(path: path)
        } throws: { error in
            "\(error)".contains("newer fetchd")
        }
    }
}
