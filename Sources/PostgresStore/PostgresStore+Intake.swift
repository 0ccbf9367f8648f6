import DownloadCore
import Persistence

/// Intake: each job honours its idempotency key and the one-live-job-per-destination rule
/// atomically, across nodes. A failed statement would abort the whole PostgreSQL transaction
/// (the batch), so conflicts are taken with `ON CONFLICT … DO NOTHING`, never caught as errors.
/// A batch of jobs without keys costs one INSERT, a read per session it names, and two more
/// statements: the sessions' last tags and the event log, written once for all its jobs.
extension PostgresStore {
    public func insert(_ jobs: [NewJob]) throws -> [InsertOutcome] {
        guard !jobs.isEmpty else { return [] }
        return try write { db in
            let outcomes = try insert(jobs, into: db)
            if outcomes.ofCreated(jobs, Self.isDueSoon).contains(true) { try announcer.announce(db) }
            return outcomes
        }
    }

    /// Other nodes are woken only for jobs due within two of their polls (every node runs a claim
    /// pass each 0.5 s heartbeat, which reads when the queue next changes), so a job due later
    /// is on their timers before it is due. (Waking them for every far-future POST cost each
    /// node a claim pass per announcement.)
    private static func isDueSoon(_ download: Download) -> Bool {
        download.runAt <= download.createdAt + dueSoon
    }

    static let dueSoon: Int64 = 1_000

    /// A job due when it is created goes in as due, as the claim's promotion step would mark it:
    /// promoting it would write the row again (and every index it is in) for nothing.
    private static func isDue(_ download: Download) -> Bool {
        download.runAt <= download.createdAt
    }

    /// Inserts `jobs` in the caller's transaction. Jobs without an idempotency key (the usual
    /// batch of concurrent POSTs) go in as one statement; a batch with keys goes job by job, as
    /// each key is taken before its job.
    func insert(_ jobs: [NewJob], into db: PostgresConnection) throws -> [InsertOutcome] {
        var tags = try FairTags(db, sessions: jobs.map(\.download.session))
        let outcomes: [InsertOutcome]
        if jobs.allSatisfy({ $0.idempotency == nil }) {
            outcomes = try insertAtOnce(jobs.map(\.download), into: db, tags: &tags)
        } else {
            outcomes = try jobs.map { try insert($0.download, idempotency: $0.idempotency, into: db, tags: &tags) }
        }
        let created = outcomes.ofCreated(jobs) { $0 }
        try stateLog.append(db, created, atCommit: true)
        // Every batch on every node that names a session waits for its row from here to the
        // commit, so it is written last, with the COMMIT (in the sessions' order, so that
        // batches on two nodes lock their rows in one order).
        let sessions = tags.moved
        if !sessions.isEmpty {
            try db.atCommit("""
                INSERT INTO sessions (name, last_tag) SELECT * FROM unnest($1::text[], $2::bigint[])
                ON CONFLICT (name) DO UPDATE SET last_tag = GREATEST(sessions.last_tag, EXCLUDED.last_tag)
                """, [.textArray(sessions.map(\.key)), .textArray(sessions.map { String($0.value) })])
        }
        return outcomes
    }

    /// The one-live-job-per-destination index, as an INSERT names it to skip a job whose destination
    /// a live job holds: its predicate, which an upload (writing no destination) is outside of.
    static let liveDestination = "(destination) WHERE state IN ('queued','running','paused') AND destination NOT LIKE '%/' AND upload IS NULL"

    /// Jobs without keys in one INSERT, in order: a job whose destination a live job holds (one
    /// stored, or one earlier in the batch) is left out. Tags are given as if every job went in;
    /// if some did not, the ones that did are tagged again, so a session's tags have no gaps.
    private func insertAtOnce(_ downloads: [Download], into db: PostgresConnection, tags: inout FairTags) throws -> [InsertOutcome] {
        let planned = downloads.map { download in
            let tag = tags.next(session: download.session)
            tags.lastTags[download.session] = tag
            return tag
        }
        let inserted = Set(try db.query("""
            INSERT INTO downloads (\(JobColumns.insertList), lane, fair_tag, due)
            SELECT \(JobColumns.insertList), lane, fair_tag, due FROM json_populate_recordset(NULL::downloads, $1::json) WITH ORDINALITY AS job
            ORDER BY job.ordinality
            ON CONFLICT \(Self.liveDestination) DO NOTHING RETURNING id
            """, [.text(PostgresValue.json(zip(downloads, planned).map { download, tag in
                JobColumns.values(download) + [.integer(download.discretionary ? 1 : 0), .integer(tag), .bool(Self.isDue(download))]
            }, columns: JobColumns.written + ["lane", "fair_tag", "due"]))]) { $0.string(0) })
        if inserted.count < downloads.count {
            tags.lastTags = tags.read
            let went = downloads.filter { inserted.contains($0.id) }
            let retagged = went.map { download in
                let tag = tags.next(session: download.session)
                tags.lastTags[download.session] = tag
                return tag
            }
            try db.run("""
                UPDATE downloads SET fair_tag = job.tag FROM unnest($1::text[], $2::bigint[]) AS job(id, tag) WHERE downloads.id = job.id
                """, [.textArray(went.map(\.id)), .textArray(retagged.map(String.init))])
        }
        return downloads.map { inserted.contains($0.id) ? .created : .destinationBusy }
    }

    private func insert(_ download: Download, idempotency: IdempotencyRecord?, into db: PostgresConnection,
                        tags: inout FairTags) throws -> InsertOutcome {
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
        let tag = tags.next(session: download.session)
        let inserted = try db.query("""
            INSERT INTO downloads (\(JobColumns.insertList), lane, fair_tag, due)
            VALUES (\(JobColumns.placeholders), $\(JobColumns.written.count + 1), $\(JobColumns.written.count + 2), $\(JobColumns.written.count + 3))
            ON CONFLICT \(Self.liveDestination) DO NOTHING RETURNING 1
            """, JobColumns.values(download) + [.integer(download.discretionary ? 1 : 0), .integer(tag), .bool(Self.isDue(download))]) { _ in true }
        guard !inserted.isEmpty else {
            if keyIsNew, let idempotency {
                try db.run("DELETE FROM idempotency_keys WHERE principal = $1 AND key = $2", [.text(idempotency.principal), .text(idempotency.key)])
            }
            return .destinationBusy
        }
        tags.lastTags[download.session] = tag
        if !keyIsNew, let idempotency {
            // The key's job has been pruned: the key now names the new one, as if it were new.
            try db.run("""
                UPDATE idempotency_keys SET body_sha256 = $3, download_id = $4, created_at = $5 WHERE principal = $1 AND key = $2
                """, [.text(idempotency.principal), .text(idempotency.key), .text(idempotency.bodySHA256),
                      .text(download.id), .integer(download.createdAt)])
        }
        return .created
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
}

/// Fair-queueing tags (`FairQueue.tag`) for one intake transaction: the last tag of each session
/// it names and the virtual time are read once, in one query, and the batch's jobs count on from
/// them. (A claim another node commits meanwhile may move the virtual time on; the batch then
/// tags as if it had come a moment earlier, which it did.)
private struct FairTags {
    /// Each session's last tag as read (0 for a session without a row).
    let read: [String: Int64]
    /// The last tag this batch gave each session, written back to `sessions` at its end.
    var lastTags: [String: Int64]
    private let virtualTime: Int64

    init(_ db: PostgresConnection, sessions: [String]) throws {
        let names = Array(Set(sessions))
        // A batch of one session (the usual) by name: planned once for the connection, where the
        // form for any number was planned again for each batch (its cost follows the array's length).
        let rows = try db.query(names.count == 1 ? """
            SELECT (SELECT value FROM scheduler_state WHERE key = 'virtual_time'), $1, COALESCE((SELECT last_tag FROM sessions WHERE name = $1), 0)
            """ : """
            SELECT (SELECT value FROM scheduler_state WHERE key = 'virtual_time'), name, COALESCE(last_tag, 0)
            FROM unnest($1::text[]) AS batch(name) LEFT JOIN sessions USING (name)
            """, [names.count == 1 ? .text(names[0]) : .textArray(names)]) { ($0.int64(0), $0.string(1), $0.int64(2)) }
        virtualTime = rows.first?.0 ?? 0
        read = Dictionary(rows.map { ($0.1, $0.2) }, uniquingKeysWith: max)
        lastTags = read
    }

    /// The sessions this batch tagged jobs of, with their last tags, in name order.
    var moved: [(key: String, value: Int64)] {
        lastTags.filter { read[$0.key] != $0.value }.sorted { $0.key < $1.key }
    }

    /// The tag of a session's next job.
    func next(session: String) -> Int64 {
        FairQueue.tag(sessionLastTag: lastTags[session] ?? 0, virtualTime: virtualTime)
    }
}
