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
            try db.transaction { try changes.map { try self.apply($0, db) } }
        }
    }

    func apply(_ change: StoreChange, _ db: SQLiteConnection) throws -> Bool {
        switch change {
        case .update(let download, let expecting, let events, let attempt, let sessionFinished):
            return try update(db, download, expecting: expecting, events: events, attempt: attempt, sessionFinished: sessionFinished)
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
        }
    }

    public func hostBackoffs(after now: Int64) throws -> [String: Int64] {
        try withReader { db in
            Dictionary(uniqueKeysWithValues: try db.prepare("SELECT host_key, until FROM host_backoffs WHERE until > ?")
                .query([.integer(now)]) { ($0.string(0), $0.int64(1)) })
        }
    }

    /// Compare-and-set to `running`; the virtual time of fair queueing moves up to the job's tag.
    func claim(_ db: SQLiteConnection, _ job: Download) throws -> Bool {
        try db.prepare("UPDATE downloads SET \(DownloadColumns.stateAssignments) WHERE id = ? AND state = 'queued'")
            .run(DownloadColumns.stateValues(job) + [.text(job.id)])
        guard db.changes == 1 else { return false }
        try stateLog.append(db, job)
        try db.prepare("""
            UPDATE scheduler_state SET value = MAX(value, (SELECT fair_tag FROM downloads WHERE id = ?)) WHERE key = 'virtual_time'
            """).run([.text(job.id)])
        return true
    }
}
