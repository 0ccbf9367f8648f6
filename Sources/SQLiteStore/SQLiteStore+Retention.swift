import Persistence

/// Housekeeping: rows that have served their purpose are deleted in small batches, so that
/// pruning never holds the write lock for long and the database does not grow under churn
/// (SQLite reuses the freed pages, and the write-ahead log is checkpointed after a pass that
/// deleted something).
extension SQLiteStore {
    static let pruneBatch = 2000

    /// Deletes terminal jobs (with their attempts) finished before `finishedBefore` whose upload to
    /// object storage, if any, is aborted (`uploadsToAbort`), settled webhook
    /// deliveries (and events left without one) before `settledBefore`, idempotency keys made
    /// before `keysBefore`, and the fair-queueing rows of sessions that no longer change anything.
    public func prune(finishedBefore: Int64, settledBefore: Int64, keysBefore: Int64) throws -> Pruned {
        var pruned = Pruned()
        pruned.downloads = try deleteInBatches("""
            DELETE FROM downloads WHERE id IN (SELECT id FROM downloads INDEXED BY downloads_finished
            WHERE (state = 'completed' OR state = 'failed' OR state = 'cancelled') AND finished_at < ? AND object_upload IS NULL
            LIMIT ?)
            """, .integer(finishedBefore))
        pruned.deliveries = try deleteInBatches("""
            DELETE FROM webhook_deliveries WHERE (event_id, url) IN (SELECT event_id, url FROM webhook_deliveries
            WHERE state != 'pending' AND updated_at < ? LIMIT ?)
            """, .integer(settledBefore))
        _ = try deleteInBatches("""
            DELETE FROM webhook_events WHERE id IN (SELECT id FROM webhook_events e WHERE created_at < ?
            AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id) LIMIT ?)
            """, .integer(settledBefore))
        pruned.idempotencyKeys = try deleteInBatches("""
            DELETE FROM idempotency_keys WHERE (principal, key) IN (SELECT principal, key FROM idempotency_keys
            WHERE created_at < ? LIMIT ?)
            """, .integer(keysBefore))
        pruned.idempotencyKeys += try deleteInBatches("""
            DELETE FROM idempotent_batches WHERE (principal, key) IN (SELECT principal, key FROM idempotent_batches
            WHERE created_at < ? LIMIT ?)
            """, .integer(keysBefore))
        // A session's row holds the fair-queueing tag of its last job; the next job's tag is one past
        // the later of it and the virtual time (`FairQueue.tag`). Once the virtual time has caught
        // up with it the row decides nothing — a missing row reads as 0 — so it can go. Without this
        // every session name ever used would stay, which under churn with a session per job or per
        // batch grows without bound. (A scan of the table: small once pruned, ~60 ms a pass at 1M
        // sessions with work still queued.)
        pruned.sessions = try deleteInBatches("""
            DELETE FROM sessions WHERE name IN (SELECT name FROM sessions
            WHERE last_tag <= (SELECT value FROM scheduler_state WHERE key = 'virtual_time') LIMIT ?)
            """)
        // Holds long over: a host's hold lasts at most a day (Retry-After is capped), far less than retention.
        _ = try deleteInBatches("""
            DELETE FROM host_backoffs WHERE host_key IN (SELECT host_key FROM host_backoffs WHERE until < ? LIMIT ?)
            """, .integer(settledBefore))
        if !pruned.isEmpty { try checkpoint() }
        return pruned
    }

    /// Moves the write-ahead log back into the database and truncates it.
    private func checkpoint() throws {
        try withConnection { db in try db.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
    }

    /// Runs `sql`, whose last parameter is the batch size, until a batch deletes fewer rows.
    func deleteInBatches(_ sql: String, _ bindings: SQLValue...) throws -> Int {
        var total = 0
        while true {
            let deleted = try withConnection { db in
                try db.transaction {
                    try db.prepare(sql).run(bindings + [.integer(Int64(Self.pruneBatch))])
                    return db.changes
                }
            }
            total += deleted
            if deleted < Self.pruneBatch { return total }
        }
    }
}
