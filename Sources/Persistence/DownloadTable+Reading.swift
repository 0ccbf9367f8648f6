import DownloadCore

extension DownloadTable {
    /// The job of a row read with `names` as its columns (column i at position i), each field read
    /// back by its column. A row that cannot be read — a column missing, NULL where the field needs
    /// a value, or a value its field does not take (an unknown state, a checksum, headers, mirrors
    /// or ranges that do not parse) — throws `UnreadableJob`: a job is never read as something else.
    @inlinable  // specialized in each backend's module, for its rows
    public static func download(from row: some ColumnReading) throws(UnreadableJob) -> Download {
        var job = unread
        var reader = RowReader(row: row)
        try visit(&job, &reader)
        return job
    }

    /// A job's state read alone (not with its row), as the state column reads it.
    public static func state(_ value: ColumnValue, ofJob id: String) throws(UnreadableJob) -> DownloadState {
        var state = unread.state
        do {
            try StateColumn.read(value, into: &state)
        } catch {
            throw UnreadableJob(id: id, column: stateColumn, problem: error.message)
        }
        return state
    }
}

/// Reads a row into a job, column by column, from the position of each in the row.
@usableFromInline struct RowReader<Row: ColumnReading>: ColumnVisitor {
    @usableFromInline typealias Failure = UnreadableJob

    @usableFromInline let row: Row
    @usableFromInline let columnCount: Int
    @usableFromInline var position = 0
    /// Known once the key is read, which the table declares first: for the error of any column after it.
    @usableFromInline var id: String?

    @inlinable init(row: Row) {
        self.row = row
        columnCount = row.columnCount
    }

    // Always inlined: left to itself, the optimizer merges the 47 specializations into one that
    // calls each column's format through a pointer (list of 20,000 jobs: 7 % more instructions).
    @inlinable @inline(__always)
    mutating func column<Format: ColumnFormat>(_ name: String, _ owner: ColumnOwner, _ field: inout Format.Field,
                                               _ format: Format.Type) throws(UnreadableJob) {
        guard position < columnCount else { throw UnreadableJob(id: id, column: name, problem: "is missing") }
        do {
            try Format.read(row, at: position, into: &field)
        } catch {
            throw UnreadableJob(id: id, column: name, problem: error.message)
        }
        if owner == .key { id = field as? String }
        position += 1
    }
}
