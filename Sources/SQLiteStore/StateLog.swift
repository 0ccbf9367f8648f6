import DownloadCore
import Foundation
import Persistence

/// Appends a job's new state to the global event log (`GET /events`), in the transaction of the
/// change. The payload is the Download as the API shows it, encoded by the service. Many jobs'
/// states share rows (`LogRow`).
struct StateLog: Sendable {
    let payload: @Sendable (Download) -> [UInt8]

    /// The most events one row holds.
    static let eventsPerRow = 1000

    /// One job's new state for the log: its payload.
    struct Entry {
        var id: String
        var session: String
        var payload: [UInt8]
    }

    /// The new states of many jobs, in order, with one timestamp.
    func append(_ db: SQLiteConnection, _ downloads: [Download]) throws {
        try append(db, downloads.map { Entry(id: $0.id, session: $0.session, payload: payload($0)) })
    }

    /// The new states of many jobs, in order: one row per run of jobs of one session (up to
    /// `eventsPerRow`).
    func append(_ db: SQLiteConnection, _ entries: [Entry]) throws {
        try appendRuns(db, entries, session: \.session, id: \.id) { entry, _, payload in payload += entry.payload }
    }

    /// New jobs' rows, in order: each log row's first whole, the others as what differs from it.
    func append(_ db: SQLiteConnection, _ rows: [NewRowSnapshot]) throws {
        try appendRuns(db, rows, session: \.session, id: \.id) { row, first, payload in
            if let first { row.difference(from: first, into: &payload) } else { row.whole(into: &payload) }
        }
    }

    /// One log row per run of `items` of one session (up to `eventsPerRow`), its payload one
    /// item's as `write` writes it, or a JSON array of many. `write` is given the run's first item
    /// for every item after it.
    private func appendRuns<Item>(_ db: SQLiteConnection, _ items: [Item], session: (Item) -> String, id: (Item) -> String,
                                  write: (Item, _ first: Item?, inout [UInt8]) -> Void) throws {
        let now = SQLValue.integer(Self.now())
        var start = 0
        while start < items.count {
            let first = session(items[start])
            var end = start + 1
            while end < items.count, end - start < Self.eventsPerRow, session(items[end]) == first { end += 1 }
            var payload: [UInt8] = []
            // Grown as written: a new job's difference is ~100 bytes, a Download's JSON ~750.
            payload.reserveCapacity(512 + 128 * (end - start))
            if end - start > 1 { payload.append(UInt8(ascii: "[")) }
            for index in start..<end {
                if index > start { payload.append(UInt8(ascii: ",")) }
                write(items[index], index > start ? items[start] : nil, &payload)
            }
            if end - start > 1 { payload.append(UInt8(ascii: "]")) }
            try insertRow(db, session: first, ids: items[start..<end].map(id), payload: payload, now: now)
            start = end
        }
    }

    /// A session action's jobs as their rows' snapshots, which are turned into the API's Download
    /// only when the log is read (`expand`): so the action decodes and encodes no Download.
    func append(_ db: SQLiteConnection, _ snapshots: SnapshotRows) throws {
        let now = SQLValue.integer(Self.now())
        for run in snapshots.runs {
            try insertRow(db, session: run.session, ids: run.ids, payload: run.payload, now: now)
        }
    }

    /// The columns a session action's UPDATE returns for `SnapshotRows`: the job's row as
    /// `DownloadColumns.download` reads it.
    static let snapshotColumns = DownloadColumns.list

    /// One log row: a job's event as it is, or those of many of one session (ids and payloads as JSON arrays).
    private func insertRow(_ db: SQLiteConnection, session: String, ids: [String], payload: [UInt8], now: SQLValue) throws {
        guard ids.count > 1 else {
            try insert(db).run([.text(session), .text(ids.first ?? ""), now, .blob(payload)])
            return
        }
        try db.prepare("""
            INSERT INTO event_log (seq, count, session, download_id, created_at, payload) VALUES (\(Self.nextSeq) + ?1, ?1, ?, ?, ?, ?)
            """).run([.integer(Int64(ids.count)), .text(session), .text(JSONString.array(ids)), now, .blob(payload)])
    }

    /// The events of `rows` after `sequence`, at most `limit`, with the snapshots among them turned
    /// into payloads. A snapshot is a JSON array; a payload the encoder wrote is a JSON object.
    func expand(_ rows: [LogRow], after sequence: Int64, limit: Int) throws -> [LoggedEvent] {
        var events: [LoggedEvent] = []
        for row in rows where events.count < limit {
            events += try row.events(after: sequence, limit: limit - events.count)
        }
        return try events.map { event in
            guard event.payload.first == UInt8(ascii: "[") else { return event }
            guard let row = RowSnapshot(event.payload)?.withColumnsAddedSince() else {
                throw SQLiteError(code: 0, message: "event log entry \(event.sequence) is not a row snapshot")
            }
            var expanded = event
            expanded.payload = payload(try DownloadColumns.download(row))
            return expanded
        }
    }

    /// The last sequence number given out, which AUTOINCREMENT keeps even when the newest rows are
    /// pruned; a row of `count` events takes the next `count` (a row of one gets it from AUTOINCREMENT).
    private static let nextSeq = "COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'event_log'), 0)"

    private func insert(_ db: SQLiteConnection) throws -> Statement {
        try db.prepare("INSERT INTO event_log (session, download_id, created_at, payload) VALUES (?, ?, ?, ?)")
    }

    private static func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// For stores opened without the service's encoder (tests, tools): the id, session and state.
    static let minimal = StateLog(payload: StatePayload.minimal)
}
