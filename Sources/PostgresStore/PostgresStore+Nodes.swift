import DownloadCore
import Persistence

/// Many nodes on one database: liveness, leases on running jobs and their takeover.
extension PostgresStore {
    /// Nodes whose heartbeat is fresh, with the jobs each runs.
    public func liveNodes() throws -> [NodeRecord]? {
        try read { db in
            try db.query("""
                SELECT n.name, n.started_at, n.heartbeat_at,
                    (SELECT COUNT(*) FROM downloads d WHERE d.state = 'running' AND d.lease_owner = n.id)
                FROM nodes n WHERE n.heartbeat_at >= \(NodeMembership.now) - $1 ORDER BY n.name, n.started_at
                """, [.integer(NodeLease.deadAfter)]) {
                NodeRecord(name: $0.string(0), startedAt: $0.int64(1), heartbeatAt: $0.int64(2), runningTransfers: $0.int(3))
            }
        }
    }

    public func renewLease() throws -> Bool {
        try membership.renew()
    }

    /// Under the claim lock, so a pass never counts a dead node's load while another requeues it:
    /// deletes the nodes found dead and leases their running jobs (and any running job whose node
    /// is gone) to this node. Nothing while this node is not registered itself: it would take over
    /// its own jobs.
    public func takeOverAbandonedJobs() throws -> [Download] {
        let me = PostgresValue.text(membership.id)
        // Looked at first without the claim lock, which claim passes wait for: almost always nothing.
        let anyAbandoned = try read { db in
            try db.query("""
                SELECT EXISTS (SELECT 1 FROM nodes WHERE heartbeat_at < \(NodeMembership.now) - $1)
                    OR EXISTS (SELECT 1 FROM downloads WHERE state = 'running' AND (lease_owner IS NULL OR lease_owner NOT IN (SELECT id FROM nodes)))
                """, [.integer(NodeLease.deadAfter)]) { $0.bool(0) }.first ?? true
        }
        guard anyAbandoned else { return [] }
        return try write { db in
            try db.execute(AdvisoryLock.claims)
            guard try Self.isRegistered(db, membership.id) else { return [] }
            try db.run("""
                DELETE FROM nodes WHERE id <> $1 AND ((heartbeat_at < \(NodeMembership.now) - $2
                    AND pg_try_advisory_xact_lock(\(NodeMembership.lockKey("lock_key::bigint"))))
                    OR heartbeat_at < \(NodeMembership.now) - $3)
                """, [me, .integer(NodeLease.deadAfter), .integer(NodeLease.hungAfter)])
            return try db.query("""
                UPDATE downloads SET lease_owner = $1
                WHERE state = 'running' AND (lease_owner IS NULL OR lease_owner NOT IN (SELECT id FROM nodes))
                RETURNING \(JobColumns.list)
                """, [me], JobColumns.download)
        }
    }

    public func jobsNotRunningHere(_ ids: [String]) throws -> [String: DownloadState] {
        guard !ids.isEmpty else { return [:] }
        let rows = try read { db in
            try db.query("""
                SELECT id, state FROM downloads WHERE id = ANY($1::text[])
                AND (state <> 'running' OR lease_owner IS DISTINCT FROM $2)
                """, [.textArray(ids), .text(membership.id)]) { row in
                let id = row.string(0)
                return (id, try DownloadTable.state(.text(row.string(1)), ofJob: id))
            }
        }
        return Dictionary(rows, uniquingKeysWith: { first, _ in first })
    }

    /// A few columns of the running jobs only (their partial index finds them): read five times a
    /// second while an event stream is open on this node.
    public func runningElsewhere() throws -> [RunningProgress] {
        try read { db in
            try db.query("""
                SELECT id, session, bytes_received, COALESCE(bytes_expected, expected_bytes_to_receive), upload IS NOT NULL FROM downloads
                WHERE state = 'running' AND lease_owner IS DISTINCT FROM $1
                """, [.text(membership.id)]) {
                RunningProgress(id: $0.string(0), session: $0.string(1), bytesReceived: $0.int64(2), bytesExpected: $0.optionalInt64(3),
                                direction: $0.bool(4) ? .upload : .download)
            }
        }
    }

    static func isRegistered(_ db: PostgresConnection, _ node: String) throws -> Bool {
        try !db.query("SELECT 1 FROM nodes WHERE id = $1", [.text(node)]) { _ in true }.isEmpty
    }
}
