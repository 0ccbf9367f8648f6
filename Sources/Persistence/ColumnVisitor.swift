/// What goes through the downloads table column by column (`DownloadTable.visit`): it is given
/// each column's name, who writes it, and the field the column keeps, in place, with its format.
/// A visitor that cannot fail has `Never` for `Failure`, and its visit needs no `try`.
@usableFromInline protocol ColumnVisitor {
    associatedtype Failure: Error
    mutating func column<Format: ColumnFormat>(_ name: String, _ owner: ColumnOwner, _ field: inout Format.Field,
                                               _ format: Format.Type) throws(Failure)
}
