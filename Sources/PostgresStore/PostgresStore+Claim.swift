import DownloadCore
import Persistence

/// The scheduler's step. Claims from every node are serialised by one advisory lock, so each
/// pass sees the load the previous one left (per-host limits and the discretionary share hold
/// across nodes). Candidates are read without row locks (a lock is a write of each row read);
/// the claim is a compare-and-set on each chosen job's revision, so a job another transaction
/// changes meanwhile (a cancel) is left for the next pass. Each query touches only the rows it
/// returns or changes, through partial indexes.
extension PostgresStore {
    public func claim(_ pass: ClaimPass) throws -> ClaimResult {
        try write { db in try claim(db, pass) }
    }

    /// `claim`'s pass in the caller's transaction, which may have taken the claim lock already.
    func claim(_ db: PostgresConnection, _ pass: ClaimPass, holdingClaimLock: Bool = false) throws -> ClaimResult {
        // Every other node's claim pass waits for this lock, so the pass makes as few round
        // trips as it can while holding it.
        if !holdingClaimLock { try db.execute(AdvisoryLock.claims) }
        // A node the others found dead claims nothing until it is registered again: its
        // claims would look abandoned and be taken over while it runs them.
        guard let elsewhere = try Self.promoteAndReadOtherNodes(db, membership.id, now: pass.now, agedBefore: pass.agedBefore) else {
            return ClaimResult(claimed: [], nextQueueChange: nil)
        }
        pass.otherNodesRunning(elsewhere)
        // The jobs the pass chooses are claimed together at its end, each only if it is still
        // the row the pass read (its revision): no other claim runs meanwhile (the lock), and
        // a job changed since (cancelled, paused, patched) waits for the next pass.
        let (chosen, candidates) = try pass.chooseLaneByLane { lane, excludingHosts, limit, offer in
            // All of a lane's candidates come back in one round trip; offered until the pass is full.
            for job in try Self.dueJobs(db, lane: lane, excludingHosts: excludingHosts, limit: limit) {
                guard offer(job) else { break }
            }
        }
        let (claimed, queueChange) = try claim(db, chosen, readAs: candidates)
        // With the COMMIT, in one round trip: the claim lock is held until then.
        try stateLog.append(db, claimed, atCommit: true)
        let (due, aging) = try queueChange ?? Self.queueChange(db)
        return ClaimResult(claimed: claimed, nextQueueChange: Self.nextQueueChange(due: due, aging: aging, after: pass.now,
                                                                                     agingDelay: pass.agingDelay))
    }

    /// In one statement: marks queued jobs whose run_at has passed as due, and moves discretionary
    /// jobs created at or before `agedBefore` into the normal lane (each row once, both changes);
    /// and reads the jobs other nodes run now, by host (kept by the triggers of downloads in
    /// running_counts), nil if `node` is not registered (a row without a host says so).
    private static func promoteAndReadOtherNodes(_ db: PostgresConnection, _ node: String, now: Int64, agedBefore: Int64) throws
        -> [String: Int]? {
        let rows = try db.query("""
            WITH promoted AS (
                UPDATE downloads SET due = due OR run_at <= $1, lane = CASE WHEN lane = 1 AND created_at <= $2 THEN 0 ELSE lane END
                WHERE (state = 'queued' AND NOT due AND run_at <= $1) OR (state = 'queued' AND lane = 1 AND created_at <= $2)
            )
            SELECT host_key, SUM(count) FROM running_counts WHERE lease_owner <> $3 GROUP BY host_key HAVING SUM(count) > 0
            UNION ALL SELECT NULL, 0 WHERE NOT EXISTS (SELECT 1 FROM nodes WHERE id = $3)
            """, [.integer(now), .integer(agedBefore), .text(node)]) { ($0.optionalString(0), $0.int(1)) }
        guard !rows.contains(where: { $0.0 == nil }) else { return nil }
        return Dictionary(rows.compactMap { row in row.0.map { ($0, row.1) } }, uniquingKeysWith: +)
    }

    /// Due jobs of one lane, best first, leaving out hosts at their limit.
    private static func dueJobs(_ db: PostgresConnection, lane: Lane, excludingHosts: [String], limit: Int) throws -> [Download] {
        let queries = LaneQueries.of(lane)
        // Walking the lane in order and skipping full hosts would step over every due job of theirs
        // ranked above the jobs it returns: a million behind one busy host. So the walk stops after
        // a few times `limit` jobs, and if full hosts held too many of those, the best jobs of each
        // other host are taken instead (a seek per host with due jobs).
        guard !excludingHosts.isEmpty else { return try db.query(queries.best, [.integer(Int64(limit))], JobColumns.download) }
        let hosts = PostgresValue.textArray(excludingHosts)
        let best = try db.query(queries.walk, [.integer(Int64(limit * 4)), hosts, .integer(Int64(limit))], JobColumns.download)
        guard best.count < limit else { return best }
        return try db.query(queries.byHost, [hosts, .integer(Int64(limit)), .integer(Int64(limit))], JobColumns.download)
    }

    /// Compare-and-set to `running`, leased to this node, in one statement; the jobs claimed. Only
    /// the columns the pass changed are sent (starting an attempt changes five of the row's 46),
    /// each job fenced by the revision it was read at. The virtual time of fair queueing moves up
    /// to the latest tag among them. The same statement reads what `queueChange` reads (the
    /// earliest run_at and created_at the queue has left), nil if nothing was claimed.
    private func claim(_ db: PostgresConnection, _ jobs: [Download], readAs candidates: [String: Download]) throws
        -> ([Download], (Int64?, Int64?)?) {
        guard !jobs.isEmpty else { return ([], nil) }
        let after = jobs.map(JobColumns.stateValues)
        let before = jobs.map { candidates[$0.id].map(JobColumns.stateValues) }
        let changed = JobColumns.stateColumns.indices.filter { column in
            zip(before, after).contains { read, written in read?[column] != written[column] }
        }
        let rows = zip(jobs, after).map { job, values in [.text(job.id), .integer(job.revision)] + changed.map { values[$0] } }
        let columns = changed.map { JobColumns.stateColumns[$0] }
        // One primary-key probe per job: `id = ANY` makes them the plan's index condition (else a
        // table whose statistics are stale may be read whole), and `IS TRUE` keeps the state test
        // out of it (else the planner reads every entry `downloads_state` still holds for 'queued',
        // one per job that ever waited, until vacuum). The final SELECT sees the table as the
        // statement began, so the jobs it claims are left out by hand.
        let started = try db.query("""
            WITH started AS (
                UPDATE downloads SET \(JobColumns.stateAssignments(from: "job", columns: columns)), lease_owner = $2
                FROM json_populate_recordset(NULL::downloads, $1::json) AS job
                WHERE downloads.id = ANY($3::text[]) AND downloads.id = job.id AND (downloads.state = 'queued') IS TRUE
                AND downloads.revision = job.revision
                RETURNING downloads.id, downloads.fair_tag
            ), virtual_time AS (
                UPDATE scheduler_state SET value = GREATEST(value, (SELECT MAX(fair_tag) FROM started))
                WHERE key = 'virtual_time' AND EXISTS (SELECT 1 FROM started)
            )
            SELECT id, \(Self.queueChangeColumns("AND id NOT IN (SELECT id FROM started)")) FROM started
            """, [.text(PostgresValue.json(rows, columns: ["id", "revision"] + columns)), .text(membership.id), .textArray(jobs.map(\.id))]) {
            ($0.string(0), $0.optionalInt64(1), $0.optionalInt64(2))
        }
        let ids = Set(started.map(\.0))
        return (jobs.filter { ids.contains($0.id) }, started.first.map { ($0.1, $0.2) })
    }

    /// The earliest run_at of a job not yet due, and the earliest created_at in the discretionary
    /// lane; `excluding` narrows the second.
    private static func queueChangeColumns(_ excluding: String = "") -> String {
        """
        (SELECT MIN(run_at) FROM downloads WHERE state = 'queued' AND NOT due),
        (SELECT MIN(created_at) FROM downloads WHERE state = 'queued' AND lane = 1 \(excluding))
        """
    }

    private static func queueChange(_ db: PostgresConnection) throws -> (Int64?, Int64?) {
        try db.query("SELECT \(queueChangeColumns())") { ($0.optionalInt64(0), $0.optionalInt64(1)) }.first ?? (nil, nil)
    }

    /// The next time a queued job becomes due or a discretionary job ages into the normal lane.
    private static func nextQueueChange(due: Int64?, aging: Int64?, after now: Int64, agingDelay: Int64) -> Int64? {
        [due, aging.map { $0 + agingDelay }].compactMap { $0 }.map { max($0, now + 1) }.min()
    }
}

/// The ways to read a lane's due jobs best first, as SQL. The lane is spelled out, not bound:
/// a partial index serves only queries whose WHERE implies its own.
private struct LaneQueries {
    /// Parameter: the limit.
    let best: String
    /// Parameters: how many jobs to walk, the excluded hosts, the limit.
    let walk: String
    /// Parameters: the excluded hosts, the limit per host, the limit. The best `limit` jobs hold
    /// at most `limit` of one host, so that is the limit per host too.
    let byHost: String

    static let normal = LaneQueries(lane: .normal, order: "priority DESC, fair_tag, id")
    static let discretionary = LaneQueries(lane: .discretionary, order: "expected_bytes_to_receive NULLS FIRST, priority DESC, fair_tag, id")

    static func of(_ lane: Lane) -> LaneQueries { lane == .normal ? normal : discretionary }

    /// `order` is the order of the lane's index, `downloads_<lane>_lane`; its `_by_host` twin has the host first.
    private init(lane: Lane, order: String) {
        let due = "state = 'queued' AND due AND lane = \(lane.rawValue)"
        best = """
            SELECT \(JobColumns.list) FROM downloads WHERE \(due) ORDER BY \(order) LIMIT $1
            """
        // The walk's ids first, then their rows (a primary-key probe each): written as `id IN
        // (the walk)`, the planner ran the walk again for every row it returned.
        walk = """
            SELECT \(JobColumns.list) FROM (SELECT id FROM downloads WHERE \(due) ORDER BY \(order) LIMIT $1) AS walked
            JOIN downloads USING (id) WHERE host_key <> ALL($2::text[])
            ORDER BY \(order) LIMIT $3
            """
        // The hosts with due jobs, one index seek each (a loose index scan: PostgreSQL has no skip scan).
        byHost = """
            WITH RECURSIVE due_hosts(host) AS (
                (SELECT host_key FROM downloads WHERE \(due) ORDER BY host_key LIMIT 1)
                UNION ALL
                SELECT (SELECT host_key FROM downloads WHERE \(due) AND host_key > due_hosts.host ORDER BY host_key LIMIT 1)
                FROM due_hosts WHERE due_hosts.host IS NOT NULL
            )
            SELECT \(JobColumns.list) FROM downloads WHERE \(due) AND id IN (
                SELECT best.id FROM due_hosts CROSS JOIN LATERAL (
                    SELECT id FROM downloads WHERE \(due) AND host_key = due_hosts.host ORDER BY \(order) LIMIT $2) AS best
                WHERE due_hosts.host <> ALL($1::text[]))
            ORDER BY \(order) LIMIT $3
            """
    }
}
