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

    private func insert(_ db: SQLiteConnection) throws -> Statement {
        try db.prepare("INSERT INTO event_log (session, download_id, created_at, payload) VALUES (?, ?, ?, ?)")
    }

    private static func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// For stores opened without the service's encoder (tests, tools): the id, session and state.
    static let minimal = StateLog(payload: StatePayload.minimal)
}
