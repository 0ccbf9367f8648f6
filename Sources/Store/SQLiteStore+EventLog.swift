import Persistence

extension SQLiteStore {
    public func loggedEvents(after sequence: Int64, session: String?, limit: Int) throws -> [LoggedEvent] {
        try withReader { db in
            let filter = session == nil ? "" : "AND session = ?"
            return try stateLog.expand(db.prepare("""
                SELECT seq, download_id, session, payload FROM event_log WHERE seq > ? \(filter) ORDER BY seq LIMIT ?
                """).query([.integer(sequence)] + (session.map { [.text($0)] } ?? []) + [.integer(Int64(limit))]) {
                LoggedEvent(sequence: $0.int64(0), downloadID: $0.string(1), session: $0.string(2), payload: $0.blob(3))
            })
        }
    }

    public func eventLogSpan() throws -> EventLogSpan {
        try withReader { db in
            try db.prepare("SELECT MIN(seq), MAX(seq) FROM event_log").query {
                EventLogSpan(oldest: $0.optionalInt64(0), newest: $0.optionalInt64(1) ?? 0)
            }.first ?? EventLogSpan(oldest: nil, newest: 0)
        }
    }

    /// Deletes in batches, like the other pruning, from the oldest row.
    public func pruneEventLog(before: Int64, keepingLast: Int) throws -> Int {
        let newest = try eventLogSpan().newest
        return try deleteInBatches("""
            DELETE FROM event_log WHERE seq IN (SELECT seq FROM event_log WHERE created_at < ? AND seq <= ? ORDER BY seq LIMIT ?)
            """, .integer(before), .integer(newest - Int64(keepingLast)))
    }
}
