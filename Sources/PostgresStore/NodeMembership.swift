import Glibc
import Synchronization

/// This process as one node of the cluster: a row in `nodes` it renews, and a session advisory
/// lock held on a connection of its own for as long as the process lives. PostgreSQL drops the
/// lock the moment the process dies (its connection closes), so the other nodes can tell a
/// killed node from a slow one: a node is dead when its heartbeat is stale and its lock is free.
final class NodeMembership: Sendable {
    /// Unique per process: the name (what `GET /nodes` shows), the process id and a random part,
    /// so two processes of one name, or a restart, are never taken for each other.
    let id: String
    let name: String
    private let startedAt: Int64
    private let session: Mutex<Session>

    private struct Session {
        var db: PostgresConnection
        var lockKey: Int64?
    }

    /// The database's clock in milliseconds: every node's heartbeat is judged by one clock.
    static let now = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"
    /// A node's advisory lock key from its `lock_key` (SQL expression), in the single-key space
    /// (fetchd's other advisory locks use the two-key one), with the schema in the high half so
    /// installations in separate schemas of one database never share a key.
    static func lockKey(_ expression: String) -> String { "((hashtext(current_schema())::bigint << 32) | \(expression))" }
    init(url: String, name: String) throws {
        self.name = name
        id = "\(name)/\(getpid())/\(UInt32.random(in: 0...UInt32.max))"
        let db = try PostgresConnection(url: url)
        do {
            startedAt = try db.query("SELECT \(Self.now)") { $0.int64(0) }.first ?? 0
            var session = Session(db: db, lockKey: nil)
            try Self.register(&session, id: id, name: name, startedAt: startedAt)
            self.session = Mutex(session)
        } catch {
            db.close()
            throw error
        }
    }

    /// Renews the heartbeat; false if the row was gone (the others found this node dead and took
    /// its jobs): it is registered again, for the jobs it claims from now on. A connection the
    /// server dropped is made again at once, and the lock taken again on it.
    func renew() throws -> Bool {
        try session.withLock { session in
            session.db.reconnectIfBroken()
            do {
                return try renew(&session)
            } catch {
                session.lockKey = nil
                guard session.db.reconnectIfLost(by: error) else { throw error }
                return try renew(&session)
            }
        }
    }

    private func renew(_ session: inout Session) throws -> Bool {
        if session.lockKey == nil { try Self.lock(&session) }
        let renewed = try !session.db.query("""
            UPDATE nodes SET heartbeat_at = \(Self.now), lock_key = $2 WHERE id = $1 RETURNING 1
            """, [.text(id), .integer(session.lockKey ?? 0)]) { _ in true }.isEmpty
        if !renewed { try Self.register(&session, id: id, name: name, startedAt: startedAt) }
        return renewed
    }

    func close() {
        session.withLock { session in
            // Leaving politely at shutdown; a row left behind (the database gone) ages out as a dead node.
            _ = try? session.db.run("DELETE FROM nodes WHERE id = $1", [.text(id)])
            session.db.close()
        }
    }

    /// Takes a fresh lock key (one no live node holds) and the node's row.
    private static func register(_ session: inout Session, id: String, name: String, startedAt: Int64) throws {
        if session.lockKey == nil { try lock(&session) }
        try session.db.run("""
            INSERT INTO nodes (id, name, lock_key, started_at, heartbeat_at) VALUES ($1, $2, $3, $4, \(now))
            ON CONFLICT (id) DO UPDATE SET lock_key = EXCLUDED.lock_key, heartbeat_at = EXCLUDED.heartbeat_at
            """, [.text(id), .text(name), .integer(session.lockKey ?? 0), .integer(startedAt)])
    }

    /// Takes the session lock of a new key; a key still held (the sequence wrapped round onto a
    /// live node's) is passed over.
    private static func lock(_ session: inout Session) throws {
        while true {
            let key = try session.db.query("SELECT nextval('node_lock_keys')") { $0.int64(0) }.first ?? 0
            let taken = try session.db.query("SELECT pg_try_advisory_lock(\(lockKey("$1::bigint")))", [.integer(key)]) { $0.bool(0) }.first
            if taken == true {
                session.lockKey = key
                return
            }
        }
    }
}
