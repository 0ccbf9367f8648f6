import DownloadCore
import Persistence
import Synchronization

/// fetchd's durable state: one SQLite database in WAL mode. One connection writes, one writer at a
/// time; every state change is one transaction and a compare-and-set on the state the caller
/// expects. A few more connections serve the API's reads, which WAL lets run beside the writer on
/// the last committed state, so a long write (a batch of inserts, a retention pass) never stalls a
/// `GET`.
public final class SQLiteStore: JobStore {
    let connection: SleepingLock<SQLiteConnection>
    private let readers: [ReadConnection]
    private let checkpointer: Checkpointer
    /// Where the next read starts looking for an idle reader, so reads spread over them.
    private let nextReader = Atomic<Int>(0)

    /// Writes each state change to the event log.
    let stateLog: StateLog

    public static let defaultReaderCount = 4
    /// The page size of a database this store creates, in bytes.
    static let pageSize = 8192

    /// `statePayload` encodes a job for the event log (`GET /events`); without one, rows hold its
    /// id, session and state only. `checkpointProblems` hears, on the checkpointer's queue, of what
    /// keeps the write-ahead log from being copied back or started over; the service logs it, a
    /// test or tool that opens a store for a moment may leave it out.
    public init(path: String, readers readerCount: Int = SQLiteStore.defaultReaderCount,
                statePayload: (@Sendable (Download) -> [UInt8])? = nil,
                checkpointProblems: @escaping @Sendable (CheckpointProblem) -> Void = { _ in }) throws {
        stateLog = statePayload.map(StateLog.init) ?? .minimal
        let db = try SQLiteConnection(path: path)
        var readers: [ReadConnection] = []
        let checkpointer: Checkpointer
        do {
            // 8 KiB pages for a new database (an existing one keeps its size; SQLite ignores this
            // then): half the WAL frames, checkpoint copies and b-tree splits per job of a batch,
            // +5-8 % jobs/s, where 16 KiB pages made every small commit (a POST, a settlement)
            // write twice the bytes again and cost intake 5-10 % (Benchmarks/README.md).
            try db.execute("PRAGMA page_size = \(Self.pageSize)")
            try db.execute("PRAGMA journal_mode = WAL")
            // In WAL mode NORMAL is durable across a crash of fetchd (kill -9); only a power loss can
            // lose the last commits. It saves an fsync per transaction.
            try db.execute("PRAGMA synchronous = NORMAL")
            try db.execute("PRAGMA foreign_keys = ON")
            // Temporary tables and sorts in memory: the data directory is the only place fetchd may write.
            try db.execute("PRAGMA temp_store = MEMORY")
            // The writer's page cache: 64 MiB, not SQLite's 2 MiB. A session action or a batch
            // rewrites more pages than 2 MiB hold, which then go to the WAL and are read back in the
            // middle of the transaction.
            try db.execute("PRAGMA cache_size = -65536")
            try Migrations.run(on: db)
            for _ in 0..<max(1, readerCount) {
                readers.append(try ReadConnection(path: path))
            }
            checkpointer = try Checkpointer(path: path, report: checkpointProblems)
        } catch {
            for reader in readers { reader.connection.withLock { $0.close() } }
            db.close()
            throw error
        }
        checkpointer.follow(db)
        connection = SleepingLock(db)
        self.readers = readers
        self.checkpointer = checkpointer
        checkpointer.restartsHolding { [weak self] body in self?.connection.withLock { _ in body() } }
    }

    public func close() {
        connection.withLock { $0.close() }
        for reader in readers { reader.connection.withLock { $0.close() } }
        checkpointer.close()
    }

    /// Runs `body` on the writing connection: for writes, and for reads that must see what the
    /// writer is about to change. Waits first while the write-ahead log is too long (see `Checkpointer`).
    func withConnection<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        checkpointer.waitForRoom()
        return try connection.withLock { db in try body(db) }
    }

    /// Runs `body` on an idle read-only connection (waiting for one only if all are busy). It sees
    /// every transaction committed before it starts.
    func withReader<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        let start = nextReader.wrappingAdd(1, ordering: .relaxed).newValue & Int.max
        for offset in 0..<readers.count {
            let result = try readers[(start + offset) % readers.count].connection.withLockIfAvailable { db in try body(db) }
            if let result { return result }
        }
        return try readers[start % readers.count].connection.withLock { db in try body(db) }
    }

    /// True when a write transaction can be taken (for `/readyz`).
    public func isWritable() -> Bool {
        // Any failure is the answer: not writable now.
        (try? withConnection { db in try db.transaction { } }) != nil
    }
}

/// A read-only connection behind its own lock (a `Mutex` cannot sit in an array by itself).
private final class ReadConnection: Sendable {
    let connection: Mutex<SQLiteConnection>

    init(path: String) throws {
        let db = try SQLiteConnection(path: path)
        do {
            try db.execute("PRAGMA temp_store = MEMORY")
            try db.execute("PRAGMA query_only = ON")
        } catch {
            db.close()
            throw error
        }
        connection = Mutex(db)
    }
}
