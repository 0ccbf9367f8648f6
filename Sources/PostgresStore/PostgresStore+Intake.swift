import DownloadCore
import Persistence

/// Intake: each job honours its idempotency key and the one-live-job-per-destination rule
/// atomically, across nodes. A failed statement would abort the whole PostgreSQL transaction
/// (the batch), so conflicts are taken with `ON CONFLICT … DO NOTHING`, never caught as errors.
extension PostgresStore {
    public func insert(_ jobs: [NewJob]) throws -> [InsertOutcome] {
        guard !jobs.isEmpty else { return [] }
        return try writeAnnouncingWork { db in try jobs.map { try self.insert($0.download, idempotency: $0.idempotency, into: db) } }
    }

    func insert(_ download: Download, idempotency: IdempotencyRecord?, into db: PostgresConnection) throws -> InsertOutcome {
        var keyIsNew = false
        if let idempotency {
            // The key first: a node inserting the same key meanwhile waits here for this
            // transaction, then finds the key and replays this job.
            keyIsNew = try !db.query("""
                INSERT INTO idempotency_keys (principal, key, body_sha256, download_id, created_at) VALUES ($1, $2, $3, $4, $5)
                ON CONFLICT (principal, key) DO NOTHING RETURNING 1
                """, [.text(idempotency.principal), .text(idempotency.key), .text(idempotency.bodySHA256),
                      .text(download.id), .integer(download.createdAt)]) { _ in true }.isEmpty
            if !keyIsNew, let (bodySHA256, id) = try Self.existingKey(db, idempotency) {
                guard bodySHA256 == idempotency.bodySHA256 else { return .keyMismatch }
                if let original = try Self.fetch(db, id: id) { return .replayed(original) }
            }
        }
        let tag = try Self.nextFairTag(db, session: download.session)
        let inserted = try db.query("""
            INSERT INTO downloads (\(JobColumns.insertList), lane, fair_tag)
            VALUES (\(JobColumns.placeholders), $\(JobColumns.written.count + 1), $\(JobColumns.written.count + 2))
            ON CONFLICT (destination) WHERE state IN ('queued','running','paused') AND destination NOT LIKE '%/' DO NOTHING RETURNING 1
            """, JobColumns.values(download) + [.integer(download.discretionary ? 1 : 0), .integer(tag)]) { _ in true }
        guard !inserted.isEmpty else {
            if keyIsNew, let idempotency {
                try db.run("DELETE FROM idempotency_keys WHERE principal = $1 AND key = $2", [.text(idempotency.principal), .text(idempotency.key)])
            }
            return .destinationBusy
        }
        try db.run("""
            INSERT INTO sessions (name, last_tag) VALUES ($1, $2)
            ON CONFLICT (name) DO UPDATE SET last_tag = GREATEST(sessions.last_tag, EXCLUDED.last_tag)
            """, [.text(download.session), .integer(tag)])
        try stateLog.append(db, [download])
        if !keyIsNew, let idempotency {
            // The key's job has been pruned: the key now names the new one, as if it were new.
            try db.run("""
                UPDATE idempotency_keys SET body_sha256 = $3, download_id = $4, created_at = $5 WHERE principal = $1 AND key = $2
                """, [.text(idempotency.principal), .text(idempotency.key), .text(idempotency.bodySHA256),
                      .text(download.id), .integer(download.createdAt)])
        }
        return .created(download)
    }

    private static func existingKey(_ db: PostgresConnection, _ idempotency: IdempotencyRecord) throws -> (String, String)? {
        try db.query("SELECT body_sha256, download_id FROM idempotency_keys WHERE principal = $1 AND key = $2",
                     [.text(idempotency.principal), .text(idempotency.key)]) { ($0.string(0), $0.string(1)) }.first
    }

    /// The body digest and the job an idempotency key made, if the key is known.
    public func idempotentDownload(principal: String, key: String) throws -> (bodySHA256: String, download: Download)? {
        try read { db in
            guard let (digest, id) = try Self.existingKey(db, IdempotencyRecord(principal: principal, key: key, bodySHA256: "")),
                  let download = try Self.fetch(db, id: id) else { return nil }
            return (digest, download)
        }
    }

    /// A session's next fair-queueing tag (`FairQueue.tag`), from its last tag and the virtual time.
    static func nextFairTag(_ db: PostgresConnection, session: String) throws -> Int64 {
        let (last, virtualTime) = try db.query("""
            SELECT COALESCE((SELECT last_tag FROM sessions WHERE name = $1), 0),
                   (SELECT value FROM scheduler_state WHERE key = 'virtual_time')
            """, [.text(session)]) { ($0.int64(0), $0.int64(1)) }.first ?? (0, 0)
        return FairQueue.tag(sessionLastTag: last, virtualTime: virtualTime)
    }
}
