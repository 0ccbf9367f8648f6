import DownloadCore
import Persistence

extension SQLiteStore {
    /// Applies the changes in order, in one transaction: a pass that starts or settles many
    /// jobs writes the pages they share (index leaves, the WAL frame) once, not once per job.
    /// One result per change: false where a compare-and-set found the job in another state
    /// (progress and attempt records always say true). Nothing is applied if one throws.
    public func apply(_ changes: [StoreChange]) throws -> [Bool] {
        guard !changes.isEmpty else { return [] }
        return try withConnection { db in
            try db.transaction { try apply(changes, db) }
        }
    }

    /// The changes in the caller's transaction, in order; the new states they write go to the event
    /// log together after them (a row per run of one session's jobs, not one per job).
    func apply(_ changes: [StoreChange], _ db: SQLiteConnection) throws -> [Bool] {
        var logged: [Download] = []
        var applied: [Bool] = []
        applied.reserveCapacity(changes.count)
        for change in changes { applied.append(try apply(change, db, logging: &logged, previous: applied.last)) }
        if !logged.isEmpty { try stateLog.append(db, logged) }
        return applied
    }

    /// `previous`: whether the change before this one applied (nil for the first).
    private func apply(_ change: StoreChange, _ db: SQLiteConnection, logging logged: inout [Download], previous: Bool?) throws -> Bool {
        switch change {
        case .update(let download, let expecting, let events, let attempt, let sessionFinished, let revision):
            let written = try update(db, download, expecting: expecting, unchangedSince: revision, events: events, attempt: attempt,
                                     sessionFinished: sessionFinished)
            if written { logged.append(download) }
            return written
        case .progress(let id, let bytesReceived, let bytesExpected, let validator):
            try Self.updateProgress(db, id: id, bytesReceived: bytesReceived, bytesExpected: bytesExpected, validator: validator)
            return true
        case .attempt(let attempt, let id):
            try Self.record(db, attempt: attempt, of: id)
            return true
        case .holdHost(let host, let until):
            try db.prepare("""
                INSERT INTO host_backoffs (host_key, until) VALUES (?, ?)
                ON CONFLICT (host_key) DO UPDATE SET until = MAX(until, excluded.until)
                """).run([.text(host), .integer(until)])
            return true
        case .ranges(let id, let ranges, let bytesReceived, let bytesExpected, let validator):
            try Self.updateProgress(db, id: id, bytesReceived: bytesReceived, bytesExpected: bytesExpected, validator: validator)
            try db.prepare("UPDATE downloads SET ranges = ? WHERE id = ? AND state IN ('running','paused','queued')")
                .run([RangeProgress.text(ranges).map(SQLValue.text) ?? .null, .text(id)])
            return true
        case .objectUpload(let id, let upload, let expecting):
            try db.prepare("UPDATE downloads SET object_upload = ?, revision = revision + 1 WHERE id = ? AND state IN (SELECT value FROM json_each(?))")
                .run([upload.map { .text($0.text) } ?? .null, .text(id), .text(JSONString.array(expecting.map(\.rawValue).sorted()))])
            return db.changes == 1
        case .watch(let watchChange):
            return watchChange.afterPrevious && previous != true ? false : try apply(watchChange, db)
        }
    }

    public func hostBackoffs(after now: Int64) throws -> [String: Int64] {
        try withReader { db in
            Dictionary(uniqueKeysWithValues: try db.prepare("SELECT host_key, until FROM host_backoffs WHERE until > ?")
                .query([.integer(now)]) { ($0.string(0), $0.int64(1)) })
        }
    }

    /// Compare-and-set of each job to `running`, in order; the jobs claimed. Only the columns that
    /// differ from the row as `candidates` has it (read in this transaction) are written: starting
    /// an attempt changes five of the row's 46, and an index whose columns are not written is left
    /// alone (the session's and the live destination's would otherwise be rewritten as they were).
    /// Their states go to the event log together, and the virtual time of fair queueing moves up to
    /// the latest tag among them.
    func claim(_ db: SQLiteConnection, _ jobs: [Download], readAs candidates: [String: Download]) throws -> [Download] {
        var claimed: [Download] = []
        for job in jobs {
            let after = DownloadColumns.stateValues(job)
            let before = candidates[job.id].map(DownloadColumns.stateValues)
            let changed = after.indices.filter { before?[$0] != after[$0] }
            let assignments = DownloadColumns.assignments(changed.map { DownloadColumns.stateColumns[$0] })
            try db.prepare("UPDATE downloads SET \(assignments) WHERE id = ? AND state = 'queued'")
                .run(changed.map { after[$0] } + [.text(job.id)])
            if db.changes == 1 { claimed.append(job) }
        }
        guard !claimed.isEmpty else { return [] }
        try stateLog.append(db, claimed)
        try db.prepare("""
            UPDATE scheduler_state SET value = MAX(value, (SELECT MAX(fair_tag) FROM downloads
            WHERE id IN (SELECT value FROM json_each(?)))) WHERE key = 'virtual_time'
            """).run([.text(JSONString.array(claimed.map(\.id)))])
        return claimed
    }
}
