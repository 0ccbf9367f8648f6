import DownloadCore
import Persistence

/// The webhook outbox: events written in the transaction of the change that causes them, one
/// delivery per event and URL.
extension PostgresStore {
    static func record(_ db: PostgresConnection, events: [WebhookEvent], now: Int64) throws {
        for event in events where !event.urls.isEmpty {
            try db.run("INSERT INTO webhook_events (id, type, payload, created_at, session) VALUES ($1, $2, $3, $4, $5)",
                       [.text(event.id), .text(event.type), .bytes(event.payload), .integer(now), .text(event.session)])
            try db.run("""
                INSERT INTO webhook_deliveries (event_id, url, state, next_attempt_at, updated_at)
                SELECT $1, url, 'pending', $3, $3 FROM unnest($2::text[]) AS url
                """, [.text(event.id), .textArray(Array(Set(event.urls))), .integer(now)])
        }
    }

    /// Pending deliveries that are due, oldest first, leaving out those already in flight and a
    /// `session.finished` whose URL still has earlier events of the same session to settle.
    public func dueDeliveries(now: Int64, limit: Int, excluding inFlight: Set<String>) throws -> [WebhookDelivery] {
        let rows = try read { db in
            try db.query("""
                SELECT d.event_id, d.url, e.type, e.payload, d.attempts FROM webhook_deliveries d
                JOIN webhook_events e ON e.id = d.event_id
                WHERE d.state = 'pending' AND d.next_attempt_at <= $1
                AND (e.type <> 'session.finished' OR NOT EXISTS (
                    SELECT 1 FROM webhook_events pe JOIN webhook_deliveries p ON p.event_id = pe.id AND p.url = d.url
                    WHERE pe.session = e.session AND pe.id < e.id AND p.state = 'pending'))
                ORDER BY d.next_attempt_at, d.event_id LIMIT $2
                """, [.integer(now), .integer(Int64(limit + inFlight.count))]) {
                WebhookDelivery(eventID: $0.string(0), url: $0.string(1), type: $0.string(2), payload: $0.bytes(3), attempts: $0.int(4))
            }
        }
        return Array(rows.filter { !inFlight.contains($0.key) }.prefix(limit))
    }

    /// When the next pending delivery that is not yet due becomes due.
    public func nextDeliveryAt(after now: Int64) throws -> Int64? {
        try read { db in
            try db.query("SELECT MIN(next_attempt_at) FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at > $1",
                         [.integer(now)]) { $0.optionalInt64(0) }.first ?? nil
        }
    }

    public func recordDeliveryAttempts(_ attempts: [DeliveryAttempt]) throws {
        guard !attempts.isEmpty else { return }
        try write { db in
            for attempt in attempts {
                let state = attempt.delivered ? "delivered" : (attempt.retryAt == nil ? "failed" : "pending")
                try db.run("""
                    UPDATE webhook_deliveries SET state = $1, attempts = attempts + 1, next_attempt_at = $2, last_status = $3,
                    last_error = $4, updated_at = $5 WHERE event_id = $6 AND url = $7 AND state = 'pending'
                    """, [.text(state), .integer(attempt.retryAt ?? attempt.now), .optional(attempt.status), .optional(attempt.error),
                          .integer(attempt.now), .text(attempt.delivery.eventID), .text(attempt.delivery.url)])
            }
        }
    }
}
