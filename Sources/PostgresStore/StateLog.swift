import DownloadCore
import Foundation
import Persistence

/// Appends jobs' new states to the global event log (`GET /events`), in the transaction of the
/// change, in one statement however many jobs it is. The payload is the Download as the API shows
/// it, encoded by the service. (The sequence is the identity column: with one writing connection
/// per node it follows this node's commit order.)
struct StateLog: Sendable {
    let payload: @Sendable (Download) -> [UInt8]

    /// `atCommit`: sent with the transaction's COMMIT (`PostgresConnection.atCommit`).
    func append(_ db: PostgresConnection, _ downloads: [Download], atCommit: Bool = false) throws {
        guard !downloads.isEmpty else { return }
        try (atCommit ? db.atCommit : { _ = try db.run($0, $1) })("""
            INSERT INTO event_log (session, download_id, created_at, payload)
            SELECT job.session, job.id, $3, decode(job.payload, 'hex')
            FROM unnest($1::text[], $2::text[], $4::text[]) WITH ORDINALITY AS job(session, id, payload, position)
            ORDER BY job.position
            """, [.textArray(downloads.map(\.session)), .textArray(downloads.map(\.id)),
                  .integer(Int64(Date().timeIntervalSince1970 * 1000)), .textArray(downloads.map { payload($0).hex })])
    }

    /// For stores opened without the service's encoder (tests, tools): the id, session and state.
    static let minimal = StateLog(payload: StatePayload.minimal)
}
