/// A column's value as the downloads table holds it, whatever the backend: each maps these to its
/// own bindings and reads its rows back into them (SQLite keeps a `bool` as the integer 0 or 1,
/// PostgreSQL as a boolean).
public enum ColumnValue: Sendable, Equatable {
    case null
    case text(String)
    case integer(Int64)
    case real(Double)
    case bool(Bool)

    /// What it holds; nil for NULL.
    @usableFromInline var kind: ColumnKind? {
        switch self {
        case .null: nil
        case .text: .text
        case .integer: .integer
        case .real: .real
        case .bool: .bool
        }
    }
}

/// What a column holds when it is not NULL: how a backend reads a cell of it (PostgreSQL's text
/// results say nothing of their type).
public enum ColumnKind: Sendable {
    case text, integer, real, bool
}

/// A row as a backend reads it: how many columns its result has, and the value at a position
/// (below that count), read as the kind of the column there.
///
/// A backend whose cells carry their type (SQLite's) also hands out the two kinds most cells
/// hold, and says which are NULL, without making a `ColumnValue` first: a list of 100 jobs reads
/// 5,000 cells, and the value and its checks cost a tenth of the request.
public protocol ColumnReading {
    var columnCount: Int { get }
    func value(at position: Int, as kind: ColumnKind) -> ColumnValue
    /// Whether the cell is NULL.
    func isNull(at position: Int) -> Bool
    /// The cell's integer if it is stored as one; nil says nothing more: read its value then.
    func integer(at position: Int) -> Int64?
    /// The cell's text if it is stored as text; nil says nothing more: read its value then.
    func text(at position: Int) -> String?
}

extension ColumnReading {
    public func isNull(at position: Int) -> Bool {
        if case .null = value(at: position, as: .text) { return true }
        return false
    }

    public func integer(at position: Int) -> Int64? { nil }
    public func text(at position: Int) -> String? { nil }
}

/// What is wrong with a stored value, for `UnreadableJob`.
@usableFromInline struct ColumnProblem: Error {
    @usableFromInline let message: String

    @usableFromInline init(message: String) {
        self.message = message
    }

    /// A value of another kind than the column's, or NULL in a column that must have one. Only
    /// the kind is told: the value may be a secret (a header's).
    @usableFromInline static func unexpected(_ value: ColumnValue, _ kind: ColumnKind) -> ColumnProblem {
        guard let found = value.kind else { return ColumnProblem(message: "is NULL") }
        return ColumnProblem(message: "holds \(found), not \(kind)")
    }
}
