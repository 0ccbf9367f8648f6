import DownloadCore
import Persistence

extension SQLiteStore {
    /// One UPDATE per state the jobs leave (through the session index), in one transaction with the
    /// count, the running jobs to stop, the event log and, for a cancel, the jobs' events. Pause,
    /// resume and retry log each job's row as the UPDATE leaves it (`SnapshotRows`: read by the
    /// `SessionChange.preview` before it, or a retry's RETURNING), decoding and encoding no
    /// Download: a session may hold 100,000.
    public func act(_ action: SessionAction) throws -> SessionActionResult {
        var states = action.kind.appliesTo
        if let narrowed = action.state { states = states.intersection([narrowed]) }
        return try withConnection { db in
            try db.transaction {
                let counted = action.state.map { Self.sessionJobs(in: $0, session: "?1", state: "?2") } ?? (table: "downloads", condition: "session = ?1")
                let matched = try db.prepare("SELECT COUNT(*) FROM \(counted.table) WHERE \(counted.condition)")
                    .query([.text(action.session)] + (action.state.map { [.text($0.rawValue)] } ?? [])) { $0.int(0) }.first ?? 0
                guard !states.isEmpty else { return SessionActionResult(matched: matched, changed: [], wereRunning: []) }
                var wereRunning: [String] = []
                if states.contains(.running) {
                    let running = Self.sessionJobs(in: .running, session: "?1", state: "'running'")
                    wereRunning = try db.prepare("SELECT id FROM \(running.table) WHERE \(running.condition)").query([.text(action.session)]) { $0.string(0) }
                }
                var changed: [String] = []
                // One UPDATE per state the jobs leave, in the order of the session index, so that
                // each counts its jobs once in `job_counts` instead of the trigger once per job.
                // Without triggers: the other one on downloads, `downloads_live_destination_follows`
                // (migration 18), has nothing to do for these SETs (pause and resume keep a job
                // live, cancel clears `live_destination`, retry sets it).
                for from in states.sorted(by: { $0.rawValue < $1.rawValue }) {
                    let change = SessionChange(action.kind, from: from)
                    let bound: [SQLValue] = [.integer(action.now), .text(action.session), .text(from.rawValue)]
                    if action.kind == .cancel {
                        // A cancel's webhook events need the jobs as Downloads anyway.
                        let jobs = try db.withoutTriggers {
                            try db.prepare(change.update + " RETURNING \(DownloadColumns.list)").query(bound, DownloadColumns.download)
                        }
                        try stateLog.append(db, jobs)
                        try Self.record(db, events: jobs.flatMap(action.events), now: action.now)
                        changed += jobs.map(\.id)
                        try Self.move(jobs.count, from: from, to: action.kind.target, in: db)
                    } else {
                        var snapshots = SnapshotRows()
                        try db.withoutTriggers {
                            if change.ignoresConflicts {
                                _ = try db.prepare(change.update + " RETURNING \(StateLog.snapshotColumns)").query(bound) { snapshots.add($0) }
                            } else {
                                // The rows as the UPDATE will leave them, read before it: RETURNING would
                                // first copy all of them, 100,000 maybe, into a temporary table.
                                _ = try db.prepare(change.preview).query(bound) { snapshots.add($0) }
                                try db.prepare(change.update).run(bound)
                            }
                        }
                        try stateLog.append(db, snapshots)
                        changed += snapshots.ids
                        try Self.move(snapshots.ids.count, from: from, to: action.kind.target, in: db)
                    }
                }
                if action.kind == .cancel, !changed.isEmpty, let snapshot = try Self.finishedSession(db, session: action.session) {
                    try Self.record(db, events: action.sessionFinished(snapshot), now: action.now)
                }
                return SessionActionResult(matched: matched, changed: changed, wereRunning: changed.isEmpty ? [] : wereRunning)
            }
        }
    }

    /// Where to find a session's jobs in one state, as the table to read and the condition, given
    /// the SQL of the session and of the state: the few running jobs through the state index (the
    /// session index would step over all the session's queued and paused jobs to find them), the
    /// others through `downloads_session` (migration 20), in its unfinished part or its finished one.
    static func sessionJobs(in state: DownloadState, session: String, state value: String) -> (table: String, condition: String) {
        if state == .running { return ("downloads INDEXED BY downloads_state", "state = \(value) AND session = \(session)") }
        return ("downloads", "session = \(session) AND \(sessionIndexPart(finished: state.isTerminal)) AND state = \(value)")
    }

    /// The condition on `downloads_session`'s second column (migration 20) of the part that holds a
    /// session's finished or unfinished jobs: `finished_at` is set by every write that ends a job
    /// and cleared by a retry.
    static func sessionIndexPart(finished: Bool) -> String {
        finished ? "finished_at IS NOT NULL" : "finished_at IS NULL"
    }

    /// Moves `count` jobs from one state to another in `job_counts`, for a write made without the
    /// trigger that counts each job (`SQLiteConnection.withoutTriggers`).
    private static func move(_ count: Int, from: DownloadState, to: DownloadState, in db: SQLiteConnection) throws {
        guard count > 0, from != to else { return }
        try db.prepare("UPDATE job_counts SET count = count - ? WHERE state = ?").run([.integer(Int64(count)), .text(from.rawValue)])
        try db.prepare("INSERT INTO job_counts (state, count) VALUES (?, ?) ON CONFLICT (state) DO UPDATE SET count = count + excluded.count")
            .run([.text(to.rawValue), .integer(Int64(count))])
    }
}

/// What a session action sets on each job it changes in one state, as SQL: `?1` is the time, `?2`
/// the session, `?3` the state the jobs leave.
private struct SessionChange {
    /// Column by column: the new value's expression.
    let assignments: KeyValuePairs<String, String>
    /// A retry's UPDATE leaves out a failed job whose destination another live job owns now (OR
    /// IGNORE), which only its RETURNING tells.
    let ignoresConflicts: Bool

    /// Which jobs of the session it changes: the table to read them from and the condition.
    let jobs: (table: String, condition: String)

    init(_ kind: SessionActionKind, from: DownloadState) {
        jobs = SQLiteStore.sessionJobs(in: from, session: "?2", state: "?3")
        ignoresConflicts = kind == .retry
        switch kind {
        case .pause:
            assignments = ["state": "'paused'", "next_attempt_at": "NULL"]
        case .resume:
            assignments = ["state": "'queued'", "due": "0", "run_at": "MAX(?1, COALESCE(earliest_begin_at, ?1))",
                           "error_code": "NULL", "error_message": "NULL"]
        case .retry:
            assignments = [
                "state": "'queued'", "due": "0", "run_at": "MAX(?1, COALESCE(earliest_begin_at, ?1))", "error_code": "NULL",
                "error_message": "NULL", "finished_at": "NULL", "next_attempt_at": "NULL", "sha256": "NULL",
                "attempts_before_retry": "attempts", "outage_attempts": "0", "disk_full_since": "NULL", "progress_at": "NULL",
                "live_destination": "CASE WHEN destination NOT LIKE '%/' AND upload IS NULL THEN destination END",
            ]
        case .cancel:
            assignments = ["state": "'cancelled'", "finished_at": "?1", "next_attempt_at": "NULL", "live_destination": "NULL"]
        }
    }

    var update: String {
        // OR IGNORE: a failed job whose destination another live job owns now stays failed.
        let verb = ignoresConflicts ? "UPDATE OR IGNORE" : "UPDATE"
        let set = assignments.map { "\($0.key) = \($0.value)" }.joined(separator: ", ")
        return "\(verb) \(jobs.table) SET \(set), revision = revision + 1 WHERE \(jobs.condition)"
    }

    /// The jobs the UPDATE changes, as `StateLog.snapshotColumns` of the rows it leaves: the store's
    /// column (the revision) moved on, as every write moves it.
    var preview: String {
        let columns = DownloadTable.columns.map { column in
            column.owner == .store ? "\(column.name) + 1" : assignments.first { $0.key == column.name }?.value ?? column.name
        }
        return "SELECT \(columns.joined(separator: ", ")) FROM \(jobs.table) WHERE \(jobs.condition)"
    }
}
