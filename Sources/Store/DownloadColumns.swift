import DownloadCore
import Persistence

/// The mapping between `Download` and a row of the downloads table, in one place.
enum DownloadColumns {
    static let written = DownloadTable.columns

    /// Every column `download(_:)` reads: the written ones, then the revision the store keeps.
    static let list = (written + ["revision"]).joined(separator: ", ")
    static let insertList = written.joined(separator: ", ")
    static let placeholders = Array(repeating: "?", count: written.count).joined(separator: ", ")

    /// `destination = ?, …, revision = revision + 1` for a state change: every column but the id
    /// and the client's; bind `stateValues` then the id.
    /// Also sets `live_destination`, which follows the state.
    static let stateAssignments = assignments(stateColumns)
    /// The columns `stateAssignments` sets, in the order of `stateValues`.
    static let stateColumns = DownloadTable.stateIndices.map { written[$0] } + ["live_destination"]
    /// The same for a client's change: the client's columns only.
    static let clientAssignments = assignments(DownloadTable.clientIndices.map { written[$0] })

    /// `a = ?, b = ?, …, revision = revision + 1`: an UPDATE's SET list for `columns`.
    static func assignments(_ columns: [String]) -> String {
        (columns.map { "\($0) = ?" } + ["revision = revision + 1"]).joined(separator: ", ")
    }

    static func stateValues(_ d: Download) -> [SQLValue] {
        let all = values(d)
        return DownloadTable.stateIndices.map { all[$0] } + [liveDestination(d)]
    }

    /// The destination while the job is live and names a file (not a `dir/`), else NULL. The
    /// one-live-job-per-destination index holds only these, so that a change between live states
    /// (pause, resume, claim) leaves the index alone (migration 18).
    static func liveDestination(_ d: Download) -> SQLValue {
        d.state.isTerminal || d.destination.path.hasSuffix("/") ? .null : .text(d.destination.path)
    }

    static func clientValues(_ d: Download) -> [SQLValue] {
        let all = values(d)
        return DownloadTable.clientIndices.map { all[$0] }
    }

    static func values(_ d: Download) -> [SQLValue] {
        [
            .text(d.id), .text(d.url), .text(d.destination.path), .text(d.session), .text(d.state.rawValue),
            optional(d.earliestBeginDate), .integer(d.discretionary ? 1 : 0), .real(d.priority),
            optional(d.expectedBytesToSend), optional(d.expectedBytesToReceive), .integer(d.bytesReceived),
            optional(d.bytesExpectedFromOrigin), .integer(Int64(d.attempts)), optional(d.httpStatus.map(Int64.init)),
            optional(d.error?.code), optional(d.error?.message), optional(d.sha256), optional(d.expectedSHA256),
            optional(d.webhookURL), optional(HeaderStorage.text(d.headers)), .integer(d.overwrite ? 1 : 0), optional(d.validator),
            .integer(d.createdAt), optional(d.startedAt), optional(d.finishedAt), .integer(d.runAt),
            optional(d.nextAttemptAt), .text(d.hostKey), optional(d.metadata), .integer(Int64(d.attemptsBeforeRetry)),
            .integer(d.urlRefresh ? 1 : 0), optional(d.awaitingURLSince), .integer(Int64(d.outageAttempts)), optional(d.progressAt),
            optional(d.diskFullSince),
            optional(d.checksum?.description), optional(d.checksumURL), .integer(d.renameOnConflict ? 1 : 0), optional(d.path), optional(d.resourceTimeout),
            optional(JSONArrayColumn.text(d.mirrors)), .integer(Int64(d.connections)), optional(d.maxBytesPerSecond),
            .integer(Int64(d.mirrorIndex)), .integer(Int64(d.mirrorMisses)), optional(RangeProgress.text(d.ranges)),
        ]
    }

    static func download(_ row: some ColumnValues) throws -> Download {
        let errorCode = row.optionalString(14)
        return Download(
            id: row.string(0), url: row.string(1), destination: Destination(stored: row.string(2)), session: row.string(3),
            state: DownloadState(rawValue: row.string(4)) ?? .failed,
            earliestBeginDate: row.optionalInt64(5), discretionary: row.int(6) != 0, priority: row.double(7),
            expectedBytesToSend: row.optionalInt64(8), expectedBytesToReceive: row.optionalInt64(9),
            bytesReceived: row.int64(10), bytesExpectedFromOrigin: row.optionalInt64(11), attempts: row.int(12),
            httpStatus: row.optionalInt(13),
            error: errorCode.map { DownloadError(code: $0, message: row.optionalString(15) ?? "") },
            sha256: row.optionalString(16), expectedSHA256: row.optionalString(17), webhookURL: row.optionalString(18),
            headers: try HeaderStorage.headers(row.optionalString(19)), overwrite: row.int(20) != 0, validator: row.optionalString(21),
            createdAt: row.int64(22), startedAt: row.optionalInt64(23), finishedAt: row.optionalInt64(24),
            runAt: row.int64(25), nextAttemptAt: row.optionalInt64(26), hostKey: row.string(27),
            outageAttempts: row.int(32), progressAt: row.optionalInt64(33), diskFullSince: row.optionalInt64(34),
            metadata: row.optionalString(28), attemptsBeforeRetry: row.int(29), revision: row.int64(Int32(written.count)),
            urlRefresh: row.int(30) != 0, awaitingURLSince: row.optionalInt64(31),
            checksum: try row.optionalString(35).map { try Checksum.parse($0).get() }, checksumURL: row.optionalString(36),
            renameOnConflict: row.int(37) != 0, path: row.optionalString(38), resourceTimeout: row.optionalString(39),
            mirrors: try JSONArrayColumn.items(row.optionalString(40)), connections: row.int(41),
            maxBytesPerSecond: row.optionalInt64(42), mirrorIndex: row.int(43), mirrorMisses: row.int(44),
            ranges: RangeProgress.parse(row.optionalString(45)))
    }

    private static func optional(_ value: Int64?) -> SQLValue { value.map(SQLValue.integer) ?? .null }
    private static func optional(_ value: String?) -> SQLValue { value.map(SQLValue.text) ?? .null }
}
