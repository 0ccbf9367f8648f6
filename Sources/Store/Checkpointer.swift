import CSQLite
import Dispatch
import Synchronization

/// Copies the write-ahead log back into the database on its own connection and thread, instead of
/// in the commit that passes SQLite's 1,000 pages: a session action or a batch then does not wait
/// for the copy (a tenth of a 100,000-job pause), and the next write goes on beside it (a PASSIVE
/// checkpoint takes no write lock).
final class Checkpointer: @unchecked Sendable {  // `connection` is used only on `queue`
    /// The WAL's size, in pages, from which a commit asks for a checkpoint (SQLite's own default).
    static let pages: Int32 = 1000
    private let connection: SQLiteConnection
    private let queue = DispatchQueue(label: "fetchd.sqlite-checkpoint")
    private let running = Atomic<Bool>(false)

    init(path: String) throws {
        connection = try SQLiteConnection(path: path)
    }

    /// Takes over the checkpoints of `writer`'s commits.
    func follow(_ writer: SQLiteConnection) {
        writer.onCommit { [weak self] pages in self?.committed(walPages: pages) }
    }

    private func committed(walPages: Int32) {
        guard walPages >= Self.pages, !running.exchange(true, ordering: .acquiringAndReleasing) else { return }
        queue.async {
            // A checkpoint that cannot finish now (a reader holds old pages) is finished by a later one.
            try? self.connection.execute("PRAGMA wal_checkpoint(PASSIVE)")
            self.running.store(false, ordering: .releasing)
        }
    }

    func close() {
        queue.sync { connection.close() }
    }
}
