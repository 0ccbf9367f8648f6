import DownloadCore
import Persistence

/// Steering after submit (PATCH, session actions, batches, the event log) is not yet built on
/// PostgreSQL: these answer with an error, which the API turns into 503.
extension PostgresStore {
    static let steeringNotBuilt = PostgresError(message: "not yet supported on PostgreSQL", sqlState: nil, sql: nil)

    public func insertBatch(_ jobs: [NewJob], idempotency: IdempotencyRecord?, now: Int64,
                            answer: ([InsertOutcome]) -> [UInt8]) throws -> BatchInsertOutcome {
        throw Self.steeringNotBuilt
    }

    public func change(_ download: Download, expectingRevision revision: Int64) throws -> Download? {
        throw Self.steeringNotBuilt
    }

    public func act(_ action: SessionAction) throws -> SessionActionResult {
        throw Self.steeringNotBuilt
    }

    public func loggedEvents(after sequence: Int64, session: String?, limit: Int) throws -> [LoggedEvent] {
        throw Self.steeringNotBuilt
    }

    public func eventLogSpan() throws -> EventLogSpan {
        throw Self.steeringNotBuilt
    }

    public func pruneEventLog(before: Int64, keepingLast: Int) throws -> Int {
        throw Self.steeringNotBuilt
    }
}
