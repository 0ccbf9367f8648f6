/// Some of the downloads table's columns, found once: where they are in `DownloadTable.columns`,
/// in order, and whether each column is one of them, which a write of a job asks instead of
/// hashing names.
public struct ColumnSet: Sendable {
    public let indices: [Int]
    @usableFromInline let includes: [Bool]

    init(indices: [Int]) {
        self.indices = indices
        includes = DownloadTable.columns.indices.map(indices.contains)
    }

    init(where belongs: (JobColumn) -> Bool) {
        self.init(indices: DownloadTable.columns.indices.filter { belongs(DownloadTable.columns[$0]) })
    }

    /// Their names, in order.
    public var names: [String] { indices.map { DownloadTable.columns[$0].name } }
}

extension DownloadTable {
    /// Every column.
    public static let allColumns = ColumnSet { _ in true }
    /// What an INSERT writes: all but the store's.
    public static let insertColumns = ColumnSet { $0.owner != .store }
    /// What a state change writes: the state's.
    public static let stateColumns = ColumnSet { $0.owner == .state }
    /// What a client's change writes: the client's.
    public static let clientColumns = ColumnSet { $0.owner == .client }
    /// The names of the columns a client may change after submit (`ColumnOwner.client`).
    public static let clientOwned = Set(clientColumns.names)
}
