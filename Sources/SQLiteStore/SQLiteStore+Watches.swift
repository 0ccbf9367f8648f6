import DownloadCore
import Persistence

/// Watches: one row each, changed with their check jobs in one transaction.
extension SQLiteStore {
    public func insertWatch(_ watch: Watch, firstCheck: Download, idempotency: IdempotencyRecord?) throws -> WatchInsertOutcome {
        do {
            return try withConnection { db in
                try db.transaction {
                    if let idempotency, let (digest, id) = try db.prepare(
                        "SELECT body_sha256, id FROM watches WHERE idempotency_principal = ? AND idempotency_key = ?"
                    ).query([.text(idempotency.principal), .text(idempotency.key)], { ($0.string(0), $0.string(1)) }).first {
                        guard digest == idempotency.bodySHA256 else { return .keyMismatch }
                        if let original = try Self.fetchWatch(db, id: id) { return .replayed(original) }
                    }
                    try db.prepare("""
                        INSERT INTO watches (id, destination, state, check_id, body, idempotency_principal, idempotency_key, body_sha256)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (destination) DO NOTHING
                        """).run([
                        .text(watch.id), .text(watch.destination.path), .text(watch.state.rawValue), .text(firstCheck.id), .text(watch.text),
                        idempotency.map { .text($0.principal) } ?? .null, idempotency.map { .text($0.key) } ?? .null,
                        idempotency.map { .text($0.bodySHA256) } ?? .null,
                    ])
                    guard db.changes == 1 else { return .destinationBusy }
                    // A live job at the destination: the watch goes too (the transaction rolls back).
                    guard try insert([NewJob(download: firstCheck, idempotency: nil)], into: db) == [.created] else { throw CheckRefused() }
                    return .created
                }
            }
        } catch is CheckRefused {
            return .destinationBusy
        }
    }

    private struct CheckRefused: Error {}

    public func watch(id: String) throws -> Watch? {
        try withReader { db in try Self.fetchWatch(db, id: id) }
    }

    static func fetchWatch(_ db: SQLiteConnection, id: String) throws -> Watch? {
        try db.prepare("SELECT id, body, revision FROM watches WHERE id = ?").query([.text(id)], readWatch).first ?? nil
    }

    private static func readWatch(_ row: Row) -> Watch? {
        Watch.parse(row.string(1), id: row.string(0), revision: row.int64(2))
    }

    public func watches(limit: Int, cursor: String?) throws -> WatchPage {
        try withReader { db in
            var items = try db.prepare("SELECT id, body, revision FROM watches WHERE id < ? ORDER BY id DESC LIMIT ?")
                .query([cursor.map(SQLValue.text) ?? .text("\u{10FFFF}"), .integer(Int64(limit + 1))], Self.readWatch).compactMap { $0 }
            var next: String?
            if items.count > limit {
                items.removeLast()
                next = items.last?.id
            }
            return WatchPage(items: items, nextCursor: next)
        }
    }

    public func watchCount() throws -> Int {
        try withReader { db in try db.prepare("SELECT COUNT(*) FROM watches").query { $0.int(0) }.first ?? 0 }
    }

    public func watchesWithoutLiveCheck(limit: Int) throws -> [String] {
        try withReader { db in
            try db.prepare("""
                SELECT id FROM watches w WHERE state = 'active' AND NOT EXISTS (SELECT 1 FROM downloads d WHERE d.id = w.check_id
                AND (d.state = 'queued' OR d.state = 'running' OR d.state = 'paused')) LIMIT ?
                """).query([.integer(Int64(limit))]) { $0.string(0) }
        }
    }

    /// `StoreChange.watch` in the caller's transaction: false when there is no such watch or its
    /// change writes nothing.
    func apply(_ change: WatchChange, _ db: SQLiteConnection) throws -> Bool {
        guard let watch = try Self.fetchWatch(db, id: change.id) else { return false }
        let checkState = try watch.checkID.flatMap {
            try db.prepare("SELECT state FROM downloads WHERE id = ?").query([.text($0)]) { $0.string(0) }.first
        }.flatMap(DownloadState.init(rawValue:))
        guard let write = try change.write(watch, checkState) else { return false }
        if let updated = write.watch {
            try db.prepare("UPDATE watches SET state = ?, check_id = ?, body = ?, revision = revision + 1 WHERE id = ?")
                .run([.text(updated.state.rawValue), updated.checkID.map(SQLValue.text) ?? .null, .text(updated.text), .text(watch.id)])
        } else {
            try db.prepare("DELETE FROM watches WHERE id = ?").run([.text(watch.id)])
        }
        // A destination taken meanwhile leaves the watch without a live check; `watchesWithoutLiveCheck` finds it.
        if let check = write.newCheck { _ = try insert([NewJob(download: check, idempotency: nil)], into: db) }
        if let (id, runAt) = write.reschedule {
            // The check waits for its next time as a new arrival, with a fair-queueing tag of now:
            // with its first one it would stay ahead of every job that came after it, for ever.
            try db.prepare("""
                UPDATE downloads SET run_at = ?1, earliest_begin_at = ?1, next_attempt_at = NULL, due = 0, revision = revision + 1,
                fair_tag = (SELECT value FROM scheduler_state WHERE key = 'virtual_time') + 1
                WHERE id = ?2 AND state = 'queued'
                """).run([.integer(runAt), .text(id)])
        }
        try Self.record(db, events: write.events, now: write.now)
        return true
    }
}
