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
    /// `session.finished` whose URL still has earlier events of the same session to settle. Each
    /// is leased to this node (for `deliveryLease`, or until the node is found dead), so no other
    /// node sends it meanwhile; a lease that lapses makes it due again (at least once).
    public func dueDeliveries(now: Int64, limit: Int, excluding inFlight: Set<String>) throws -> [WebhookDelivery] {
        let rows = try write { db in
            try db.query("""
                WITH picked AS (
                    SELECT d.event_id, d.url FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
                    WHERE d.state = 'pending' AND d.next_attempt_at <= $1
                    AND (d.lease_owner IS NULL OR d.leased_until <= $1 OR d.lease_owner = $3 OR d.lease_owner NOT IN (SELECT id FROM nodes))
                    AND (e.type <> 'session.finished' OR NOT EXISTS (
                        SELECT 1 FROM webhook_events pe JOIN webhook_deliveries p ON p.event_id = pe.id AND p.url = d.url
                        WHERE pe.session = e.session AND pe.id < e.id AND p.state = 'pending'))
                    ORDER BY d.next_attempt_at, d.event_id LIMIT $2 FOR UPDATE OF d SKIP LOCKED)
                UPDATE webhook_deliveries d SET lease_owner = $3, leased_until = $1 + $4
                FROM picked, webhook_events e
                WHERE d.event_id = picked.event_id AND d.url = picked.url AND e.id = d.event_id
                RETURNING d.event_id, d.url, e.type, e.payload, d.attempts, d.next_attempt_at
                """, [.integer(now), .integer(Int64(limit + inFlight.count)), .text(membership.id), .integer(Self.deliveryLease)]) {
                (next: $0.int64(5), delivery: WebhookDelivery(eventID: $0.string(0), url: $0.string(1), type: $0.string(2),
                                                              payload: $0.bytes(3), attempts: $0.int(4)))
            }
        }
        let ordered = rows.sorted { ($0.next, $0.delivery.eventID) < ($1.next, $1.delivery.eventID) }.map(\.delivery)
        return Array(ordered.filter { !inFlight.contains($0.key) }.prefix(limit))
    }

    /// How long a node may take over one delivery before the others may send it too.
    static let deliveryLease: Int64 = 60_000

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
                    last_error = $4, updated_at = $5, lease_owner = NULL, leased_until = 0
                    WHERE event_id = $6 AND url = $7 AND state = 'pending' AND (lease_owner IS NULL OR lease_owner = $8)
                    """, [.text(state), .integer(attempt.retryAt ?? attempt.now), .optional(attempt.status), .optional(attempt.error),
                          .integer(attempt.now), .text(attempt.delivery.eventID), .text(attempt.delivery.url), .text(membership.id)])
            }
        }
    }
}
