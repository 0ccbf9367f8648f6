import DownloadCore

/// A backend's bound value, made from the table's value of a column (`DownloadTable.values`).
public protocol ColumnBinding {
    init(_ value: __owned ColumnValue)
}

extension ColumnValue: ColumnBinding {
    public init(_ value: __owned ColumnValue) { self = value }
}

extension DownloadTable {
    /// The job's values of `columns`, in their order, each as a backend binds it: only those are
    /// made (a state change encodes no headers).
    @inlinable  // specialized in each backend's module, for its own values
    public static func values<Bound: ColumnBinding>(_ job: Download, _ columns: ColumnSet, as _: Bound.Type = Bound.self) -> [Bound] {
        // `visit` takes the fields in place; a writer only reads them.
        var job = job
        var values: [Bound] = []
        values.reserveCapacity(columns.indices.count)
        append(&job, columns, to: &values)
        return values
    }

    /// The same values appended to `values`: a statement binding many jobs' rows takes them
    /// straight, with no list of each job's to copy over. The job in place, as `visit` takes it (a
    /// writer only reads it): a caller that has it in a variable already copies nothing, where a
    /// copy would be a retain and a release per field.
    @inlinable
    public static func append<Bound: ColumnBinding>(_ job: inout Download, _ columns: ColumnSet, to values: inout [Bound]) {
        var writer = ValueWriter<Bound>(includes: columns.includes)
        // Moved in and out, never copied: the list stays unique, and grows in place.
        swap(&writer.values, &values)
        visit(&job, &writer)
        swap(&writer.values, &values)
    }

    /// What column `index` holds for a job stored before the column was added: the default a new
    /// `Download` has for its field, which the migration adding a column gives existing rows.
    public static func valueBeforeAdded(column index: Int) -> ColumnValue {
        values(unread, allColumns, as: ColumnValue.self)[index]
    }
}

/// The values of the columns `includes` marks, bound.
@usableFromInline struct ValueWriter<Bound: ColumnBinding>: ColumnVisitor {
    @usableFromInline typealias Failure = Never

    @usableFromInline let includes: [Bool]
    @usableFromInline var values: [Bound] = []
    @usableFromInline var position = 0

    @inlinable init(includes: [Bool]) {
        self.includes = includes
    }

    // Always inlined, with the format's write and the binding: a column's write is a few
    // instructions, and a call each would double them.
    @inlinable @inline(__always)
    mutating func column<Format: ColumnFormat>(_ name: String, _ owner: ColumnOwner, _ field: inout Format.Field,
                                               _ format: Format.Type) {
        if includes[position] { values.append(Bound(Format.write(field))) }
        position += 1
    }
}
