import Dispatch
import Synchronization

/// Wakes this node when another commits work it may take (new or requeued jobs, freed slots):
/// LISTEN on a connection of its own. Notifications are sent at most every `WorkAnnouncer.spacing`
/// per node and are lost while the connection is down, so the caller keeps polling as a fallback,
/// and is woken once after every reconnection.
final class WorkListener: Sendable {
    private let queue = DispatchQueue(label: "fetchd.postgres-listen")
    private let url: String
    private let wake: @Sendable () -> Void
    private let stopped = Atomic<Bool>(false)
    /// The listening connection and its schema (announcements name theirs), touched only on `queue`.
    private let listening = Mutex<(db: PostgresConnection, schema: String)?>(nil)

    static let channel = "fetchd_work"
    static let pollTimeout: Int32 = 500

    init(url: String, wake: @escaping @Sendable () -> Void) {
        self.url = url
        self.wake = wake
        queue.async { self.listen() }
    }

    func stop() {
        stopped.store(true, ordering: .sequentiallyConsistent)
        queue.sync { listening.withLock { $0?.db.close(); $0 = nil } }
    }

    /// One wait for notifications, then the next, until stopped.
    private func listen() {
        guard !stopped.load(ordering: .sequentiallyConsistent) else { return }
        let (woken, connected) = listening.withLock { listening -> (Bool, Bool) in
            do {
                guard let (db, schema) = listening else {
                    let db = try PostgresConnection(url: url)
                    do {
                        try db.execute("LISTEN \(Self.channel)")
                        let schema = try db.query("SELECT current_schema()") { $0.string(0) }.first ?? ""
                        listening = (db, schema)
                    } catch {
                        db.close()
                        throw error
                    }
                    return (true, true)  // what was announced while not listening is lost: look once
                }
                return (try db.notifications(waitingUpTo: Self.pollTimeout).contains(schema), true)
            } catch {
                listening?.db.close()
                listening = nil
                return (false, false)
            }
        }
        if woken { wake() }
        // After a failure, wait before connecting again.
        queue.asyncAfter(deadline: .now() + .milliseconds(connected ? 0 : Int(Self.pollTimeout))) { self.listen() }
    }
}

/// Announces committed work to the nodes' `WorkListener`s from inside a write transaction, at
/// most once per `spacing` per node: NOTIFY serialises commits cluster-wide, so a burst of
/// writes announces once, and the nodes' polling covers the rest of the burst.
final class WorkAnnouncer: Sendable {
    private let last = Atomic<Int64>(0)
    static let spacing: UInt64 = 50_000_000

    func announce(_ db: PostgresConnection) throws {
        let now = Int64(DispatchTime.now().uptimeNanoseconds)
        let previous = last.load(ordering: .relaxed)
        guard now - previous >= Int64(Self.spacing),
              last.compareExchange(expected: previous, desired: now, ordering: .relaxed).exchanged else { return }
        // Delivered at the commit anyway: sent with it, in one round trip.
        try db.atCommit("SELECT pg_notify($1, current_schema())", [.text(WorkListener.channel)])
    }
}
