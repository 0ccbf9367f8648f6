import DownloadCore
import Foundation
import Persistence

/// Appends a job's new state to the global event log (`GET /events`), in the transaction of the
/// change. The payload is the Download as the API shows it, encoded by the service.
struct StateLog: Sendable {
    let payload: @Sendable (Download) -> [UInt8]

    func append(_ db: SQLiteConnection, _ download: Download) throws {
        try db.prepare("INSERT INTO event_log (session, download_id, created_at, payload) VALUES (?, ?, ?, ?)").run([
            .text(download.session), .text(download.id), .integer(Int64(Date().timeIntervalSince1970 * 1000)),
            .blob(payload(download)),
        ])
    }

    /// For stores opened without the service's encoder (tests, tools): the id, session and state.
    static let minimal = StateLog(payload: StatePayload.minimal)
}
