import DownloadCore
import Persistence

extension SQLiteStore {
    static func record(_ db: SQLiteConnection, events: [WebhookEvent], now: Int64) throws {
        for event in events where !event.urls.isEmpty {
            try db.prepare("INSERT INTO webhook_events (id, type, payload, created_at, session) VALUES (?, ?, ?, ?, ?)")
                .run([.text(event.id), .text(event.type), .blob(event.payload), .integer(now), .text(event.session)])
            for url in Set(event.urls) {
                try db.prepare(
                    "INSERT INTO webhook_deliveries (event_id, url, state, next_attempt_at, updated_at) VALUES (?, ?, 'pending', ?, ?)"
                ).run([.text(event.id), .text(url), .integer(now), .integer(now)])
            }
        }
    }

    /// Pending deliveries that are due, oldest first, leaving out those already in flight and a
    /// `session.finished` whose URL still has earlier events of the same session to settle. Read
    /// on a reader, like `nextDeliveryAt`: the dispatcher scans after every committed batch of
    /// settlements, and on the writer's connection each scan waited for, and held up, the
    /// scheduler's next commit (the writer's lock was the webhooks' most contended call).
    public func dueDeliveries(now: Int64, limit: Int, excluding inFlight: Set<String>) throws -> [WebhookDelivery] {
        try withReader { db in
            // The deliveries in flight (up to 32 while small files complete) are left out on the due
            // index alone, which holds `event_id` and `url` (their `WebhookDelivery.key`, spelled in
            // SQL): neither their rows nor their events are read (a scan took ~104 µs when they
            // were read and then skipped here).
            try db.prepare("""
                SELECT d.event_id, d.url, e.type, e.payload, d.attempts FROM webhook_deliveries d INDEXED BY webhook_deliveries_due
                JOIN webhook_events e ON e.id = d.event_id
                WHERE d.state = 'pending' AND d.next_attempt_at <= ?
                AND d.event_id || ' ' || d.url NOT IN (SELECT value FROM json_each(?))
                -- session.finished waits until every earlier event of its session to the same URL is settled.
                AND (e.type != 'session.finished' OR NOT EXISTS (
                    SELECT 1 FROM webhook_events pe JOIN webhook_deliveries p ON p.event_id = pe.id AND p.url = d.url
                    WHERE pe.session = e.session AND pe.id < e.id AND p.state = 'pending'))
                ORDER BY d.next_attempt_at, d.event_id LIMIT ?
                """).query([.integer(now), .text(JSONString.array(Array(inFlight))), .integer(Int64(limit))]) { row in
                WebhookDelivery(eventID: row.string(0), url: row.string(1), type: row.string(2), payload: row.blob(3),
                                attempts: row.int(4))
            }
        }
    }

    /// When the next pending delivery that is not yet due becomes due.
    public func nextDeliveryAt(after now: Int64) throws -> Int64? {
        try withReader { db in
            try db.prepare("SELECT MIN(next_attempt_at) FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at > ?")
                .query([.integer(now)]) { $0.optionalInt64(0) }.first ?? nil
        }
    }

    public func recordDeliveryAttempts(_ attempts: [DeliveryAttempt]) throws {
        guard !attempts.isEmpty else { return }
        try withConnection { db in
            try db.transaction {
                for attempt in attempts {
                    let state = attempt.delivered ? "delivered" : (attempt.retryAt == nil ? "failed" : "pending")
                    try db.prepare("""
                        UPDATE webhook_deliveries SET state = ?, attempts = attempts + 1, next_attempt_at = ?, last_status = ?,
                        last_error = ?, updated_at = ? WHERE event_id = ? AND url = ? AND state = 'pending'
                        """).run([.text(state), .integer(attempt.retryAt ?? attempt.now), attempt.status.map { .integer(Int64($0)) } ?? .null,
                                  attempt.error.map(SQLValue.text) ?? .null, .integer(attempt.now),
                                  .text(attempt.delivery.eventID), .text(attempt.delivery.url)])
                }
            }
        }
    }
}
