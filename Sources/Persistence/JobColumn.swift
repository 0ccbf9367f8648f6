/// Who writes a column after the job is inserted.
public enum ColumnOwner: Sendable {
    /// The job's id: written at insert, never changed, the row's key for every change.
    case key
    /// What a client may change after submit (`PATCH`): written at insert and by `JobStore.change`,
    /// never by a state change, so a state change the scheduler writes from its own (older) copy
    /// of a running job cannot undo a client's change.
    case client
    /// What the job's life changes: written at insert and by every state change (`JobStore.apply`).
    case state
    /// What the attempt running the job commits as it goes (an object's multipart upload): written
    /// at insert and by its own change only (`StoreChange.objectUpload`), never by a state change,
    /// whose copy of the job — a client's cancel or pause, read before — may be older.
    case attempt
    /// Kept by the store itself (the revision): read back, never written from a `Download`.
    case store
}

/// One column of the downloads table, as `DownloadTable.columns` lists it.
public struct JobColumn: Sendable {
    public let name: String
    public let owner: ColumnOwner
    /// What the column holds, for a backend reading it.
    public let kind: ColumnKind
}
