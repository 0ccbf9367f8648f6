import DownloadCore
import Persistence

/// Transitions: compare-and-set on the expected states, with their attempt records and webhook
/// events in the same transaction.
extension PostgresStore {
    public func apply(_ changes: [StoreChange]) throws -> [Bool] {
        guard !changes.isEmpty else { return [] }
        let body = { (db: PostgresConnection) in try self.apply(changes, db) }
        return try Self.changesState(changes) ? writeAnnouncingWork(body) : write(body)
    }

    /// A state change may queue a job or free a slot; progress alone does neither.
    static func changesState(_ changes: [StoreChange]) -> Bool {
        changes.contains {
            switch $0 {
            case .update, .watch: true
            default: false
            }
        }
    }

    /// `apply`'s changes in the caller's transaction.
    func apply(_ changes: [StoreChange], _ db: PostgresConnection) throws -> [Bool] {
        var settled = SettledBatch()
        var results: [Bool] = []
        // Jobs ending (completed, failed, cancelled) are written together, one statement for a
        // run of them; any other change first writes the run before it, so the order holds.
        var ending: [StateWrite] = []
        var endingIDs: Set<String> = []
        for change in changes {
            if case .update(let download, let expecting, let events, let attempt, let sessionFinished, nil) = change,
               download.state.isTerminal, endingIDs.insert(download.id).inserted {
                ending.append(StateWrite(download: download, expecting: expecting, events: events, attempt: attempt,
                                     sessionFinished: sessionFinished))
                continue
            }
            results += try self.end(ending, db, settled: &settled)
            ending = []
            endingIDs = []
            if case .watch(let watchChange) = change {
                results.append(watchChange.afterPrevious && results.last != true ? false : try self.apply(watchChange, db))
                continue
            }
            results.append(try self.apply(change, db, settled: &settled))
        }
        results += try self.end(ending, db, settled: &settled)
        try self.finish(settled, db)
        return results
    }

    private func apply(_ change: StoreChange, _ db: PostgresConnection, settled: inout SettledBatch) throws -> Bool {
        switch change {
        case .update(let download, let expecting, let events, let attempt, let sessionFinished, let revision):
            return try update(db, download, expecting: expecting, unchangedSince: revision, events: events, attempt: attempt,
                              sessionFinished: sessionFinished, settled: &settled)
        case .progress(let id, let bytesReceived, let bytesExpected, let validator):
            // Progress is not a state change: it is written only while the job is still live, and
            // of a running job only by the node whose lease it runs under.
            try db.run("""
                UPDATE downloads SET bytes_received = $2, bytes_expected = COALESCE($3, bytes_expected), validator = COALESCE($4, validator),
                revision = revision + 1
                WHERE id = $1 AND state IN ('running','paused','queued') AND (state <> 'running' OR lease_owner = $5)
                """, [.text(id), .integer(bytesReceived), .optional(bytesExpected), .optional(validator), .text(membership.id)])
            return true
        case .attempt(let attempt, let id):
            settled.attempts.append((attempt, id))
            return true
        case .holdHost(let host, let until):
            try db.run("""
                INSERT INTO host_backoffs (host_key, until) VALUES ($1, $2)
                ON CONFLICT (host_key) DO UPDATE SET until = GREATEST(host_backoffs.until, EXCLUDED.until)
                """, [.text(host), .integer(until)])
            return true
        case .ranges(let id, let ranges, let bytesReceived, let bytesExpected, let validator):
            try db.run("""
                UPDATE downloads SET bytes_received = $2, bytes_expected = COALESCE($3, bytes_expected), validator = COALESCE($4, validator),
                ranges = $5, revision = revision + 1
                WHERE id = $1 AND state IN ('running','paused','queued')
                """, [.text(id), .integer(bytesReceived), .optional(bytesExpected), .optional(validator), .optional(RangeProgress.text(ranges))])
            return true
        case .objectUpload(let id, let upload, let expecting):
            return try db.run("""
                UPDATE downloads SET object_upload = $2, revision = revision + 1
                WHERE id = $1 AND state = ANY($3::text[]) AND (state <> 'running' OR lease_owner = $4)
                """, [.text(id), .optional(upload?.text), .textArray(expecting.map(\.rawValue).sorted()), .text(membership.id)]) == 1
        case .watch(let watchChange):
            return try apply(watchChange, db)
        }
    }

    /// Hosts held by a `holdHost` change that still hold after `now`, with the time each is held until.
    public func hostBackoffs(after now: Int64) throws -> [String: Int64] {
        try read { db in
            Dictionary(uniqueKeysWithValues: try db.query("SELECT host_key, until FROM host_backoffs WHERE until > $1",
                                                          [.integer(now)]) { ($0.string(0), $0.int64(1)) })
        }
    }

    /// Writes `download` if the stored job is still in one of `expecting` (and, with a revision,
    /// still at it), with its events. When the write makes the job terminal and leaves its session
    /// with no live job, `sessionFinished` is asked for the events that announce it, in the same
    /// transaction.
    private func update(
        _ db: PostgresConnection, _ download: Download, expecting: Set<DownloadState>, unchangedSince revision: Int64?,
        events: [WebhookEvent], attempt: AttemptRecord?, sessionFinished: ((SessionSnapshot) -> [WebhookEvent])?,
        settled: inout SettledBatch
    ) throws -> Bool {
        // A job (re)entering the queue is not due until the promotion step has seen its run_at.
        let due = download.state == .queued ? ", due = false" : ""
        let changed: Int
        do {
            // Fencing: a running job is changed only as the attempt the writer knows. A node that
            // lost its lease knows an attempt that was taken over (the job is queued again, or runs
            // a later attempt elsewhere), so what it writes late is refused.
            changed = try db.run("""
                UPDATE downloads SET \(JobColumns.stateAssignments)\(due)
                WHERE id = $\(JobColumns.stateCount + 1) AND state = ANY($\(JobColumns.stateCount + 2)::text[])
                AND (state <> 'running' OR attempts = $\(JobColumns.stateCount + 3))
                AND ($\(JobColumns.stateCount + 4)::bigint IS NULL OR revision = $\(JobColumns.stateCount + 4))
                """, JobColumns.stateValues(download) + [.text(download.id), .textArray(expecting.map(\.rawValue).sorted()),
                                                          .integer(Int64(download.attempts)), .optional(revision)])
        } catch let error as PostgresError where error.isUniqueViolation && !download.state.isTerminal {
            // Only a failed job coming back to life can meet another live job at its destination.
            // (The transaction is void now; the caller's rolls back, as SQLite's does on this throw.)
            throw DestinationBusy()
        }
        guard changed == 1 else { return false }
        settled.add(StateWrite(download: download, expecting: expecting, events: events, attempt: attempt, sessionFinished: sessionFinished))
        return true
    }

    /// Writes jobs that end (a terminal state, so no live destination can clash) in one
    /// compare-and-set statement, fenced as `update` fences one; whether each was written. (`id =
    /// ANY` and `IS TRUE`: one primary-key probe per job, as in the claim's UPDATE.)
    private func end(_ jobs: [StateWrite], _ db: PostgresConnection, settled: inout SettledBatch) throws -> [Bool] {
        guard !jobs.isEmpty else { return [] }
        let rows = jobs.map { [.text($0.download.id)] + JobColumns.stateValues($0.download) }
        let changed = Set(try db.query("""
            UPDATE downloads SET \(JobColumns.stateAssignments(from: "job"))
            FROM json_populate_recordset(NULL::downloads, $1::json) AS job
            JOIN unnest($2::text[], $3::text[]) AS expected(id, states) ON expected.id = job.id
            WHERE downloads.id = ANY($2::text[]) AND downloads.id = job.id AND (downloads.state = ANY(string_to_array(expected.states, ','))) IS TRUE
            AND (downloads.state <> 'running' OR downloads.attempts = job.attempts)
            RETURNING downloads.id
            """, [.text(PostgresValue.json(rows, columns: ["id"] + JobColumns.stateColumns)), .textArray(jobs.map(\.download.id)),
                  .textArray(jobs.map { $0.expecting.map(\.rawValue).sorted().joined(separator: ",") })]) { $0.string(0) })
        return jobs.map { job in
            guard changed.contains(job.download.id) else { return false }
            settled.add(job)
            return true
        }
    }

    /// Writes what a batch's changes left to write, once for all of them: the event log, the
    /// attempt records, the webhook events, and `session.finished` for each session a job ended in
    /// (checked once per session, after every change of the batch, so a session whose last jobs end
    /// in one batch is announced once).
    private func finish(_ settled: SettledBatch, _ db: PostgresConnection) throws {
        try stateLog.append(db, settled.states, atCommit: true)
        try Self.record(db, attempts: settled.attempts)
        for (events, now) in settled.events { try Self.record(db, events: events, now: now) }
        for session in settled.ending.keys.sorted() {
            guard let (sessionFinished, now) = settled.ending[session],
                  let snapshot = try Self.finishedSession(db, session: session) else { continue }
            try Self.record(db, events: sessionFinished(snapshot), now: now)
        }
    }

    private static let attemptColumns = [
        "download_id", "number", "started_at", "ended_at", "outcome", "error_code", "error_message", "http_status",
        "bytes_transferred", "bytes_on_disk", "url",
    ]

    /// Records attempts (again, if a transition ends one already recorded), in one statement; of
    /// two records of one attempt the later one is kept.
    static func record(_ db: PostgresConnection, attempts: [(attempt: AttemptRecord, id: String)]) throws {
        var latest: [String: Int] = [:]
        for (index, record) in attempts.enumerated() { latest["\(record.id) \(record.attempt.number)"] = index }
        let rows = latest.values.sorted().map { index -> [PostgresValue] in
            let (attempt, id) = attempts[index]
            return [.text(id), .integer(Int64(attempt.number)), .integer(attempt.startedAt), .integer(attempt.endedAt),
                    .text(attempt.outcome), .optional(attempt.error?.code), .optional(attempt.error?.message),
                    .optional(attempt.httpStatus), .integer(attempt.bytesTransferred), .integer(attempt.bytesOnDisk),
                    .optional(attempt.url)]
        }
        guard !rows.isEmpty else { return }
        try db.run("""
            INSERT INTO download_attempts (\(Self.attemptColumns.joined(separator: ", ")))
            SELECT \(Self.attemptColumns.joined(separator: ", ")) FROM json_populate_recordset(NULL::download_attempts, $1::json)
            ON CONFLICT (download_id, number) DO UPDATE SET started_at = EXCLUDED.started_at, ended_at = EXCLUDED.ended_at,
            outcome = EXCLUDED.outcome, error_code = EXCLUDED.error_code, error_message = EXCLUDED.error_message,
            http_status = EXCLUDED.http_status, bytes_transferred = EXCLUDED.bytes_transferred, bytes_on_disk = EXCLUDED.bytes_on_disk,
            url = EXCLUDED.url
            """, [.text(PostgresValue.json(rows, columns: Self.attemptColumns))])
    }

    /// The session's counts if it has no live job left, else nil. Two nodes finishing a session's
    /// last two jobs at once would each see the other's job still live (neither has committed) and
    /// neither would announce the session; so the check waits for the session's advisory lock, and
    /// runs as a statement of its own after it, whose snapshot then sees the other's commit.
    static func finishedSession(_ db: PostgresConnection, session: String) throws -> SessionSnapshot? {
        try db.run(AdvisoryLock.session, [.text(session)])
        let live = try db.query("""
            SELECT EXISTS (SELECT 1 FROM downloads WHERE session = $1 AND state IN ('queued','running','paused'))
            """, [.text(session)]) { $0.bool(0) }.first ?? true
        guard !live else { return nil }
        let urls = try db.query("SELECT webhook_url FROM session_webhooks WHERE session = $1 GROUP BY webhook_url HAVING SUM(count) > 0",
                                [.text(session)]) { $0.string(0) }
        return SessionSnapshot(session: session, counts: try counts(db, session: session), webhookURLs: urls.sorted())
    }

    /// Jobs left `running` by nodes that stopped: at this node's start, those of nodes already
    /// found dead (a previous run of this one among them); the rest are taken over as they are found.
    public func interruptedJobs() throws -> [Download] {
        try takeOverAbandonedJobs()
    }
}

/// What the changes of one `apply` batch leave to be written at its end, in the order they came.
private struct SettledBatch {
    var states: [Download] = []
    var attempts: [(attempt: AttemptRecord, id: String)] = []
    var events: [(events: [WebhookEvent], now: Int64)] = []
    /// Sessions a job ended in, with what announces the session if it has finished.
    var ending: [String: (sessionFinished: (SessionSnapshot) -> [WebhookEvent], now: Int64)] = [:]

    /// A state change that was written, with what it leaves to write.
    mutating func add(_ change: StateWrite) {
        let download = change.download
        states.append(download)
        if let attempt = change.attempt { attempts.append((attempt, download.id)) }
        let now = download.finishedAt ?? download.createdAt
        events.append((change.events, now))
        if download.state.isTerminal, let sessionFinished = change.sessionFinished {
            ending[download.session] = (sessionFinished, now)
        }
    }
}

/// One `.update` change, as `apply` writes it (those of jobs that end a run at a time).
private struct StateWrite {
    var download: Download
    var expecting: Set<DownloadState>
    var events: [WebhookEvent]
    var attempt: AttemptRecord?
    var sessionFinished: ((SessionSnapshot) -> [WebhookEvent])?
}
