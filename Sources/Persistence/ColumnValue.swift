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
public protocol ColumnReading {
    var columnCount: Int { get }
    func value(at position: Int, as kind: ColumnKind) -> ColumnValue
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
