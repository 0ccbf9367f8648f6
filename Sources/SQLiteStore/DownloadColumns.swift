import CSQLite
import DownloadCore
import Persistence

/// The downloads table (`DownloadTable`) in SQLite's SQL: the lists and assignments its statements
/// use, built once, and a `Download`'s values as SQLite binds them.
enum DownloadColumns {
    /// Every column `download(_:)` reads, for SELECT and RETURNING.
    static let list = DownloadTable.names.joined(separator: ", ")
    /// The columns an INSERT writes, bound from `values`.
    static let insertList = DownloadTable.insertColumns.names.joined(separator: ", ")
    static let placeholders = Array(repeating: "?", count: DownloadTable.insertColumns.indices.count).joined(separator: ", ")

    /// `destination = ?, …, revision = revision + 1` for a state change: the state's columns
    /// (`stateColumns`); bind `stateValues` then the id.
    static let stateAssignments = assignments(stateColumns)
    /// The columns `stateAssignments` sets, in the order of `stateValues`: the state's, and
    /// `live_destination`, which follows the state.
    static let stateColumns = DownloadTable.stateColumns.names + ["live_destination"]
    /// The same for a client's change: the client's columns, bound from `clientValues`.
    static let clientAssignments = assignments(DownloadTable.clientColumns.names)

    /// `a = ?, b = ?, …, revision = revision + 1`: an UPDATE's SET list for `columns`.
    static func assignments(_ columns: [String]) -> String {
        (columns.map { "\($0) = ?" } + ["revision = revision + 1"]).joined(separator: ", ")
    }

    static func values(_ d: Download) -> [SQLValue] {
        DownloadTable.values(d, DownloadTable.insertColumns, as: SQLValue.self)
    }

    /// `values(d)` appended to `values`.
    static func append(_ d: inout Download, to values: inout [SQLValue]) {
        DownloadTable.append(&d, DownloadTable.insertColumns, to: &values)
    }

    static func stateValues(_ d: Download) -> [SQLValue] {
        var d = d
        var values: [SQLValue] = []
        values.reserveCapacity(stateColumns.count)
        DownloadTable.append(&d, DownloadTable.stateColumns, to: &values)
        values.append(liveDestination(d))
        return values
    }

    static func clientValues(_ d: Download) -> [SQLValue] {
        DownloadTable.values(d, DownloadTable.clientColumns, as: SQLValue.self)
    }

    /// The destination while the job is live and names a file (not a `dir/`), else NULL (an
    /// upload's too: it writes no destination). The one-live-job-per-destination index holds only
    /// these, so that a change between live states (pause, resume, claim) leaves the index alone
    /// (migration 18).
    static func liveDestination(_ d: Download) -> SQLValue {
        d.upload != nil || d.state.isTerminal || d.destination.path.hasSuffix("/") ? .null : .text(d.destination.path)
    }

    /// The job of a row of `list`.
    static func download(_ row: some ColumnReading) throws -> Download {
        try DownloadTable.download(from: row)
    }
}

extension SQLValue: ColumnBinding {
    /// A table's value as SQLite binds it: a bool as the integer 0 or 1.
    @inline(__always) public init(_ value: __owned ColumnValue) {
        switch value {
        case .null: self = .null
        case .text(let text): self = .text(text)
        case .integer(let number): self = .integer(number)
        case .real(let number): self = .real(number)
        case .bool(let flag): self = .integer(flag ? 1 : 0)
        }
    }

    /// The table's value this is in a column of `kind`: 0 or 1 in a bool column is the bool, and
    /// an integer in a REAL column the same number (a snapshot's JSON may write a whole one so).
    /// Anything else stays as it is, for the column to refuse if it is not its kind.
    func column(as kind: ColumnKind) -> ColumnValue {
        switch (self, kind) {
        case (.null, _): return .null
        case (.integer(let number), .bool) where number == 0 || number == 1: return .bool(number == 1)
        case (.integer(let number), .real): return .real(Double(number))
        case (.integer(let number), _): return .integer(number)
        case (.real(let number), _): return .real(number)
        case (.text(let text), _): return .text(text)
        // No column of the table is a blob: its bytes are read as SQLite reads a blob as text.
        case (.blob(let bytes), _): return .text(String(decoding: bytes, as: UTF8.self))
        }
    }
}

extension Row: ColumnReading {
    var columnCount: Int { Int(sqlite3_column_count(raw)) }

    /// Read as a value (`sqlite3_column_value`): one call into SQLite a column instead of two or
    /// three, at 47 columns a job. Such a value is "unprotected", safe here as a connection is used
    /// by one thread at a time (`SQLiteStore`'s locks) and the row is not stepped past meanwhile.
    @inline(__always) func value(at position: Int, as kind: ColumnKind) -> ColumnValue {
        let value = sqlite3_column_value(raw, Int32(position))
        switch sqlite3_value_type(value) {
        case SQLITE_NULL: return .null
        case SQLITE_INTEGER: return SQLValue.integer(sqlite3_value_int64(value)).column(as: kind)
        case SQLITE_FLOAT: return .real(sqlite3_value_double(value))
        default:
            guard let text = sqlite3_value_text(value) else { return .text("") }
            let bytes = UnsafeBufferPointer(start: text, count: Int(sqlite3_value_bytes(value)))
            return .text(String(decoding: bytes, as: UTF8.self))
        }
    }

    @inline(__always) func isNull(at position: Int) -> Bool {
        sqlite3_column_type(raw, Int32(position)) == SQLITE_NULL
    }

    @inline(__always) func integer(at position: Int) -> Int64? {
        let value = sqlite3_column_value(raw, Int32(position))
        return sqlite3_value_type(value) == SQLITE_INTEGER ? sqlite3_value_int64(value) : nil
    }

    @inline(__always) func text(at position: Int) -> String? {
        let value = sqlite3_column_value(raw, Int32(position))
        guard sqlite3_value_type(value) == SQLITE_TEXT, let text = sqlite3_value_text(value) else { return nil }
        return String(decoding: UnsafeBufferPointer(start: text, count: Int(sqlite3_value_bytes(value))), as: UTF8.self)
    }
}
