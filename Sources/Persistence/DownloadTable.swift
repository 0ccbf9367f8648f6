import DownloadCore

/// The downloads table, column by column, for both backends: each column of a job is declared
/// once, in `visit` — its name, who writes it, the field it keeps and its format — and every
/// INSERT, SELECT and RETURNING list, state change, client change and row read is made from it.
///
/// Rows are read with the columns in this order (`names`), and the event log keeps old rows so
/// (SQLite's snapshots): a new column goes after the others but before `revision`, which stays
/// last, and its migration gives existing rows the default a new `Download` has for its field.
public enum DownloadTable {
    /// Every column of `job`, in order, to `visitor`, each with the field it keeps in place.
    ///
    /// In parts by what the columns keep, each specialized and optimized on its own: one function
    /// of all 50 columns outgrows the optimizer's inlining budget, which then leaves every format's
    /// read as a call through its protocol witness (a list of 500 jobs: ~8 % more CPU).
    @inlinable  // specialized in each backend's module, for its rows and its values
    static func visit<Visitor: ColumnVisitor>(_ job: inout Download, _ visitor: inout Visitor) throws(Visitor.Failure) {
        try visitRequest(&job, &visitor)
        try visitProgress(&job, &visitor)
        try visitSchedule(&job, &visitor)
        try visitSteering(&job, &visitor)
        // Moved on by every write of the job (`revision = revision + 1`): the ETag.
        try visitor.column("revision", .store, &job.revision, IntegerColumn.self)
    }

    /// What the client asked for.
    @inlinable
    static func visitRequest<Visitor: ColumnVisitor>(_ job: inout Download, _ visitor: inout Visitor) throws(Visitor.Failure) {
        try visitor.column("id", .key, &job.id, TextColumn.self)
        try visitor.column("url", .client, &job.url, TextColumn.self)
        try visitor.column("destination", .state, &job.destination, DestinationColumn.self)
        try visitor.column("session", .state, &job.session, TextColumn.self)
        try visitor.column(stateColumn, .state, &job.state, StateColumn.self)
        try visitor.column("earliest_begin_at", .client, &job.earliestBeginDate, OptionalIntegerColumn.self)
        try visitor.column("discretionary", .client, &job.discretionary, BoolColumn.self)
        try visitor.column("priority", .client, &job.priority, RealColumn.self)
        try visitor.column("expected_bytes_to_send", .state, &job.expectedBytesToSend, OptionalIntegerColumn.self)
        try visitor.column("expected_bytes_to_receive", .state, &job.expectedBytesToReceive, OptionalIntegerColumn.self)
    }

    /// What its attempts got: bytes, status, error, digests.
    @inlinable
    static func visitProgress<Visitor: ColumnVisitor>(_ job: inout Download, _ visitor: inout Visitor) throws(Visitor.Failure) {
        try visitor.column("bytes_received", .state, &job.bytesReceived, IntegerColumn.self)
        try visitor.column("bytes_expected", .state, &job.bytesExpectedFromOrigin, OptionalIntegerColumn.self)
        try visitor.column("attempts", .state, &job.attempts, IntColumn.self)
        try visitor.column("http_status", .state, &job.httpStatus, OptionalIntColumn.self)
        try visitor.column("error_code", .state, &job.error, ErrorCodeColumn.self)
        try visitor.column("error_message", .state, &job.error, ErrorMessageColumn.self)
        try visitor.column("sha256", .state, &job.sha256, OptionalTextColumn.self)
        try visitor.column("expected_sha256", .state, &job.expectedSHA256, OptionalTextColumn.self)
        try visitor.column("webhook_url", .client, &job.webhookURL, OptionalTextColumn.self)
        try visitor.column("headers", .client, &job.headers, HeadersColumn.self)
        try visitor.column("overwrite", .state, &job.overwrite, BoolColumn.self)
        try visitor.column("validator", .state, &job.validator, OptionalTextColumn.self)
    }

    /// When it ran and runs next, and the waits it is in.
    @inlinable
    static func visitSchedule<Visitor: ColumnVisitor>(_ job: inout Download, _ visitor: inout Visitor) throws(Visitor.Failure) {
        try visitor.column("created_at", .state, &job.createdAt, IntegerColumn.self)
        try visitor.column("started_at", .state, &job.startedAt, OptionalIntegerColumn.self)
        try visitor.column("finished_at", .state, &job.finishedAt, OptionalIntegerColumn.self)
        try visitor.column("run_at", .state, &job.runAt, IntegerColumn.self)
        try visitor.column("next_attempt_at", .state, &job.nextAttemptAt, OptionalIntegerColumn.self)
        // The client's: a new `url` may name another host.
        try visitor.column(hostKeyColumn, .client, &job.hostKey, TextColumn.self)
        try visitor.column("metadata", .client, &job.metadata, OptionalTextColumn.self)
        try visitor.column("attempts_before_retry", .state, &job.attemptsBeforeRetry, IntColumn.self)
        try visitor.column("url_refresh", .state, &job.urlRefresh, BoolColumn.self)
        try visitor.column("awaiting_url_since", .state, &job.awaitingURLSince, OptionalIntegerColumn.self)
        try visitor.column("outage_attempts", .state, &job.outageAttempts, IntColumn.self)
        try visitor.column("progress_at", .state, &job.progressAt, OptionalIntegerColumn.self)
        try visitor.column("disk_full_since", .state, &job.diskFullSince, OptionalIntegerColumn.self)
    }

    /// Checks, placement, mirrors, ranges, the object it goes into, and what an upload sends.
    @inlinable
    static func visitSteering<Visitor: ColumnVisitor>(_ job: inout Download, _ visitor: inout Visitor) throws(Visitor.Failure) {
        try visitor.column("checksum", .state, &job.checksum, ChecksumColumn.self)
        try visitor.column("checksum_url", .state, &job.checksumURL, OptionalTextColumn.self)
        try visitor.column("rename_on_conflict", .state, &job.renameOnConflict, BoolColumn.self)
        try visitor.column("path", .state, &job.path, OptionalTextColumn.self)
        try visitor.column("resource_timeout", .state, &job.resourceTimeout, OptionalTextColumn.self)
        try visitor.column("mirrors", .client, &job.mirrors, MirrorsColumn.self)
        try visitor.column("connections", .state, &job.connections, IntColumn.self)
        try visitor.column("max_bytes_per_second", .client, &job.maxBytesPerSecond, OptionalIntegerColumn.self)
        try visitor.column("mirror_index", .state, &job.mirrorIndex, IntColumn.self)
        try visitor.column("mirror_misses", .state, &job.mirrorMisses, IntColumn.self)
        try visitor.column("ranges", .state, &job.ranges, RangesColumn.self)
        try visitor.column("object_upload", .attempt, &job.objectUpload, ObjectUploadColumn.self)
        try visitor.column("object_etag", .state, &job.objectETag, OptionalTextColumn.self)
        try visitor.column("object_version_id", .state, &job.objectVersionID, OptionalTextColumn.self)
        try visitor.column("upload", .state, &job.upload, UploadPlanColumn.self)
        try visitor.column("watch", .state, &job.watch, WatchLinkColumn.self)
    }

    /// Named once, here: `state(_:ofJob:)` reads the state alone, and `takingClientFields` leaves
    /// the host out.
    @usableFromInline static let stateColumn = "state"
    @usableFromInline static let hostKeyColumn = "host_key"

    /// Every column, in order.
    public static let columns: [JobColumn] = {
        var job = unread
        var describer = Describer()
        visit(&job, &describer)
        return describer.columns
    }()

    /// Every column's name, in order: the list a row is read with (SELECT, RETURNING).
    public static let names = columns.map(\.name)

    /// Where the column `name` is in `columns`, and so in a row read with `names`: for a reader that
    /// wants one column of the row, found once. A name the table does not have is a bug in the caller.
    public static func position(of name: String) -> Int {
        guard let position = names.firstIndex(of: name) else {
            preconditionFailure("the downloads table has no column \(name)")
        }
        return position
    }

    /// The job a row's read starts from, and the defaults of a new `Download`: each field is then
    /// set from its column.
    @usableFromInline static let unread = Download(
        id: "", url: "", destination: Destination(stored: ""), session: "", state: .queued, earliestBeginDate: nil,
        discretionary: false, priority: 0, expectedBytesToSend: nil, expectedBytesToReceive: nil, bytesReceived: 0,
        bytesExpectedFromOrigin: nil, attempts: 0, httpStatus: nil, error: nil, sha256: nil, expectedSHA256: nil, webhookURL: nil,
        headers: [], overwrite: false, validator: nil, createdAt: 0, startedAt: nil, finishedAt: nil, runAt: 0, nextAttemptAt: nil,
        hostKey: "")
}

/// Lists the columns.
private struct Describer: ColumnVisitor {
    typealias Failure = Never

    var columns: [JobColumn] = []

    mutating func column<Format: ColumnFormat>(_ name: String, _ owner: ColumnOwner, _ field: inout Format.Field,
                                               _ format: Format.Type) {
        columns.append(JobColumn(name: name, owner: owner, kind: Format.kind))
    }
}
