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

    /// `encoded`: the payload when the caller encoded it already (`NewJob.statePayload`).
    func append(_ db: SQLiteConnection, _ download: Download, encoded: [UInt8]? = nil) throws {
        try insert(db).run([
            .text(download.session), .text(download.id), .integer(Self.now()), .blob(encoded ?? payload(download)),
        ])
    }

    /// The new states of many jobs, in order, with one timestamp.
    func append(_ db: SQLiteConnection, _ downloads: [Download]) throws {
        try append(db, encoded: downloads.map { (download: $0, payload: payload($0)) })
    }

    /// The new states of many jobs, in order, each with its payload: one row per run of jobs of
    /// one session (up to `eventsPerRow`).
    func append(_ db: SQLiteConnection, encoded events: [(download: Download, payload: [UInt8])]) throws {
        let now = SQLValue.integer(Self.now())
        var start = 0
        while start < events.count {
            let session = events[start].download.session
            var end = start + 1
            while end < events.count, end - start < Self.eventsPerRow, events[end].download.session == session { end += 1 }
            let run = events[start..<end]
            if run.count == 1 {
                try insert(db).run([.text(session), .text(events[start].download.id), now, .blob(events[start].payload)])
            } else {
                var ids: [UInt8] = [], payloads: [UInt8] = []
                payloads.reserveCapacity(run.reduce(2) { $0 + $1.payload.count + 1 })
                for event in run {
                    ids.append(ids.isEmpty ? UInt8(ascii: "[") : UInt8(ascii: ","))
                    JSONString.append(event.download.id, to: &ids)
                    payloads.append(payloads.isEmpty ? UInt8(ascii: "[") : UInt8(ascii: ","))
                    payloads += event.payload
                }
                ids.append(UInt8(ascii: "]"))
                payloads.append(UInt8(ascii: "]"))
                try db.prepare("""
                    INSERT INTO event_log (seq, count, session, download_id, created_at, payload) VALUES (\(Self.nextSeq) + ?1, ?1, ?, ?, ?, ?)
                    """).run([.integer(Int64(run.count)), .text(session), .text(String(decoding: ids, as: UTF8.self)), now, .blob(payloads)])
            }
            start = end
        }
    }

    /// A session action's new states: each changed job's row, as the action left it, as a JSON
    /// array, a row of the log per `eventsPerRow` jobs, each in one statement; turned into the
    /// API's Download only when the log is read (`expand`). So the action decodes and encodes no
    /// Download and writes less than half the bytes.
    func appendSnapshots(_ db: SQLiteConnection, ids: [String]) throws {
        let now = SQLValue.integer(Self.now())
        for start in stride(from: 0, to: ids.count, by: Self.eventsPerRow) {
            let run = ids[start..<min(ids.count, start + Self.eventsPerRow)]
            var list = [UInt8(ascii: "[")]
            for id in run {
                if list.count > 1 { list.append(UInt8(ascii: ",")) }
                JSONString.append(id, to: &list)
            }
            list.append(UInt8(ascii: "]"))
            // One job: a row of one event, as `append` writes it.
            let sql = run.count == 1
                ? """
                    INSERT INTO event_log (session, download_id, created_at, payload)
                    SELECT session, id, ?1, json_array(\(DownloadColumns.list)) FROM downloads WHERE id IN (SELECT value FROM json_each(?2))
                    """
                : """
                    INSERT INTO event_log (seq, count, session, download_id, created_at, payload)
                    SELECT \(Self.nextSeq) + COUNT(*), COUNT(*), session, json_group_array(id), ?1, json_group_array(json_array(\(DownloadColumns.list)))
                    FROM downloads WHERE id IN (SELECT value FROM json_each(?2))
                    """
            try db.prepare(sql).run([now, .text(String(decoding: list, as: UTF8.self))])
        }
    }

    /// The events of `rows` after `sequence`, at most `limit`, with the snapshots among them turned
    /// into payloads. A snapshot is a JSON array; a payload the encoder wrote is a JSON object.
    func expand(_ rows: [LogRow], after sequence: Int64, limit: Int) throws -> [LoggedEvent] {
        var events: [LoggedEvent] = []
        for row in rows where events.count < limit {
            events += try row.events(after: sequence).prefix(limit - events.count)
        }
        return try events.map { event in
            guard event.payload.first == UInt8(ascii: "[") else { return event }
            guard let row = RowSnapshot(event.payload)?.withColumnsAddedSince() else {
                throw StoreError(code: 0, message: "event log entry \(event.sequence) is not a row snapshot")
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
