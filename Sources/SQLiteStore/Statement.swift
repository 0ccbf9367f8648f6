import CSQLite

/// A value bound to a statement parameter or read from a column.
enum SQLValue: Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

/// A prepared statement. Parameters bind by position, starting at 1, in the order given; every
/// execution binds all of them (checked in debug builds).
final class Statement {
    private let raw: OpaquePointer
    /// The SQL text, for errors: placeholders only, never bound values.
    let sql: String
    private unowned let connection: SQLiteConnection

    init(_ raw: OpaquePointer, sql: String, connection: SQLiteConnection) {
        self.raw = raw
        self.sql = sql
        self.connection = connection
    }

    func finalize() { sqlite3_finalize(raw) }

    func reset() {
        sqlite3_reset(raw)
        sqlite3_clear_bindings(raw)
    }

    func bind(_ values: [SQLValue]) throws {
        // A count that does not match is a bug in the caller's SQL or its value list, not a
        // database condition: a missing value would silently be NULL.
        assert(values.count == Int(sqlite3_bind_parameter_count(raw)),
               "\(values.count) values bound to \(sqlite3_bind_parameter_count(raw)) parameters of: \(sql)")
        try bind(values, from: 1)
    }

    /// Binds `values` to the parameters from `first` on.
    private func bind(_ values: [SQLValue], from first: Int32) throws {
        for (offset, value) in values.enumerated() {
            let index = first + Int32(offset)
            let rc: Int32
            switch value {
            case .null: rc = sqlite3_bind_null(raw, index)
            case .integer(let v): rc = sqlite3_bind_int64(raw, index, v)
            case .real(let v): rc = sqlite3_bind_double(raw, index, v)
            case .text(var v):
                // Through the string's own UTF-8 and its length: passing `v` as a C string would
                // copy it into a new array first (and SQLite would then measure it).
                rc = v.withUTF8 { utf8 in
                    // An empty buffer may have no address, and a NULL text would be SQL NULL.
                    guard let start = utf8.baseAddress else { return sqlite3_bind_text(raw, index, "", 0, sqliteTransient) }
                    return start.withMemoryRebound(to: CChar.self, capacity: utf8.count) {
                        sqlite3_bind_text(raw, index, $0, Int32(utf8.count), sqliteTransient)
                    }
                }
            case .blob(let v): rc = v.withUnsafeBytes { sqlite3_bind_blob(raw, index, $0.baseAddress, Int32($0.count), sqliteTransient) }
            }
            guard rc == SQLITE_OK else { throw connection.error(rc, in: sql) }
        }
    }

    /// Executes a statement that returns no rows.
    func run(_ values: [SQLValue] = []) throws {
        try bind(values)
        try step()
    }

    /// The same with `values` then `more` bound: two lists, not one made by copying both.
    func run(_ values: [SQLValue], _ more: [SQLValue]) throws {
        assert(values.count + more.count == Int(sqlite3_bind_parameter_count(raw)), "wrong parameter count for: \(sql)")
        try bind(values, from: 1)
        try bind(more, from: Int32(values.count) + 1)
        try step()
    }

    private func step() throws {
        defer { sqlite3_reset(raw) }
        let rc = sqlite3_step(raw)
        guard rc == SQLITE_DONE || rc == SQLITE_ROW else { throw connection.error(rc, in: sql) }
    }

    /// Executes a query and maps every row.
    func query<T>(_ values: [SQLValue] = [], _ map: (Row) throws -> T) throws -> [T] {
        var rows: [T] = []
        try forEachRow(values) { row in
            rows.append(try map(row))
            return true
        }
        return rows
    }

    /// Executes a query and hands over its rows one at a time until `body` returns false: the
    /// rows after that are neither stepped to nor read.
    func forEachRow(_ values: [SQLValue] = [], _ body: (Row) throws -> Bool) throws {
        try bind(values)
        defer { sqlite3_reset(raw) }
        while true {
            let rc = sqlite3_step(raw)
            if rc == SQLITE_DONE { return }
            guard rc == SQLITE_ROW else { throw connection.error(rc, in: sql) }
            guard try body(Row(raw: raw)) else { return }
        }
    }
}

/// The current row of a stepping statement; valid only inside the `query` closure.
struct Row {
    let raw: OpaquePointer

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(raw, column) == SQLITE_NULL }
    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(raw, column) }
    func int(_ column: Int32) -> Int { Int(sqlite3_column_int64(raw, column)) }
    func optionalInt64(_ column: Int32) -> Int64? { isNull(column) ? nil : int64(column) }
    func optionalInt(_ column: Int32) -> Int? { isNull(column) ? nil : int(column) }
    func string(_ column: Int32) -> String {
        guard let text = sqlite3_column_text(raw, column) else { return "" }
        return String(cString: text)
    }
    func optionalString(_ column: Int32) -> String? { isNull(column) ? nil : string(column) }
    func blob(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(raw, column))
        guard count > 0, let pointer = sqlite3_column_blob(raw, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }
}
