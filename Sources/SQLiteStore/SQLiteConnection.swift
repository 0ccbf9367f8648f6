import CSQLite

/// SQLite's "copy this buffer now" destructor, which the C macro SQLITE_TRANSIENT spells as -1.
let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// A database failure: SQLite's result code and message, and the SQL text of the statement that
/// failed (with its `?` placeholders, never the values bound to them: those may be URLs with secrets).
public struct SQLiteError: Error, CustomStringConvertible, Sendable {
    public var code: Int32
    public var message: String
    public var statement: String?

    /// One line (start-up errors and log lines are one line each): the message, then the statement
    /// with its whitespace collapsed, cut short if long (a migration is many statements).
    public var description: String {
        guard let statement else { return message }
        let line = statement.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        let limit = 300
        return "\(message) (in: \(line.count > limit ? line.prefix(limit) + "…" : line))"
    }
    public var isConstraintViolation: Bool { code & 0xFF == SQLITE_CONSTRAINT }
}

/// One SQLite connection with a cache of prepared statements. Not thread-safe: `SQLiteStore` owns it
/// behind a mutex.
final class SQLiteConnection {
    private var handle: OpaquePointer?
    private var statements: [String: Statement] = [:]
    private var committed: ((Int32) -> Void)?
    /// How long a statement waits for a lock another connection holds, in ms.
    private static let busyTimeout: Int32 = 5000

    /// Process-wide settings, made once before the first connection opens (SQLite refuses them after).
    private static let configured: Int32 = fetchd_sqlite3_disable_memstatus()

    init(path: String) throws {
        _ = Self.configured
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        handle = db
        guard rc == SQLITE_OK else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(db)
            handle = nil
            throw SQLiteError(code: rc, message: "cannot open database \(path): \(message)")
        }
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, Self.busyTimeout)
    }

    func close() {
        for statement in statements.values { statement.finalize() }
        statements.removeAll()
        sqlite3_close_v2(handle)
        handle = nil
    }

    func execute(_ sql: String) throws {
        var errorMessage: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &errorMessage)
        if rc != SQLITE_OK {
            let message = errorMessage.map { String(cString: $0) } ?? "error \(rc)"
            sqlite3_free(errorMessage)
            throw SQLiteError(code: rc, message: message, statement: sql)
        }
    }

    /// A cached prepared statement, reset and with its bindings cleared.
    func prepare(_ sql: String) throws -> Statement {
        if let cached = statements[sql] {
            cached.reset()
            return cached
        }
        var raw: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &raw, nil)
        guard rc == SQLITE_OK, let raw else { throw error(rc, in: sql) }
        let statement = Statement(raw, sql: sql, connection: self)
        statements[sql] = statement
        return statement
    }

    var changes: Int { Int(sqlite3_changes(handle)) }

    /// Runs `body` with this connection's triggers off, for a set-based write that does itself
    /// what the triggers would do once per row (a session action counts its jobs once).
    func withoutTriggers<T>(_ body: () throws -> T) throws -> T {
        let rc = fetchd_sqlite3_enable_triggers(handle, 0)
        guard rc == SQLITE_OK else { throw error(rc, in: "SQLITE_DBCONFIG_ENABLE_TRIGGER") }
        defer { fetchd_sqlite3_enable_triggers(handle, 1) }
        return try body()
    }

    /// Calls `hook` with the WAL's size in pages after each commit, in place of SQLite's automatic
    /// checkpoints (`Checkpointer`).
    func onCommit(_ hook: @escaping (Int32) -> Void) {
        committed = hook
        // SQLite hands this connection back as the context (it lives as long as its handle).
        sqlite3_wal_hook(handle, { context, _, _, pages in
            if let context { Unmanaged<SQLiteConnection>.fromOpaque(context).takeUnretainedValue().committed?(pages) }
            return SQLITE_OK
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Runs `body` with statements waiting at most `milliseconds` for another connection's lock.
    func withBusyTimeout<T>(_ milliseconds: Int32, _ body: () throws -> T) rethrows -> T {
        sqlite3_busy_timeout(handle, milliseconds)
        defer { sqlite3_busy_timeout(handle, Self.busyTimeout) }
        return try body()
    }

    func error(_ rc: Int32, in sql: String) -> SQLiteError {
        SQLiteError(code: rc, message: handle.map { String(cString: sqlite3_errmsg($0)) } ?? "database closed", statement: sql)
    }

    /// Runs `body` in one IMMEDIATE transaction (the write lock is taken up front), rolling back on error.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try prepare("BEGIN IMMEDIATE").run()
        do {
            let value = try body()
            try prepare("COMMIT").run()
            return value
        } catch {
            // The body's error is the one to report; a failed ROLLBACK leaves SQLite to roll the
            // transaction back itself (it does when the statement that failed aborted it).
            try? prepare("ROLLBACK").run()
            throw error
        }
    }
}
