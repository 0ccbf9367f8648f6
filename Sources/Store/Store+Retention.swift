/// Housekeeping: rows that have served their purpose are deleted in small batches, so that
/// pruning never holds the write lock for long and the database does not grow under churn
/// (SQLite reuses the freed pages).
extension Store {
    public struct Pruned: Sendable, Equatable {
        public var downloads = 0
        public var deliveries = 0
        public var idempotencyKeys = 0

        public init(downloads: Int = 0, deliveries: Int = 0, idempotencyKeys: Int = 0) {
            self.downloads = downloads
            self.deliveries = deliveries
            self.idempotencyKeys = idempotencyKeys
        }

        public var isEmpty: Bool { downloads == 0 && deliveries == 0 && idempotencyKeys == 0 }
    }

    static let pruneBatch = 2000

    /// Deletes terminal jobs (with their attempts) finished before `finishedBefore`, settled webhook
    /// deliveries (and events left without one) before `settledBefore`, and idempotency keys made
    /// before `keysBefore`.
    public func prune(finishedBefore: Int64, settledBefore: Int64, keysBefore: Int64) throws -> Pruned {
        var pruned = Pruned()
        pruned.downloads = try deleteInBatches("""
            DELETE FROM downloads WHERE id IN (SELECT id FROM downloads
            WHERE state IN ('completed','failed','cancelled') AND finished_at < ? LIMIT ?)
            """, before: finishedBefore)
        pruned.deliveries = try deleteInBatches("""
            DELETE FROM webhook_deliveries WHERE (event_id, url) IN (SELECT event_id, url FROM webhook_deliveries
            WHERE state != 'pending' AND updated_at < ? LIMIT ?)
            """, before: settledBefore)
        _ = try deleteInBatches("""
            DELETE FROM webhook_events WHERE id IN (SELECT id FROM webhook_events e WHERE created_at < ?
            AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id) LIMIT ?)
            """, before: settledBefore)
        pruned.idempotencyKeys = try deleteInBatches("""
            DELETE FROM idempotency_keys WHERE (principal, key) IN (SELECT principal, key FROM idempotency_keys
            WHERE created_at < ? LIMIT ?)
            """, before: keysBefore)
        return pruned
    }

    /// Moves the write-ahead log back into the database and truncates it.
    public func checkpoint() throws {
        try withConnection { db in try db.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
    }

    private func deleteInBatches(_ sql: String, before cutoff: Int64) throws -> Int {
        var total = 0
        while true {
            let deleted = try withConnection { db in
                try db.transaction {
                    try db.prepare(sql).run([.integer(cutoff), .integer(Int64(Self.pruneBatch))])
                    return db.changes
                }
            }
            total += deleted
            if deleted < Self.pruneBatch { return total }
        }
    }
}
