import DownloadCore
import Persistence
import Synchronization

/// fetchd's durable state in PostgreSQL, built to be shared by many nodes. Every state change is
/// one transaction and a compare-and-set on the state the caller expects, as in `SQLiteStore`;
/// what SQLite gets from having one writer, this gets from row locks and advisory locks (claims
/// cluster-wide, `session.finished` per session) and from `ON CONFLICT` (idempotency keys, live
/// destinations). A running job is leased to the node that claimed it; its settlement is fenced
/// by its attempt number, and the jobs of a node found dead are taken over by the others
/// (`NodeMembership`). One connection writes for this process; a few more serve reads, which see
/// every committed write; one more holds the node's lock and heartbeat.
public final class PostgresStore: JobStore {
    private let writer: ConnectionSlot
    private let readers: [ConnectionSlot]
    /// Where the next read starts looking for an idle reader, so reads spread over them.
    private let nextReader = Atomic<Int>(0)
    /// Writes each state change to the event log.
    let stateLog: StateLog
    /// This process as a node: the lease owner of the jobs it claims.
    let membership: NodeMembership
    let announcer = WorkAnnouncer()
    private let listener = Mutex<WorkListener?>(nil)
    private let url: String

    public static let defaultReaderCount = 3

    /// Connects to `url` (a libpq URI such as `postgresql://fetchd@db.example/fetchd`) and brings
    /// the schema up to date. `statePayload` encodes a job for the event log (`GET /events`);
    /// without one, rows hold its id, session and state only. `node` is this process's name among
    /// the nodes (`GET /nodes`).
    public init(url: String, readers readerCount: Int = PostgresStore.defaultReaderCount, node: String = "fetchd",
                statePayload: (@Sendable (Download) -> [UInt8])? = nil) throws {
        stateLog = statePayload.map(StateLog.init) ?? .minimal
        self.url = url
        var opened: [ConnectionSlot] = []
        do {
            let first = try PostgresConnection(url: url)
            do { try PostgresMigrations.run(on: first) } catch { first.close(); throw error }
            opened.append(ConnectionSlot(first))
            for _ in 0..<max(1, readerCount) { opened.append(ConnectionSlot(try PostgresConnection(url: url))) }
            membership = try NodeMembership(url: url, name: node)
        } catch {
            for slot in opened { slot.close() }
            throw error
        }
        writer = opened[0]
        readers = Array(opened.dropFirst())
    }

    public func close() {
        listener.withLock { $0?.stop() }
        membership.close()
        writer.close()
        for reader in readers { reader.close() }
    }

    /// Runs `body` in one transaction on the writing connection.
    func write<T: Sendable>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try writer.use { db in try db.transaction { try body(db) } }
    }

    /// `write`, announcing to the other nodes that work may have come (jobs queued, slots freed).
    func writeAnnouncingWork<T: Sendable>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try write { db in
            let value = try body(db)
            try announcer.announce(db)
            return value
        }
    }

    /// Calls `wake` when another node announces work (LISTEN/NOTIFY), and after each reconnection.
    public func watchForWork(_ wake: @escaping @Sendable () -> Void) {
        let started = WorkListener(url: url, wake: wake)
        listener.withLock { $0 = started }
    }

    /// Runs `body` on an idle reading connection (waiting for one only if all are busy).
    func read<T: Sendable>(_ body: (PostgresConnection) throws -> T) throws -> T {
        let start = nextReader.wrappingAdd(1, ordering: .relaxed).newValue & Int.max
        for offset in 0..<readers.count {
            if let result = try readers[(start + offset) % readers.count].readIfIdle(body) { return result }
        }
        return try readers[start % readers.count].use(retrying: true, body)
    }

    /// True when the database takes writes (reachable, and not a read-only standby).
    public func isWritable() -> Bool {
        // Any failure is the answer: not writable now.
        return (try? writer.use(retrying: true) { db in try db.query("SELECT NOT pg_is_in_recovery()") { $0.bool(0) }.first }) == true
    }
}

/// One connection behind its own lock (a `Mutex` cannot sit in an array by itself). A connection
/// that broke is made again before its next use.
private final class ConnectionSlot: Sendable {
    private let connection: Mutex<PostgresConnection>

    init(_ connection: sending PostgresConnection) {
        self.connection = Mutex(connection)
    }

    /// Runs `body` on the connection. A connection learns that the server dropped it (a restart, a
    /// failover) only when a call fails; with `retrying`, for bodies that only read, `body` then runs
    /// once more on a new connection. (A transaction retries its BEGIN itself: running a failed
    /// write again is not safe, as its COMMIT may have landed.)
    func use<T: Sendable>(retrying: Bool = false, _ body: (PostgresConnection) throws -> T) throws -> T {
        try connection.withLock { db in
            db.reconnectIfBroken()
            do { return try body(db) } catch {
                guard retrying, db.reconnectIfLost(by: error) else { throw error }
                return try body(db)
            }
        }
    }

    /// `use(retrying: true)` if the connection is idle now, else nil.
    func readIfIdle<T: Sendable>(_ body: (PostgresConnection) throws -> T) throws -> T? {
        try connection.withLockIfAvailable { db in
            db.reconnectIfBroken()
            do { return try body(db) } catch {
                guard db.reconnectIfLost(by: error) else { throw error }
                return try body(db)
            }
        }
    }

    func close() {
        connection.withLock { $0.close() }
    }
}
