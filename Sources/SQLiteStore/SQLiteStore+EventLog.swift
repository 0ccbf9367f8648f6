import Persistence

extension SQLiteStore {
    /// A row's last sequence number is its `seq`, so the rows holding events after `sequence` are
    /// those with a greater `seq`; `limit` rows hold at least `limit` events.
    public func loggedEvents(after sequence: Int64, session: String?, limit: Int) throws -> [LoggedEvent] {
        try withReader { db in
            let filter = session == nil ? "" : "AND session = ?"
            let rows = try db.prepare("""
                SELECT seq, count, download_id, session, payload FROM event_log WHERE seq > ? \(filter) ORDER BY seq LIMIT ?
                """).query([.integer(sequence)] + (session.map { [.text($0)] } ?? []) + [.integer(Int64(limit))]) {
                LogRow(seq: $0.int64(0), count: $0.int(1), downloadID: $0.string(2), session: $0.string(3), payload: $0.blob(4))
            }
            return try stateLog.expand(rows, after: sequence, limit: limit)
        }
    }

    public func eventLogSpan() throws -> EventLogSpan {
        try withReader { db in
            try db.prepare("SELECT (SELECT seq - count + 1 FROM event_log ORDER BY seq LIMIT 1), MAX(seq) FROM event_log").query {
                EventLogSpan(oldest: $0.optionalInt64(0), newest: $0.optionalInt64(1) ?? 0)
            }.first ?? EventLogSpan(oldest: nil, newest: 0)
        }
    }

    /// Deletes in batches, like the other pruning, from the oldest row; counts the events deleted.
    /// A row goes only when all its events are older than the last `keepingLast`.
    public func pruneEventLog(before: Int64, keepingLast: Int) throws -> Int {
        let newest = try eventLogSpan().newest
        var total = 0
        while true {
            let counts = try withConnection { db in
                try db.transaction {
                    try db.prepare("""
                        DELETE FROM event_log WHERE seq IN (SELECT seq FROM event_log WHERE created_at < ? AND seq <= ? ORDER BY seq LIMIT ?)
                        RETURNING count
                        """).query([.integer(before), .integer(newest - Int64(keepingLast)), .integer(Int64(Self.pruneBatch))]) { $0.int(0) }
                }
            }
            total += counts.reduce(0, +)
            if counts.count < Self.pruneBatch { return total }
        }
    }
}
