/// How a column keeps a field of `Download`: the kind of value it holds, the value the field
/// writes, and how a value reads back into the field, refusing what the field cannot take.
///
/// A type, not a value, and usable from inlinable code (the common ones inlinable themselves):
/// `DownloadTable.visit` is specialized for each backend's row reader in the backend's module,
/// where it calls them directly — a row's 47 reads with no call through a closure or a protocol,
/// as the hand-written reader before the table made them.
@usableFromInline protocol ColumnFormat {
    associatedtype Field
    static var kind: ColumnKind { get }
    static func write(_ field: Field) -> ColumnValue
    /// Takes the value: a text moves into the field, uncopied.
    static func read(_ value: consuming ColumnValue, into field: inout Field) throws(ColumnProblem)
}

@usableFromInline enum TextColumn: ColumnFormat {
    @inlinable static var kind: ColumnKind { .text }
    @inlinable static func write(_ field: String) -> ColumnValue { .text(field) }
    @inlinable static func read(_ value: consuming ColumnValue, into field: inout String) throws(ColumnProblem) {
        switch consume value {
        case .text(let text): field = text
        case let other: throw .unexpected(other, .text)
        }
    }
}

@usableFromInline enum OptionalTextColumn: ColumnFormat {
    @inlinable static var kind: ColumnKind { .text }
    @inlinable static func write(_ field: String?) -> ColumnValue { .optional(field) }
    @inlinable static func read(_ value: consuming ColumnValue, into field: inout String?) throws(ColumnProblem) {
        switch consume value {
        case .null: field = nil
        case .text(let text): field = text
        case let other: throw .unexpected(other, .text)
        }
    }
}

@usableFromInline enum IntegerColumn: ColumnFormat {
    @inlinable static var kind: ColumnKind { .integer }
    @inlinable static func write(_ field: Int64) -> ColumnValue { .integer(field) }
    @inlinable static func read(_ value: consuming ColumnValue, into field: inout Int64) throws(ColumnProblem) {
        guard case .integer(let number) = value else { throw .unexpected(value, .integer) }
        field = number
    }
}

@usableFromInline enum OptionalIntegerColumn: ColumnFormat {
    @inlinable static var kind: ColumnKind { .integer }
    @inlinable static func write(_ field: Int64?) -> ColumnValue { .optional(field) }
    @inlinable static func read(_ value: consuming ColumnValue, into field: inout Int64?) throws(ColumnProblem) {
        switch value {
        case .null: field = nil
        case .integer(let number): field = number
        default: throw .unexpected(value, .integer)
        }
    }
}

/// A count or a status: an `Int`, as wide as `Int64` on the 64-bit platforms fetchd runs on.
@usableFromInline enum IntColumn: ColumnFormat {
    @inlinable static var kind: ColumnKind { .integer }
    @inlinable static func write(_ field: Int) -> ColumnValue { .integer(Int64(field)) }
    @inlinable static func read(_ value: consuming ColumnValue, into field: inout Int) throws(ColumnProblem) {
        guard case .integer(let number) = value else { throw .unexpected(value, .integer) }
        field = Int(number)
    }
}

@usableFromInline enum OptionalIntColumn: ColumnFormat {
    @inlinable static var kind: ColumnKind { .integer }
    @inlinable static func write(_ field: Int?) -> ColumnValue { .optional(field.map(Int64.init)) }
    @inlinable static func read(_ value: consuming ColumnValue, into field: inout Int?) throws(ColumnProblem) {
        switch value {
        case .null: field = nil
        case .integer(let number): field = Int(number)
        default: throw .unexpected(value, .integer)
        }
    }
}

@usableFromInline enum RealColumn: ColumnFormat {
    @inlinable static var kind: ColumnKind { .real }
    @inlinable static func write(_ field: Double) -> ColumnValue { .real(field) }
    @inlinable static func read(_ value: consuming ColumnValue, into field: inout Double) throws(ColumnProblem) {
        guard case .real(let number) = value else { throw .unexpected(value, .real) }
        field = number
    }
}

@usableFromInline enum BoolColumn: ColumnFormat {
    @inlinable static var kind: ColumnKind { .bool }
    @inlinable static func write(_ field: Bool) -> ColumnValue { .bool(field) }
    @inlinable static func read(_ value: consuming ColumnValue, into field: inout Bool) throws(ColumnProblem) {
        guard case .bool(let flag) = value else { throw .unexpected(value, .bool) }
        field = flag
    }
}
