import DownloadCore

extension DownloadTable {
    /// The job's values of `columns`, in their order, each as a backend binds it (`bind`): only
    /// those are made (a state change encodes no headers).
    @inlinable  // specialized in each backend's module, for its own values
    public static func values<Bound>(_ job: Download, _ columns: ColumnSet,
                                     _ bind: @escaping (ColumnValue) -> Bound) -> [Bound] {
        // `visit` takes the fields in place; a writer only reads them.
        var job = job
        var writer = ValueWriter(includes: columns.includes, bind: bind)
        writer.values.reserveCapacity(columns.indices.count)
        visit(&job, &writer)
        return writer.values
    }

    /// What column `index` holds for a job stored before the column was added: the default a new
    /// `Download` has for its field, which the migration adding a column gives existing rows.
    public static func valueBeforeAdded(column index: Int) -> ColumnValue {
        values(unread, allColumns) { $0 }[index]
    }
}

/// The values of the columns `includes` marks, bound.
@usableFromInline struct ValueWriter<Bound>: ColumnVisitor {
    @usableFromInline typealias Failure = Never

    @usableFromInline let includes: [Bool]
    @usableFromInline let bind: (ColumnValue) -> Bound
    @usableFromInline var values: [Bound] = []
    @usableFromInline var position = 0

    @inlinable init(includes: [Bool], bind: @escaping (ColumnValue) -> Bound) {
        self.includes = includes
        self.bind = bind
    }

    // Always inlined: a column's write is a few instructions, and a call each would double them.
    @inlinable @inline(__always)
    mutating func column<Format: ColumnFormat>(_ name: String, _ owner: ColumnOwner, _ field: inout Format.Field,
                                               _ format: Format.Type) {
        if includes[position] { values.append(bind(Format.write(field))) }
        position += 1
    }
}
