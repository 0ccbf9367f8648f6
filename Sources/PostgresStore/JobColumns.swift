import DownloadCore
import Persistence

/// The mapping between `Download` and a row of PostgreSQL's downloads table, in one place:
/// `names[i]` is read from result column i and written from `values(_:)[i]`.
enum JobColumns {
    static let names = [
        "id", "url", "destination", "session", "state", "earliest_begin_at", "discretionary", "priority",
        "expected_bytes_to_send", "expected_bytes_to_receive", "bytes_received", "bytes_expected", "attempts",
        "http_status", "error_code", "error_message", "sha256", "expected_sha256", "webhook_url", "headers", "overwrite",
        "validator", "created_at", "started_at", "finished_at", "run_at", "next_attempt_at", "host_key",
    ]

    /// For SELECT: every column, in order.
    static let list = names.joined(separator: ", ")

    /// `$1, $2, …` for INSERT.
    static let placeholders = names.indices.map { "$\($0 + 1)" }.joined(separator: ", ")

    /// `url = $2, destination = $3, …` for an UPDATE … WHERE id = $1, with `values(_:)` as parameters.
    static let assignments = names.indices.dropFirst().map { "\(names[$0]) = $\($0 + 1)" }.joined(separator: ", ")

    static func values(_ d: Download) -> [PostgresValue] {
        [
            .text(d.id), .text(d.url), .text(d.destination.path), .text(d.session), .text(d.state.rawValue),
            .optional(d.earliestBeginDate), .bool(d.discretionary), .double(d.priority),
            .optional(d.expectedBytesToSend), .optional(d.expectedBytesToReceive), .integer(d.bytesReceived),
            .optional(d.bytesExpectedFromOrigin), .integer(Int64(d.attempts)), .optional(d.httpStatus),
            .optional(d.error?.code), .optional(d.error?.message), .optional(d.sha256), .optional(d.expectedSHA256),
            .optional(d.webhookURL), .optional(HeaderStorage.text(d.headers)), .bool(d.overwrite), .optional(d.validator),
            .integer(d.createdAt), .optional(d.startedAt), .optional(d.finishedAt), .integer(d.runAt),
            .optional(d.nextAttemptAt), .text(d.hostKey),
        ]
    }

    static func download(_ row: PostgresRow) throws -> Download {
        try Download(
            id: row.string(0), url: row.string(1), destination: Destination(stored: row.string(2)), session: row.string(3),
            state: DownloadState(rawValue: row.string(4)) ?? .failed,
            earliestBeginDate: row.optionalInt64(5), discretionary: row.bool(6), priority: row.double(7),
            expectedBytesToSend: row.optionalInt64(8), expectedBytesToReceive: row.optionalInt64(9),
            bytesReceived: row.int64(10), bytesExpectedFromOrigin: row.optionalInt64(11), attempts: row.int(12),
            httpStatus: row.optionalInt(13),
            error: row.optionalString(14).map { DownloadError(code: $0, message: row.optionalString(15) ?? "") },
            sha256: row.optionalString(16), expectedSHA256: row.optionalString(17), webhookURL: row.optionalString(18),
            headers: HeaderStorage.headers(row.optionalString(19)), overwrite: row.bool(20), validator: row.optionalString(21),
            createdAt: row.int64(22), startedAt: row.optionalInt64(23), finishedAt: row.optionalInt64(24),
            runAt: row.int64(25), nextAttemptAt: row.optionalInt64(26), hostKey: row.string(27))
    }
}
