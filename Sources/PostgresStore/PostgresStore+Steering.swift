import DownloadCore
import Persistence

/// Steering after submit: keyed batches, a client's change (PATCH), session actions and the event
/// log, with `SQLiteStore`'s semantics.
extension PostgresStore {
    /// A keyed batch takes its key first, with an empty answer: a node submitting the same key
    /// meanwhile waits for this transaction, then finds the key and replays the answer written here.
    public func insertBatch(_ jobs: [NewJob], idempotency: IdempotencyRecord?, now: Int64,
                            answer: ([InsertOutcome]) -> [UInt8]) throws -> BatchInsertOutcome {
        try writeAnnouncingWork { db in
            if let idempotency {
                let key: [PostgresValue] = [.text(idempotency.principal), .text(idempotency.key)]
                let keyWasTaken = try db.query("""
                    INSERT INTO idempotent_batches (principal, key, body_sha256, answer, created_at) VALUES ($1, $2, $3, $4, $5)
                    ON CONFLICT (principal, key) DO NOTHING RETURNING 1
                    """, key + [.text(idempotency.bodySHA256), .bytes([]), .integer(now)]) { _ in true }.isEmpty
                if keyWasTaken, let (digest, kept) = try db.query(
                    "SELECT body_sha256, answer FROM idempotent_batches WHERE principal = $1 AND key = $2", key, { ($0.string(0), $0.bytes(1)) }
                ).first {
                    return digest == idempotency.bodySHA256 ? .replayed(kept) : .keyMismatch
                }
            }
            let outcomes = try insert(jobs, into: db)
            if let idempotency {
                // An upsert: a prune between the key's insert and its read may have taken the row.
                try db.run("""
                    INSERT INTO idempotent_batches (principal, key, body_sha256, answer, created_at) VALUES ($1, $2, $3, $4, $5)
                    ON CONFLICT (principal, key) DO UPDATE SET answer = EXCLUDED.answer
                    """, [.text(idempotency.principal), .text(idempotency.key), .text(idempotency.bodySHA256),
                          .bytes(answer(outcomes)), .integer(now)])
            }
            return .inserted(outcomes)
        }
    }

    /// A client's change (PATCH): the client's fields, and for a queued job when it is due and
    /// which lane it waits in, as compare-and-set on the revision of a live job.
    public func change(_ download: Download, expectingRevision revision: Int64) throws -> Download? {
        let next = JobColumns.clientCount
        return try write { db in
            try db.query("""
                UPDATE downloads SET \(JobColumns.clientAssignments),
                run_at = CASE WHEN state = 'queued' THEN $\(next + 1) ELSE run_at END,
                due = CASE WHEN state = 'queued' THEN false ELSE due END, lane = $\(next + 2),
                awaiting_url_since = $\(next + 3)
                WHERE id = $\(next + 4) AND revision = $\(next + 5) AND state IN ('queued','running','paused')
                RETURNING \(JobColumns.list)
                """, JobColumns.clientValues(download) + [
                .integer(download.runAt), .integer(download.discretionary ? 1 : 0), .optional(download.awaitingURLSince),
                .text(download.id), .integer(revision),
            ], JobColumns.download).first
        }
    }

    /// One UPDATE over the session's jobs, in one transaction with the count, the running jobs to
    /// stop and, for a cancel, the jobs' events. The jobs are locked first, so the ones reported
    /// running are the ones this action stopped, whatever other nodes do meanwhile.
    public func act(_ action: SessionAction) throws -> SessionActionResult {
        var states = action.kind.appliesTo
        if let narrowed = action.state { states = states.intersection([narrowed]) }
        return try writeAnnouncingWork { db in
            let session = PostgresValue.text(action.session)
            let matched = try db.query(
                "SELECT COUNT(*) FROM downloads WHERE session = $1" + (action.state == nil ? "" : " AND state = $2"),
                [session] + (action.state.map { [.text($0.rawValue)] } ?? [])) { $0.int(0) }.first ?? 0
            guard !states.isEmpty else { return SessionActionResult(matched: matched, changed: [], wereRunning: []) }
            var targets = try db.query("""
                SELECT id, state, destination FROM downloads WHERE session = $1 AND state = ANY($2::text[]) ORDER BY id FOR UPDATE
                """, [session, .textArray(states.map(\.rawValue).sorted())]) { (id: $0.string(0), state: $0.string(1), destination: $0.string(2)) }
            if action.kind == .retry { targets = try Self.revivable(db, targets) }
            let jobs = try db.query("""
                WITH action(now) AS (SELECT $1::bigint)
                UPDATE downloads SET \(Self.assignments(action.kind)), revision = revision + 1 FROM action WHERE id = ANY($2::text[])
                RETURNING \(JobColumns.list)
                """, [.integer(action.now), .textArray(targets.map(\.id))], JobColumns.download).sorted { $0.id < $1.id }
            try stateLog.append(db, jobs)
            if action.kind == .cancel {
                try Self.record(db, events: jobs.flatMap(action.events), now: action.now)
                if !jobs.isEmpty, let snapshot = try Self.finishedSession(db, session: action.session) {
                    try Self.record(db, events: action.sessionFinished(snapshot), now: action.now)
                }
            }
            let wereRunning = jobs.isEmpty ? [] : targets.filter { $0.state == DownloadState.running.rawValue }.map(\.id)
            return SessionActionResult(matched: matched, changed: jobs.map(\.id), wereRunning: wereRunning)
        }
    }

    /// What an action sets; `action.now` is its time.
    private static func assignments(_ kind: SessionActionKind) -> String {
        switch kind {
        case .pause:
            return "state = 'paused', next_attempt_at = NULL"
        case .resume:
            return "state = 'queued', due = false, run_at = GREATEST(action.now, COALESCE(earliest_begin_at, action.now)), error_code = NULL, error_message = NULL"
        case .retry:
            return """
                state = 'queued', due = false, run_at = GREATEST(action.now, COALESCE(earliest_begin_at, action.now)), error_code = NULL,
                error_message = NULL, finished_at = NULL, next_attempt_at = NULL, sha256 = NULL, attempts_before_retry = attempts,
                outage_attempts = 0, disk_full_since = NULL, progress_at = NULL
                """
        case .cancel:
            return "state = 'cancelled', finished_at = action.now, next_attempt_at = NULL"
        }
    }

    /// The failed jobs a retry may bring back: not one whose destination another live job owns
    /// now, and of several with one destination only the first (SQLite's `UPDATE OR IGNORE`); a
    /// directory destination (`dir/`) is shared, as in the unique index.
    private static func revivable(_ db: PostgresConnection, _ failed: [(id: String, state: String, destination: String)]) throws
        -> [(id: String, state: String, destination: String)] {
        var taken = Set(try db.query("""
            SELECT destination FROM downloads WHERE destination = ANY($1::text[]) AND state IN ('queued','running','paused')
            """, [.textArray(Array(Set(failed.map(\.destination))))]) { $0.string(0) })
        return failed.filter { $0.destination.hasSuffix("/") || taken.insert($0.destination).inserted }
    }

    public func loggedEvents(after sequence: Int64, session: String?, limit: Int) throws -> [LoggedEvent] {
        let filter = session == nil ? "" : "AND session = $3"
        return try read { db in
            try db.query("""
                SELECT seq, download_id, session, payload FROM event_log WHERE seq > $1 \(filter) ORDER BY seq LIMIT $2
                """, [.integer(sequence), .integer(Int64(limit))] + (session.map { [.text($0)] } ?? [])) {
                LoggedEvent(sequence: $0.int64(0), downloadID: $0.string(1), session: $0.string(2), payload: $0.bytes(3))
            }
        }
    }

    public func eventLogSpan() throws -> EventLogSpan {
        try read { db in
            try db.query("SELECT MIN(seq), MAX(seq) FROM event_log") {
                EventLogSpan(oldest: $0.optionalInt64(0), newest: $0.optionalInt64(1) ?? 0)
            }.first ?? EventLogSpan(oldest: nil, newest: 0)
        }
    }

    /// Deletes in batches, like the other pruning, from the oldest row.
    public func pruneEventLog(before: Int64, keepingLast: Int) throws -> Int {
        let newest = try eventLogSpan().newest
        return try deleteInBatches("""
            DELETE FROM event_log WHERE seq IN (SELECT seq FROM event_log WHERE created_at < $1 AND seq <= $2 ORDER BY seq LIMIT $3)
            """, before, newest - Int64(keepingLast))
    }
}
