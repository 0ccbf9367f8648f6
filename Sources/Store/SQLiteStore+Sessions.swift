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
                let matched = try db.prepare(
                    "SELECT COUNT(*) FROM downloads WHERE session = ?" + (action.state == nil ? "" : " AND state = ?")
                ).query([.text(action.session)] + (action.state.map { [.text($0.rawValue)] } ?? [])) { $0.int(0) }.first ?? 0
                guard !states.isEmpty else { return SessionActionResult(matched: matched, changed: [], wereRunning: []) }
                let wereRunning = states.contains(.running)
                    ? try db.prepare("SELECT id FROM downloads WHERE session = ? AND state = 'running'")
                        .query([.text(action.session)]) { $0.string(0) }
                    : []
                var changed: [String] = []
                // One UPDATE per state the jobs leave, in the order of the session index, so that
                // each counts its jobs once in `job_counts` instead of the trigger once per job.
                // Without triggers: the other one on downloads, `downloads_live_destination_follows`
                // (migration 18), has nothing to do for these SETs (pause and resume keep a job
                // live, cancel clears `live_destination`, retry sets it).
                let change = SessionChange(action.kind)
                for from in states.sorted(by: { $0.rawValue < $1.rawValue }) {
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

    /// Moves `count` jobs from one state to another in `job_counts`, for a write made without the
    /// trigger that counts each job (`SQLiteConnection.withoutTriggers`).
    private static func move(_ count: Int, from: DownloadState, to: DownloadState, in db: SQLiteConnection) throws {
        guard count > 0, from != to else { return }
        try db.prepare("UPDATE job_counts SET count = count - ? WHERE state = ?").run([.integer(Int64(count)), .text(from.rawValue)])
        try db.prepare("INSERT INTO job_counts (state, count) VALUES (?, ?) ON CONFLICT (state) DO UPDATE SET count = count + excluded.count")
            .run([.text(to.rawValue), .integer(Int64(count))])
    }
}

/// What a session action sets on each job it changes (not the state it reads them in), as SQL:
/// `?1` is the time, `?2` the session, `?3` the state the jobs leave.
private struct SessionChange {
    /// Column by column: the new value's expression.
    let assignments: KeyValuePairs<String, String>
    /// A retry's UPDATE leaves out a failed job whose destination another live job owns now (OR
    /// IGNORE), which only its RETURNING tells.
    let ignoresConflicts: Bool

    init(_ kind: SessionActionKind) {
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
                "live_destination": "CASE WHEN destination NOT LIKE '%/' THEN destination END",
            ]
        case .cancel:
            assignments = ["state": "'cancelled'", "finished_at": "?1", "next_attempt_at": "NULL", "live_destination": "NULL"]
        }
    }

    private static let matching = "WHERE session = ?2 AND state = ?3"

    var update: String {
        // OR IGNORE: a failed job whose destination another live job owns now stays failed.
        let verb = ignoresConflicts ? "UPDATE OR IGNORE" : "UPDATE"
        let set = assignments.map { "\($0.key) = \($0.value)" }.joined(separator: ", ")
        return "\(verb) downloads SET \(set), revision = revision + 1 \(Self.matching)"
    }

    /// The jobs the UPDATE changes, as `StateLog.snapshotColumns` of the rows it leaves.
    var preview: String {
        let columns = DownloadColumns.written.map { column in assignments.first { $0.key == column }?.value ?? column }
        return "SELECT id, session, \(columns.joined(separator: ", ")), revision + 1 FROM downloads \(Self.matching)"
    }
}
