import Persistence

/// Housekeeping: rows that have served their purpose are deleted in small batches, each its own
/// transaction, so pruning never holds locks for long. Autovacuum reclaims the space (the jobs
/// table is tuned to vacuum early).
extension PostgresStore {
    static let pruneBatch = 2000

    /// Deletes terminal jobs (with their attempts) finished before `finishedBefore`, settled webhook
    /// deliveries (and events left without one) before `settledBefore`, idempotency keys made
    /// before `keysBefore`, and the fair-queueing rows of sessions the virtual time has passed
    /// (a missing row reads as tag 0, which gives the same next tag; see `SQLiteStore.prune`).
    public func prune(finishedBefore: Int64, settledBefore: Int64, keysBefore: Int64) throws -> Pruned {
        var pruned = Pruned()
        pruned.downloads = try deleteInBatches("""
            DELETE FROM downloads WHERE id IN (SELECT id FROM downloads
            WHERE state IN ('completed','failed','cancelled') AND finished_at < $1 AND object_upload IS NULL LIMIT $2)
            """, finishedBefore)
        pruned.deliveries = try deleteInBatches("""
            DELETE FROM webhook_deliveries WHERE (event_id, url) IN (SELECT event_id, url FROM webhook_deliveries
            WHERE state <> 'pending' AND updated_at < $1 LIMIT $2)
            """, settledBefore)
        _ = try deleteInBatches("""
            DELETE FROM webhook_events WHERE id IN (SELECT id FROM webhook_events e WHERE created_at < $1
            AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id) LIMIT $2)
            """, settledBefore)
        pruned.idempotencyKeys = try deleteInBatches("""
            DELETE FROM idempotency_keys WHERE (principal, key) IN (SELECT principal, key FROM idempotency_keys
            WHERE created_at < $1 LIMIT $2)
            """, keysBefore)
        pruned.idempotencyKeys += try deleteInBatches("""
            DELETE FROM idempotent_batches WHERE (principal, key) IN (SELECT principal, key FROM idempotent_batches
            WHERE created_at < $1 LIMIT $2)
            """, keysBefore)
        pruned.sessions = try deleteInBatches("""
            DELETE FROM sessions WHERE name IN (SELECT name FROM sessions
            WHERE last_tag <= (SELECT value FROM scheduler_state WHERE key = 'virtual_time') LIMIT $1)
            """)
        // Counts of running jobs that went back to zero (a node and host that run nothing now). The
        // outer `count = 0` is checked again on a row a concurrent transaction changed meanwhile.
        _ = try deleteInBatches("""
            DELETE FROM running_counts WHERE count = 0 AND (lease_owner, host_key) IN (SELECT lease_owner, host_key
            FROM running_counts WHERE count = 0 LIMIT $1)
            """)
        // A session's counts are spread over shards that only sum to its jobs (one shard's +1, another's
        // -1): folded into shard 0 — each row deleted gives its count as deleted, so nothing a
        // concurrent change added is lost — and the folds that came to zero deleted.
        for (table, key) in [("session_counts", "state"), ("session_webhooks", "webhook_url")] {
            _ = try write { db in
                try db.run("""
                    WITH folded AS (
                        DELETE FROM \(table) WHERE shard <> 0 AND (session, \(key), shard) IN (SELECT session, \(key), shard
                        FROM \(table) WHERE shard <> 0 LIMIT $1)
                        RETURNING session, \(key), count
                    )
                    INSERT INTO \(table) (session, \(key), shard, count)
                    SELECT session, \(key), 0, SUM(count) FROM folded GROUP BY 1, 2 ORDER BY 1, 2
                    ON CONFLICT (session, \(key), shard) DO UPDATE SET count = \(table).count + EXCLUDED.count
                    """, [.integer(Int64(Self.pruneBatch))])
            }
            _ = try deleteInBatches("""
                DELETE FROM \(table) WHERE count = 0 AND (session, \(key), shard) IN (SELECT session, \(key), shard
                FROM \(table) WHERE count = 0 LIMIT $1)
                """)
        }
        // Holds long over: a host's hold lasts at most a day (Retry-After is capped), far less than retention.
        _ = try deleteInBatches("""
            DELETE FROM host_backoffs WHERE host_key IN (SELECT host_key FROM host_backoffs WHERE until < $1 LIMIT $2)
            """, settledBefore)
        return pruned
    }

    /// Runs `sql` (parameters: `bounds`, then the batch size) until a batch deletes fewer rows.
    func deleteInBatches(_ sql: String, _ bounds: Int64...) throws -> Int {
        var total = 0
        while true {
            let deleted = try write { db in try db.run(sql, (bounds + [Int64(Self.pruneBatch)]).map(PostgresValue.integer)) }
            total += deleted
            if deleted < Self.pruneBatch { return total }
        }
    }
}
