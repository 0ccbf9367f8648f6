import DownloadCore
import Synchronization

/// fetchd's durable state: one SQLite database in WAL mode, one connection, one writer at a time.
/// Every state change is one transaction and a compare-and-set on the state the caller expects.
public final class Store: Sendable {
    let connection: Mutex<SQLiteConnection>

    public init(path: String) throws {
        let db = try SQLiteConnection(path: path)
        do {
            try db.execute("PRAGMA journal_mode = WAL")
            // In WAL mode NORMAL is durable across a crash of fetchd (kill -9); only a power loss can
            // lose the last commits. It saves an fsync per transaction.
            try db.execute("PRAGMA synchronous = NORMAL")
            try db.execute("PRAGMA foreign_keys = ON")
            // Temporary tables and sorts in memory: the data directory is the only place fetchd may write.
            try db.execute("PRAGMA temp_store = MEMORY")
            try Migrations.run(on: db)
        } catch {
            db.close()
            throw error
        }
        connection = Mutex(db)
    }

    public func close() {
        connection.withLock { $0.close() }
    }

    func withConnection<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try connection.withLock { db in try body(db) }
    }

    /// True when a write transaction can be taken (for `/readyz`).
    public func isWritable() -> Bool {
        (try? withConnection { db in try db.transaction { } }) != nil
    }
}
