import CPostgres
import DownloadCore
import Persistence

/// The downloads table (`DownloadTable`) in PostgreSQL's SQL: the lists and assignments its
/// statements use, built once, and a `Download`'s values as PostgreSQL binds them.
enum JobColumns {
    /// For SELECT and RETURNING: every column `download(_:)` reads, in order.
    static let list = DownloadTable.names.joined(separator: ", ")
    /// For INSERT, with `placeholders` and `values(_:)`.
    static let written = DownloadTable.insertColumns.names
    static let insertList = written.joined(separator: ", ")
    /// `$1, $2, …` for INSERT.
    static let placeholders = written.indices.map { "$\($0 + 1)" }.joined(separator: ", ")

    /// `destination = $1, …, revision = revision + 1` for a state change: the state's columns
    /// (`stateColumns`); bind `stateValues`, then the id as `$\(stateCount + 1)`.
    static let stateAssignments = assignments(stateColumns)
    static let stateCount = stateColumns.count
    /// The columns a state change writes, in `stateValues` order.
    static let stateColumns = DownloadTable.stateColumns.names
    /// `stateAssignments` from the same columns of the row `source` (an UPDATE … FROM many jobs),
    /// or of those of them in `columns`.
    static func stateAssignments(from source: String, columns: [String] = stateColumns) -> String {
        (columns.map { "\($0) = \(source).\($0)" } + ["revision = downloads.revision + 1"]).joined(separator: ", ")
    }
    /// The same for a client's change: the client's columns only, bound from `clientValues`.
    static let clientAssignments = assignments(DownloadTable.clientColumns.names)
    static let clientCount = DownloadTable.clientColumns.indices.count

    /// `a = $1, b = $2, …, revision = revision + 1`.
    private static func assignments(_ columns: [String]) -> String {
        (columns.indices.map { "\(columns[$0]) = $\($0 + 1)" } + ["revision = revision + 1"]).joined(separator: ", ")
    }

    static func values(_ d: Download) -> [PostgresValue] {
        DownloadTable.values(d, DownloadTable.insertColumns, as: PostgresValue.self)
    }

    static func stateValues(_ d: Download) -> [PostgresValue] {
        DownloadTable.values(d, DownloadTable.stateColumns, as: PostgresValue.self)
    }

    static func clientValues(_ d: Download) -> [PostgresValue] {
        DownloadTable.values(d, DownloadTable.clientColumns, as: PostgresValue.self)
    }

    /// The job of a row of `list`.
    static func download(_ row: PostgresRow) throws -> Download {
        try DownloadTable.download(from: row)
    }
}

extension PostgresValue: ColumnBinding {
    /// A table's value as PostgreSQL binds it.
    @inline(__always) public init(_ value: __owned ColumnValue) {
        switch value {
        case .null: self = .null
        case .text(let text): self = .text(text)
        case .integer(let number): self = .integer(number)
        case .real(let number): self = .double(number)
        case .bool(let flag): self = .bool(flag)
        }
    }
}

extension PostgresRow: ColumnReading {
    var columnCount: Int { Int(PQnfields(result)) }

    func isNull(at position: Int) -> Bool { isNull(Int32(position)) }

    /// The cell read as the column's kind, from its text: a number or a bool that does not parse
    /// stays text, for the column to refuse.
    @inline(__always) func value(at position: Int, as kind: ColumnKind) -> ColumnValue {
        let column = Int32(position)
        if isNull(column) { return .null }
        let text = string(column)
        switch kind {
        case .text: return .text(text)
        case .integer: return Int64(text).map(ColumnValue.integer) ?? .text(text)
        case .real: return Double(text).map(ColumnValue.real) ?? .text(text)
        case .bool: return text == "t" ? .bool(true) : text == "f" ? .bool(false) : .text(text)
        }
    }
}
