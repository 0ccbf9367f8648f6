import DownloadCore
import Persistence

/// The mapping between `Download` and a row of PostgreSQL's downloads table, in one place:
/// `written[i]` is read from result column i and written from `values(_:)[i]`; the revision the
/// store keeps comes last when read.
enum JobColumns {
    static let written = DownloadTable.columns

    /// For SELECT and RETURNING: every column `download(_:)` reads, in order.
    static let list = (written + ["revision"]).joined(separator: ", ")
    /// For INSERT, with `placeholders` and `values(_:)`.
    static let insertList = written.joined(separator: ", ")
    /// `$1, $2, …` for INSERT.
    static let placeholders = written.indices.map { "$\($0 + 1)" }.joined(separator: ", ")

    /// `destination = $1, …, revision = revision + 1` for a state change: every column but the id
    /// and the client's; bind `stateValues`, then the id as `$\(stateCount + 1)`.
    static let stateAssignments = assignments(stateColumns)
    static let stateCount = stateColumns.count
    /// The columns a state change writes, in `stateValues` order.
    static let stateColumns = DownloadTable.stateIndices.map { written[$0] }
    /// `stateAssignments` from the same columns of the row `source` (an UPDATE … FROM many jobs),
    /// or of those of them in `columns`.
    static func stateAssignments(from source: String, columns: [String] = stateColumns) -> String {
        (columns.map { "\($0) = \(source).\($0)" } + ["revision = downloads.revision + 1"]).joined(separator: ", ")
    }
    /// The same for a client's change: the client's columns only, bound from `clientValues`.
    static let clientAssignments = assignments(DownloadTable.clientIndices.map { written[$0] })
    static let clientCount = DownloadTable.clientIndices.count

    /// `a = $1, b = $2, …, revision = revision + 1`.
    private static func assignments(_ columns: [String]) -> String {
        (columns.indices.map { "\(columns[$0]) = $\($0 + 1)" } + ["revision = revision + 1"]).joined(separator: ", ")
    }

    static func stateValues(_ d: Download) -> [PostgresValue] {
        let all = values(d)
        return DownloadTable.stateIndices.map { all[$0] }
    }

    static func clientValues(_ d: Download) -> [PostgresValue] {
        let all = values(d)
        return DownloadTable.clientIndices.map { all[$0] }
    }

    static func values(_ d: Download) -> [PostgresValue] {
        [
            .text(d.id), .text(d.url), .text(d.destination.path), .text(d.session), .text(d.state.rawValue),
            .optional(d.earliestBeginDate), .bool(d.discretionary), .double(d.priority),
            .optional(d.expectedBytesToSend), .optional(d.expectedBytesToReceive), .integer(d.bytesReceived),
            .optional(d.bytesExpectedFromOrigin), .integer(Int64(d.attempts)), .optional(d.httpStatus),
            .optional(d.error?.code), .optional(d.error?.message), .optional(d.sha256), .optional(d.expectedSHA256),
            .optional(d.webhookURL), .optional(HeaderStorage.text(d.headers)), .bool(d.overwrite), .optional(d.validator),
            .integer(d.createdAt), .optional(d.startedAt), .optional(d.finishedAt), .integer(d.runAt),
            .optional(d.nextAttemptAt), .text(d.hostKey), .optional(d.metadata), .integer(Int64(d.attemptsBeforeRetry)),
            .bool(d.urlRefresh), .optional(d.awaitingURLSince), .integer(Int64(d.outageAttempts)), .optional(d.progressAt),
            .optional(d.diskFullSince),
            .optional(d.checksum?.description), .optional(d.checksumURL), .bool(d.renameOnConflict), .optional(d.path), .optional(d.resourceTimeout),
            .optional(JSONArrayColumn.text(d.mirrors)), .integer(Int64(d.connections)), .optional(d.maxBytesPerSecond),
            .integer(Int64(d.mirrorIndex)), .integer(Int64(d.mirrorMisses)), .optional(RangeProgress.text(d.ranges)),
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
            runAt: row.int64(25), nextAttemptAt: row.optionalInt64(26), hostKey: row.string(27),
            outageAttempts: row.int(32), progressAt: row.optionalInt64(33), diskFullSince: row.optionalInt64(34),
            metadata: row.optionalString(28), attemptsBeforeRetry: row.int(29), revision: row.int64(Int32(written.count)),
            urlRefresh: row.bool(30), awaitingURLSince: row.optionalInt64(31),
            checksum: try row.optionalString(35).map { try Checksum.parse($0).get() }, checksumURL: row.optionalString(36),
            renameOnConflict: row.bool(37), path: row.optionalString(38), resourceTimeout: row.optionalString(39),
            mirrors: try JSONArrayColumn.items(row.optionalString(40)), connections: row.int(41),
            maxBytesPerSecond: row.optionalInt64(42), mirrorIndex: row.int(43), mirrorMisses: row.int(44),
            ranges: RangeProgress.parse(row.optionalString(45)))
    }
}
