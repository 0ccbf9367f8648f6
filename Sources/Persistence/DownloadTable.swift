/// The downloads table's columns as both backends name them: each backend maps a `Download` to
/// these columns in this order (`DownloadColumns` in SQLite, `JobColumns` in PostgreSQL).
public enum DownloadTable {
    /// The columns written from a `Download`, in the order of the backends' `values`.
    public static let columns = [
        "id", "url", "destination", "session", "state", "earliest_begin_at", "discretionary", "priority",
        "expected_bytes_to_send", "expected_bytes_to_receive", "bytes_received", "bytes_expected", "attempts",
        "http_status", "error_code", "error_message", "sha256", "expected_sha256", "webhook_url", "headers", "overwrite",
        "validator", "created_at", "started_at", "finished_at", "run_at", "next_attempt_at", "host_key", "metadata",
        "attempts_before_retry", "url_refresh", "awaiting_url_since", "outage_attempts", "progress_at", "disk_full_since",
        "checksum", "checksum_url", "rename_on_conflict", "path", "resource_timeout",
        "mirrors", "connections", "max_bytes_per_second", "mirror_index", "mirror_misses", "ranges",
    ]

    /// Where the columns a state change writes (every one but the id and the client's) are in
    /// `columns`; found once, so that writing a job hashes no column names.
    public static let stateIndices = columns.indices.dropFirst().filter { !clientOwned.contains(columns[$0]) }
    /// Where the client's columns are in `columns`.
    public static let clientIndices = columns.indices.dropFirst().filter { clientOwned.contains(columns[$0]) }

    /// What a client may change after submit (`PATCH`): written at insert and by `change`, never by
    /// a state change, so a state change the scheduler writes from its own (older) copy of a running
    /// job cannot undo a client's change.
    public static let clientOwned: Set<String> = [
        "url", "host_key", "headers", "priority", "earliest_begin_at", "discretionary", "webhook_url", "metadata",
        "mirrors", "max_bytes_per_second",
    ]
}
