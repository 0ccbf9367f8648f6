import DownloadCore
import Persistence

/// Watches: one row each, changed with their check jobs in one transaction. A change locks the
/// watch's row (`FOR UPDATE`), so nodes settling, steering or repairing one watch take turns.
extension PostgresStore {
    public func insertWatch(_ watch: Watch, firstCheck: Download, idempotency: IdempotencyRecord?) throws -> WatchInsertOutcome {
        do {
            return try writeAnnouncingWork { db in
                if let idempotency, let outcome = try Self.keyedWatch(db, idempotency) { return outcome }
                let inserted = try db.run("""
                    INSERT INTO watches (id, destination, state, check_id, body, idempotency_principal, idempotency_key, body_sha256)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING
                    """, [.text(watch.id), .text(watch.destination.path), .text(watch.state.rawValue), .text(firstCheck.id), .text(watch.text),
                          .optional(idempotency?.principal), .optional(idempotency?.key), .optional(idempotency?.bodySHA256)])
                guard inserted == 1 else {
                    // The key, taken by another node's request just now, or the destination.
                    if let idempotency, let outcome = try Self.keyedWatch(db, idempotency) { return outcome }
                    return .destinationBusy
                }
                // A live job at the destination: the watch goes too (the transaction rolls back).
                guard try insert([NewJob(download: firstCheck, idempotency: nil)], into: db) == [.created] else { throw CheckRefused() }
                return .created
            }
        } catch is CheckRefused {
            return .destinationBusy
        }
    }

    private struct CheckRefused: Error {}

    /// What an idempotency key already made: the watch again, or a mismatch; nil for a new key.
    private static func keyedWatch(_ db: PostgresConnection, _ idempotency: IdempotencyRecord) throws -> WatchInsertOutcome? {
        guard let (digest, watch) = try db.query("""
            SELECT body_sha256, id, body, revision FROM watches WHERE idempotency_principal = $1 AND idempotency_key = $2
            """, [.text(idempotency.principal), .text(idempotency.key)], { ($0.string(0), readWatch($0, from: 1)) }).first else { return nil }
        guard digest == idempotency.bodySHA256 else { return .keyMismatch }
        return watch.map { .replayed($0) }
    }

    public func watch(id: String) throws -> Watch? {
        try read { db in try Self.fetchWatch(db, id: id, locking: false) }
    }

    private static func fetchWatch(_ db: PostgresConnection, id: String, locking: Bool) throws -> Watch? {
        try db.query("SELECT id, body, revision FROM watches WHERE id = $1\(locking ? " FOR UPDATE" : "")", [.text(id)]) {
            readWatch($0, from: 0)
        }.first ?? nil
    }

    /// The watch in `id`, `body`, `revision` from column `first` on.
    private static func readWatch(_ row: PostgresRow, from first: Int32) -> Watch? {
        Watch.parse(row.string(first + 1), id: row.string(first), revision: row.int64(first + 2))
    }

    public func watches(limit: Int, cursor: String?) throws -> WatchPage {
        try read { db in
            var items = try db.query("""
                SELECT id, body, revision FROM watches WHERE ($1::text IS NULL OR id < $1) ORDER BY id DESC LIMIT $2
                """, [.optional(cursor), .integer(Int64(limit + 1))]) { Self.readWatch($0, from: 0) }.compactMap { $0 }
            var next: String?
            if items.count > limit {
                items.removeLast()
                next = items.last?.id
            }
            return WatchPage(items: items, nextCursor: next)
        }
    }

    public func watchCount() throws -> Int {
        try read { db in try db.query("SELECT COUNT(*) FROM watches") { $0.int(0) }.first ?? 0 }
    }

    public func watchesWithoutLiveCheck(limit: Int) throws -> [String] {
        try read { db in
            try db.query("""
                SELECT id FROM watches w WHERE state = 'active' AND NOT EXISTS (SELECT 1 FROM downloads d WHERE d.id = w.check_id
                AND d.state IN ('queued','running','paused')) LIMIT $1
                """, [.integer(Int64(limit))]) { $0.string(0) }
        }
    }

    /// `StoreChange.watch` in the caller's transaction: false when there is no such watch or its
    /// change writes nothing.
    func apply(_ change: WatchChange, _ db: PostgresConnection) throws -> Bool {
        guard let watch = try Self.fetchWatch(db, id: change.id, locking: true) else { return false }
        let checkState = try watch.checkID.flatMap {
            try db.query("SELECT state FROM downloads WHERE id = $1", [.text($0)]) { $0.string(0) }.first
        }.flatMap(DownloadState.init(rawValue:))
        guard let write = try change.write(watch, checkState) else { return false }
        if let updated = write.watch {
            try db.run("UPDATE watches SET state = $2, check_id = $3, body = $4, revision = revision + 1 WHERE id = $1",
                       [.text(watch.id), .text(updated.state.rawValue), .optional(updated.checkID), .text(updated.text)])
        } else {
            try db.run("DELETE FROM watches WHERE id = $1", [.text(watch.id)])
        }
        // A destination taken meanwhile leaves the watch without a live check; `watchesWithoutLiveCheck` finds it.
        if let check = write.newCheck { _ = try insert([NewJob(download: check, idempotency: nil)], into: db) }
        if let (id, runAt) = write.reschedule {
            // The check waits for its next time as a new arrival, with a fair-queueing tag of now:
            // with its first one it would stay ahead of every job that came after it, for ever.
            try db.run("""
                UPDATE downloads SET run_at = $2, earliest_begin_at = $2, next_attempt_at = NULL, due = false, revision = revision + 1,
                fair_tag = (SELECT value FROM scheduler_state WHERE key = 'virtual_time') + 1
                WHERE id = $1 AND state = 'queued'
                """, [.text(id), .integer(runAt)])
        }
        try Self.record(db, events: write.events, now: write.now)
        return true
    }
}
