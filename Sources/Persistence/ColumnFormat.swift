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
    /// Reads the cell at `position` of `row` as `read(_:into:)` reads its value, taking the
    /// row's integer or text straight where it has one.
    static func read<Row: ColumnReading>(_ row: Row, at position: Int, into field: inout Field) throws(ColumnProblem)
}

extension ColumnFormat {
    @inlinable @inline(__always)
    static func read<Row: ColumnReading>(_ row: Row, at position: Int, into field: inout Field) throws(ColumnProblem) {
        try read(row.value(at: position, as: kind), into: &field)
    }
}

/// A format whose field has a value to start reading into, for `OptionalColumn`.
@usableFromInline protocol PlainColumnFormat: ColumnFormat {
    static var blank: Field { get }
}

/// NULL for nil, else the value `Wrapped` writes; reads back the same way.
@usableFromInline enum OptionalColumn<Wrapped: PlainColumnFormat>: ColumnFormat {
    @inlinable static var kind: ColumnKind { Wrapped.kind }
    @inlinable @inline(__always) static func write(_ field: Wrapped.Field?) -> ColumnValue { field.map(Wrapped.write) ?? .null }
    @inlinable @inline(__always) static func read(_ value: consuming ColumnValue, into field: inout Wrapped.Field?) throws(ColumnProblem) {
        if case .null = value {
            field = nil
            return
        }
        var unwrapped = Wrapped.blank
        try Wrapped.read(value, into: &unwrapped)
        field = unwrapped
    }
    @inlinable @inline(__always)
    static func read<Row: ColumnReading>(_ row: Row, at position: Int, into field: inout Wrapped.Field?) throws(ColumnProblem) {
        if row.isNull(at: position) {
            field = nil
            return
        }
        var unwrapped = Wrapped.blank
        try Wrapped.read(row, at: position, into: &unwrapped)
        field = unwrapped
    }
}

@usableFromInline typealias OptionalTextColumn = OptionalColumn<TextColumn>
@usableFromInline typealias OptionalIntegerColumn = OptionalColumn<IntegerColumn>
@usableFromInline typealias OptionalIntColumn = OptionalColumn<IntColumn>

@usableFromInline enum TextColumn: PlainColumnFormat {
    @inlinable static var blank: String { "" }
    @inlinable static var kind: ColumnKind { .text }
    @inlinable @inline(__always) static func write(_ field: String) -> ColumnValue { .text(field) }
    @inlinable @inline(__always) static func read(_ value: consuming ColumnValue, into field: inout String) throws(ColumnProblem) {
        switch consume value {
        case .text(let text): field = text
        case let other: throw .unexpected(other, .text)
        }
    }
    @inlinable @inline(__always)
    static func read<Row: ColumnReading>(_ row: Row, at position: Int, into field: inout String) throws(ColumnProblem) {
        guard let text = row.text(at: position) else { return try read(row.value(at: position, as: kind), into: &field) }
        field = text
    }
}


@usableFromInline enum IntegerColumn: PlainColumnFormat {
    @inlinable static var blank: Int64 { 0 }
    @inlinable static var kind: ColumnKind { .integer }
    @inlinable @inline(__always) static func write(_ field: Int64) -> ColumnValue { .integer(field) }
    @inlinable @inline(__always) static func read(_ value: consuming ColumnValue, into field: inout Int64) throws(ColumnProblem) {
        guard case .integer(let number) = value else { throw .unexpected(value, .integer) }
        field = number
    }
    @inlinable @inline(__always)
    static func read<Row: ColumnReading>(_ row: Row, at position: Int, into field: inout Int64) throws(ColumnProblem) {
        guard let number = row.integer(at: position) else { return try read(row.value(at: position, as: kind), into: &field) }
        field = number
    }
}


/// A count or a status: an `Int`, as wide as `Int64` on the 64-bit platforms fetchd runs on.
@usableFromInline enum IntColumn: PlainColumnFormat {
    @inlinable static var blank: Int { 0 }
    @inlinable static var kind: ColumnKind { .integer }
    @inlinable @inline(__always) static func write(_ field: Int) -> ColumnValue { .integer(Int64(field)) }
    @inlinable @inline(__always) static func read(_ value: consuming ColumnValue, into field: inout Int) throws(ColumnProblem) {
        guard case .integer(let number) = value else { throw .unexpected(value, .integer) }
        field = Int(number)
    }
    @inlinable @inline(__always)
    static func read<Row: ColumnReading>(_ row: Row, at position: Int, into field: inout Int) throws(ColumnProblem) {
        guard let number = row.integer(at: position) else { return try read(row.value(at: position, as: kind), into: &field) }
        field = Int(number)
    }
}


@usableFromInline enum RealColumn: ColumnFormat {
    @inlinable static var kind: ColumnKind { .real }
    @inlinable @inline(__always) static func write(_ field: Double) -> ColumnValue { .real(field) }
    @inlinable @inline(__always) static func read(_ value: consuming ColumnValue, into field: inout Double) throws(ColumnProblem) {
        guard case .real(let number) = value else { throw .unexpected(value, .real) }
        field = number
    }
}

@usableFromInline enum BoolColumn: ColumnFormat {
    @inlinable static var kind: ColumnKind { .bool }
    @inlinable @inline(__always) static func write(_ field: Bool) -> ColumnValue { .bool(field) }
    @inlinable @inline(__always) static func read(_ value: consuming ColumnValue, into field: inout Bool) throws(ColumnProblem) {
        guard case .bool(let flag) = value else { throw .unexpected(value, .bool) }
        field = flag
    }
    /// A bool kept as the integer 0 or 1 (as SQLite keeps one) is taken straight.
    @inlinable @inline(__always)
    static func read<Row: ColumnReading>(_ row: Row, at position: Int, into field: inout Bool) throws(ColumnProblem) {
        guard let number = row.integer(at: position), number == 0 || number == 1 else {
            return try read(row.value(at: position, as: kind), into: &field)
        }
        field = number == 1
    }
}
