import CPostgres
import Glibc

/// One libpq connection with a cache of prepared statements. Not thread-safe: `PostgresStore`
/// keeps each behind a lock. Statements run synchronously (libpq's blocking calls), so callers run
/// them off the event loops, as they do SQLite's.
final class PostgresConnection {
    private var handle: OpaquePointer?
    /// Prepared statement names by SQL text. A statement is prepared on first use; a reset
    /// connection is a new server session, which has none.
    private var prepared: [String: String] = [:]

    /// `url` is a libpq connection URI or key=value string, e.g. `postgresql://user@host/db`.
    init(url: String) throws {
        handle = PQconnectdb(url)
        guard PQstatus(handle) == CONNECTION_OK else {
            let error = PostgresError(message: "cannot connect: \(errorMessage)", sqlState: nil, sql: nil)
            PQfinish(handle)
            handle = nil
            throw error
        }
    }

    func close() {
        PQfinish(handle)
        handle = nil
        prepared.removeAll()
    }

    private var errorMessage: String {
        handle.flatMap { PQerrorMessage($0) }.map { String(cString: $0) } ?? "out of memory"
    }

    /// Reconnects if libpq knows the connection broke (a reconnection that failed leaves it so), so
    /// one failed call does not leave the connection failing forever.
    func reconnectIfBroken() {
        guard handle != nil, PQstatus(handle) != CONNECTION_OK else { return }
        reconnect()
    }

    /// Reconnects if `error` says the server dropped the connection (a restart, a failover, a
    /// terminated backend); libpq may report that before it marks the connection broken. True if so.
    func reconnectIfLost(by error: any Error) -> Bool {
        guard handle != nil, PQstatus(handle) != CONNECTION_OK || (error as? PostgresError)?.isConnectionLoss == true else { return false }
        reconnect()
        return true
    }

    private func reconnect() {
        prepared.removeAll()
        PQreset(handle)
    }

    /// Waits up to `timeoutMilliseconds` for notifications (after LISTEN) and returns their
    /// payloads, empty if none came. Throws when the connection is lost.
    func notifications(waitingUpTo timeoutMilliseconds: Int32) throws -> [String] {
        let socket = PQsocket(handle)
        guard socket >= 0 else { throw PostgresError(message: "not connected: \(errorMessage)", sqlState: nil, sql: nil) }
        var waiting = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        guard poll(&waiting, 1, timeoutMilliseconds) >= 0 || errno == EINTR else {
            throw PostgresError(message: "poll failed: errno \(errno)", sqlState: nil, sql: nil)
        }
        guard PQconsumeInput(handle) == 1 else { throw PostgresError(message: "connection lost: \(errorMessage)", sqlState: nil, sql: nil) }
        var payloads: [String] = []
        while let notification = PQnotifies(handle) {
            payloads.append(String(cString: notification.pointee.extra))
            PQfreemem(notification)
        }
        return payloads
    }

    /// Runs SQL without parameters, any number of statements (for migrations and transaction control).
    func execute(_ sql: String) throws {
        if beginPending {
            // The transaction's first statement: its BEGIN goes in the same round trip.
            beginPending = false
            try retryingIfLost { try execute("\(Self.begin); \(sql)") }
            return
        }
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        try check(result, sql: sql)
    }

    /// Runs a statement that returns no rows; the number of rows it changed.
    @discardableResult
    func run(_ sql: String, _ values: [PostgresValue] = []) throws -> Int {
        let result = try executePrepared(sql, values)
        defer { PQclear(result) }
        return Int(String(cString: PQcmdTuples(result))) ?? 0
    }

    /// Runs a query and maps every row.
    func query<T>(_ sql: String, _ values: [PostgresValue] = [], _ map: (PostgresRow) throws -> T) throws -> [T] {
        let result = try executePrepared(sql, values)
        defer { PQclear(result) }
        return try (0..<PQntuples(result)).map { try map(PostgresRow(result: result, row: $0)) }
    }

    /// Runs `body` in one transaction, rolling back on error. READ COMMITTED: each statement sees
    /// what was committed before it began, which is what the advisory locks rely on. The BEGIN
    /// goes with the transaction's first statement, and the COMMIT with the statements `atCommit`
    /// gave, each in one round trip (libpq's pipeline mode). A first statement that finds the
    /// connection dropped is sent again, with its BEGIN, on a new one: nothing had been done.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        beginPending = true
        atCommitStatements = []
        defer {
            beginPending = false
            atCommitStatements = []
        }
        do {
            let value = try body()
            if !atCommitStatements.isEmpty {
                try pipelined(atCommitStatements, begin: beginPending, commit: true).forEach { PQclear($0) }
            } else if !beginPending {
                try execute("COMMIT")
            }
            return value
        } catch {
            // The body's error is the one to report; a ROLLBACK that fails finds the connection
            // broken, and it is made again before its next use (`reconnectIfBroken`).
            if !beginPending { try? execute("ROLLBACK") }
            throw error
        }
    }

    /// Runs `sql` at the end of the transaction, sent with its COMMIT (and any other statements
    /// given so) in one round trip: for writes nothing in the transaction reads back, whose row
    /// locks should be held as briefly as can be. Outside a transaction it runs now.
    func atCommit(_ sql: String, _ values: [PostgresValue]) throws {
        guard beginPending || inTransaction else {
            try run(sql, values)
            return
        }
        atCommitStatements.append((sql, values))
    }

    private var beginPending = false
    private var atCommitStatements: [(sql: String, values: [PostgresValue])] = []
    private var inTransaction: Bool { PQtransactionStatus(handle) == PQTRANS_INTRANS }
    private static let begin = "BEGIN ISOLATION LEVEL READ COMMITTED"

    /// `body`, and once more on a new connection if this one was found dropped.
    private func retryingIfLost<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch {
            guard reconnectIfLost(by: error) else { throw error }
            return try body()
        }
    }

    /// Sends the prepared `statements`, with a BEGIN before them and a COMMIT after them as
    /// asked, in one round trip (pipeline mode); their results, which the caller clears. Every
    /// command's results are read up to the pipeline's end, also after one failed (the server
    /// then skips the rest), so the connection leaves pipeline mode idle.
    private func pipelined(_ statements: [(sql: String, values: [PostgresValue])], begin: Bool, commit: Bool) throws -> [OpaquePointer] {
        let names = try statements.map { try statementName($0.sql) }  // PQprepare waits for its answer: not in pipeline mode
        let sql = statements.map(\.sql).joined(separator: "; ")
        guard PQenterPipelineMode(handle) == 1 else { throw PostgresError(message: errorMessage, sqlState: nil, sql: sql) }
        let control = { (command: String) in PQsendQueryParams(self.handle, command, 0, nil, nil, nil, nil, 0) == 1 }
        var sent = !begin || control(Self.begin)
        for (name, statement) in zip(names, statements) where sent {
            let formats = statement.values.map { Int32($0.isBinary ? 1 : 0) }
            sent = withParameterPointers(statement.values) {
                PQsendQueryPrepared(handle, name, Int32(statement.values.count), $0, $1, formats, 0)
            } == 1
        }
        sent = sent && (!commit || control("COMMIT")) && PQpipelineSync(handle) == 1
        var results: [OpaquePointer] = []
        var ended = 0
        while sent, PQstatus(handle) == CONNECTION_OK {
            guard let result = PQgetResult(handle) else {
                ended += 1
                continue
            }
            if PQresultStatus(result) == PGRES_PIPELINE_SYNC {
                PQclear(result)
                break
            }
            // One result per command (then a NULL); a command's first is the one kept.
            if results.count == ended { results.append(result) } else { PQclear(result) }
        }
        let commands = (begin ? 1 : 0) + statements.count + (commit ? 1 : 0)
        guard sent, PQexitPipelineMode(handle) == 1, results.count == commands else {
            results.forEach { PQclear($0) }
            let error = PostgresError(message: "pipeline failed: \(errorMessage)", sqlState: nil, sql: sql)
            reconnect()
            throw error
        }
        do {
            let commandSQL = (begin ? [Self.begin] : []) + statements.map(\.sql) + (commit ? ["COMMIT"] : [])
            for (result, sql) in zip(results, commandSQL) where PQresultStatus(result) != PGRES_PIPELINE_ABORTED { try check(result, sql: sql) }
        } catch {
            results.forEach { PQclear($0) }
            throw error
        }
        let own = (begin ? 1 : 0)..<(results.count - (commit ? 1 : 0))
        for index in results.indices where !own.contains(index) { PQclear(results[index]) }
        return Array(results[own])
    }

    /// The result of a statement that succeeded; the caller clears it.
    private func executePrepared(_ sql: String, _ values: [PostgresValue]) throws -> OpaquePointer {
        if beginPending {
            // The transaction's first statement: its BEGIN goes in the same round trip.
            beginPending = false
            return try retryingIfLost { try pipelined([(sql, values)], begin: true, commit: false)[0] }
        }
        let name = try statementName(sql)
        let formats = values.map { Int32($0.isBinary ? 1 : 0) }
        let result = withParameterPointers(values) { pointers, lengths in
            PQexecPrepared(handle, name, Int32(values.count), pointers, lengths, formats, 0)
        }
        do {
            try check(result, sql: sql)
        } catch {
            PQclear(result)
            throw error
        }
        // A statement that succeeded has a result (libpq returns none only when out of memory).
        guard let result else { throw PostgresError(message: "out of memory", sqlState: nil, sql: sql) }
        return result
    }

    private func statementName(_ sql: String) throws -> String {
        if let name = prepared[sql] { return name }
        let name = "fetchd_\(prepared.count)"
        let result = PQprepare(handle, name, sql, 0, nil)
        defer { PQclear(result) }
        try check(result, sql: sql)
        prepared[sql] = name
        return name
    }

    private func check(_ result: OpaquePointer?, sql: String) throws {
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return
        default:
            let state = result.flatMap { PQresultErrorField($0, diagnosticSQLState) }.map { String(cString: $0) }
            let message = result.flatMap { PQresultErrorMessage($0) }.map { String(cString: $0) } ?? ""
            throw PostgresError(message: message.isEmpty ? errorMessage : message, sqlState: state, sql: sql)
        }
    }
}

/// Calls `body` with a C pointer to each parameter's bytes (nil for NULL) and their lengths, valid
/// for the call only. Text-format values end in a NUL, since libpq reads them as C strings.
private func withParameterPointers<R>(_ values: [PostgresValue], _ body: ([UnsafePointer<CChar>?], [Int32]) -> R) -> R {
    var storage: [CChar] = []
    var lengths: [Int32] = []
    let offsets = values.map { value -> Int? in
        guard let bytes = value.wireBytes else { lengths.append(0); return nil }
        let offset = storage.count
        lengths.append(Int32(bytes.count))
        storage += bytes.map { CChar(bitPattern: $0) }
        if !value.isBinary { storage.append(0) }
        return offset
    }
    // Never empty, so that an empty binary value still gets a pointer (nil would mean NULL).
    storage.append(0)
    return storage.withUnsafeBufferPointer { buffer in
        body(offsets.map { offset in offset.flatMap { at in buffer.baseAddress.map { $0 + at } } }, lengths)
    }
}

/// libpq's PG_DIAG_SQLSTATE, a character constant Swift does not import.
private let diagnosticSQLState = Int32(UInt8(ascii: "C"))
