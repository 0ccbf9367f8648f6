import DownloadCore
import Persistence

/// The API's and the metrics' reads, on the reading connections.
extension PostgresStore {
    public func download(id: String) throws -> Download? {
        try read { db in try Self.fetch(db, id: id) }
    }

    public func uploadsToAbort(failedBefore keptUntil: Int64, limit: Int) throws -> [Download] {
        try read { db in
            try db.query("""
                SELECT \(JobColumns.list) FROM downloads WHERE object_upload IS NOT NULL
                AND (state IN ('completed','cancelled') OR (state = 'failed' AND (bytes_received = 0 OR finished_at < $1)))
                LIMIT $2
                """, [.integer(keptUntil), .integer(Int64(limit))], JobColumns.download)
        }
    }

    static func fetch(_ db: PostgresConnection, id: String) throws -> Download? {
        try db.query("SELECT \(JobColumns.list) FROM downloads WHERE id = $1", [.text(id)], JobColumns.download).first
    }

    /// Jobs of `kind`, newest first; the cursor is the id of the last item of the previous page (ids
    /// sort by creation).
    public func list(kind: Direction, state: DownloadState?, session: String?, limit: Int, cursor: String?) throws -> DownloadPage {
        var conditions = [kind == .upload ? "upload IS NOT NULL" : "upload IS NULL"]
        var values: [PostgresValue] = []
        func condition(_ sql: String, _ value: PostgresValue) {
            values.append(value)
            conditions.append(sql + " $\(values.count)")
        }
        if let state { condition("state =", .text(state.rawValue)) }
        if let session { condition("session =", .text(session)) }
        if let cursor { condition("id <", .text(cursor)) }
        let filter = "WHERE " + conditions.joined(separator: " AND ")
        values.append(.integer(Int64(limit + 1)))
        let sql = "SELECT \(JobColumns.list) FROM downloads \(filter) ORDER BY id DESC LIMIT $\(values.count)"
        var items = try read { db in try db.query(sql, values, JobColumns.download) }
        var next: String?
        if items.count > limit {
            items.removeLast()
            next = items.last?.id
        }
        return DownloadPage(items: items, nextCursor: next)
    }

    /// The attempts of a job, oldest first.
    public func attempts(of id: String) throws -> [AttemptRecord] {
        try read { db in
            try db.query("""
                SELECT number, started_at, ended_at, outcome, error_code, error_message, http_status, bytes_transferred, bytes_on_disk,
                url FROM download_attempts WHERE download_id = $1 ORDER BY number
                """, [.text(id)]) { row in
                AttemptRecord(
                    number: row.int(0), startedAt: row.int64(1), endedAt: row.int64(2), outcome: row.string(3),
                    error: row.optionalString(4).map { DownloadError(code: $0, message: row.optionalString(5) ?? "") },
                    httpStatus: row.optionalInt(6), bytesTransferred: row.int64(7), bytesOnDisk: row.int64(8),
                    url: row.optionalString(9))
            }
        }
    }

    /// Jobs by state: of one session (counted), or of all (the sum of the kept shards, O(1)).
    public func counts(session: String?) throws -> [DownloadState: Int] {
        try read { db in
            if let session { return try Self.counts(db, session: session) }
            return Self.countsByState(try db.query("SELECT state, SUM(count) FROM job_counts GROUP BY state") { ($0.string(0), $0.int(1)) })
        }
    }

    /// From an index of the uploads alone.
    public func uploadCounts() throws -> [DownloadState: Int] {
        try read { db in
            Self.countsByState(try db.query("SELECT state, COUNT(*) FROM downloads WHERE upload IS NOT NULL GROUP BY state") {
                ($0.string(0), $0.int(1))
            })
        }
    }

    /// From session_counts, which the jobs table's triggers keep: counting the jobs would read every
    /// job the session ever had, each time one of its runs finishes.
    static func counts(_ db: PostgresConnection, session: String) throws -> [DownloadState: Int] {
        countsByState(try db.query("SELECT state, SUM(count) FROM session_counts WHERE session = $1 GROUP BY state",
                                   [.text(session)]) { ($0.string(0), $0.int(1)) })
    }

    private static func countsByState(_ rows: [(String, Int)]) -> [DownloadState: Int] {
        var counts = Dictionary(uniqueKeysWithValues: DownloadState.allCases.map { ($0, 0) })
        for (state, count) in rows { if let state = DownloadState(rawValue: state) { counts[state] = count } }
        return counts
    }

    /// Queued jobs by why they wait: backing off after a failure, waiting for their date, or due.
    public func queueDepth() throws -> QueueDepth {
        try read { db in
            var depth = QueueDepth()
            let rows = try db.query("""
                SELECT due, next_attempt_at IS NOT NULL, COUNT(*) FROM downloads WHERE state = 'queued' GROUP BY 1, 2
                """) { ($0.bool(0), $0.bool(1), $0.int(2)) }
            for (due, retrying, count) in rows { depth.add(count, due: due, retrying: retrying) }
            return depth
        }
    }

    /// Webhook deliveries not yet settled, and when the oldest of their events happened.
    public func webhookBacklog() throws -> WebhookBacklog {
        try read { db in
            try db.query("""
                SELECT COUNT(*), MIN(e.created_at) FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
                WHERE d.state = 'pending'
                """) { WebhookBacklog(pending: $0.int(0), oldestEventAt: $0.optionalInt64(1)) }.first
                ?? WebhookBacklog(pending: 0, oldestEventAt: nil)
        }
    }
}
