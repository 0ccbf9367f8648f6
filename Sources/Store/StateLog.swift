import DownloadCore
import Foundation
import Persistence

/// Appends a job's new state to the global event log (`GET /events`), in the transaction of the
/// change. The payload is the Download as the API shows it, encoded by the service.
struct StateLog: Sendable {
    let payload: @Sendable (Download) -> [UInt8]

    /// `encoded`: the payload when the caller encoded it already (`NewJob.statePayload`).
    func append(_ db: SQLiteConnection, _ download: Download, encoded: [UInt8]? = nil) throws {
        try insert(db).run([
            .text(download.session), .text(download.id), .integer(Self.now()), .blob(encoded ?? payload(download)),
        ])
    }

    /// The new states of many jobs, in order, with one timestamp.
    func append(_ db: SQLiteConnection, _ downloads: [Download]) throws {
        let statement = try insert(db)
        let now = SQLValue.integer(Self.now())
        for download in downloads {
            try statement.run([.text(download.session), .text(download.id), now, .blob(payload(download))])
        }
    }

    /// A session action's new states: each changed job's row, as the action left it, as a JSON
    /// array, in one statement; turned into the API's Download only when the log is read
    /// (`expand`). So the action decodes and encodes no Download and writes less than half the bytes.
    func appendSnapshots(_ db: SQLiteConnection, ids: [String]) throws {
        var list = [UInt8(ascii: "[")]
        for id in ids {
            if list.count > 1 { list.append(UInt8(ascii: ",")) }
            JSONString.append(id, to: &list)
        }
        list.append(UInt8(ascii: "]"))
        try db.prepare("""
            INSERT INTO event_log (session, download_id, created_at, payload)
            SELECT session, id, ?, json_array(\(DownloadColumns.list)) FROM downloads WHERE id IN (SELECT value FROM json_each(?))
            """).run([.integer(Self.now()), .text(String(decoding: list, as: UTF8.self))])
    }

    /// The log's events with the snapshots among them turned into payloads. A snapshot is a JSON
    /// array; a payload the encoder wrote is a JSON object.
    func expand(_ events: [LoggedEvent]) throws -> [LoggedEvent] {
        try events.map { event in
            guard event.payload.first == UInt8(ascii: "[") else { return event }
            guard let row = RowSnapshot(event.payload)?.withColumnsAddedSince() else {
                throw StoreError(code: 0, message: "event log entry \(event.sequence) is not a row snapshot")
            }
            var expanded = event
            expanded.payload = payload(try DownloadColumns.download(row))
            return expanded
        }
    }

    private func insert(_ db: SQLiteConnection) throws -> Statement {
        try db.prepare("INSERT INTO event_log (session, download_id, created_at, payload) VALUES (?, ?, ?, ?)")
    }

    private static func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// For stores opened without the service's encoder (tests, tools): the id, session and state.
    static let minimal = StateLog(payload: StatePayload.minimal)
}
