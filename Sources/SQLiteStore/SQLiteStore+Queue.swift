import DownloadCore
import Persistence

/// The scheduler's queries. Each touches only the rows it returns or changes, through partial
/// indexes, so their cost does not grow with the length of the queue.
extension SQLiteStore {
    /// One transaction: promote, then per lane read candidates, let the pass choose, claim the chosen.
    public func claim(_ pass: ClaimPass) throws -> ClaimResult {
        try withConnection { db in try db.transaction { try claim(db, pass) } }
    }

    public func applyAndClaim(_ changes: [StoreChange], _ pass: ClaimPass) throws -> (applied: [Bool], claim: ClaimResult) {
        try withConnection { db in
            try db.transaction { (applied: try apply(changes, db), claim: try claim(db, pass)) }
        }
    }

    private func claim(_ db: SQLiteConnection, _ pass: ClaimPass) throws -> ClaimResult {
        try Self.promote(db, now: pass.now, agedBefore: pass.agedBefore)
        let (chosen, candidates) = try pass.chooseLaneByLane { lane, excludingHosts, limit, offer in
            try Self.dueJobs(db, lane: lane, excludingHosts: excludingHosts, limit: limit, offer: offer)
        }
        let claimed = try claim(db, chosen, readAs: candidates)
        return ClaimResult(claimed: claimed, nextQueueChange: try Self.nextQueueChange(db, after: pass.now, agingDelay: pass.agingDelay))
    }

    /// Marks queued jobs whose run_at has passed as due, and moves discretionary jobs created at or
    /// before `agedBefore` into the normal lane.
    static func promote(_ db: SQLiteConnection, now: Int64, agedBefore: Int64) throws {
        // INDEXED BY: the planner, without statistics, would rather scan the whole queue by state.
        try db.prepare("""
            UPDATE downloads SET due = 1 WHERE id IN (SELECT id FROM downloads INDEXED BY downloads_pending
            WHERE state = 'queued' AND due = 0 AND run_at <= ?)
            """).run([.integer(now)])
        try db.prepare("""
            UPDATE downloads SET lane = 0 WHERE id IN (SELECT id FROM downloads INDEXED BY downloads_aging
            WHERE state = 'queued' AND lane = 1 AND created_at <= ?)
            """).run([.integer(agedBefore)])
    }

    /// Offers up to `limit` due jobs of one lane, best first, leaving out hosts that are at their
    /// limit, until `offer` returns false; a row after that is not read.
    static func dueJobs(_ db: SQLiteConnection, lane: Lane, excludingHosts: [String], limit: Int,
                        offer: (Download) -> Bool) throws {
        let queries = DueQueries.of(lane)
        guard !excludingHosts.isEmpty else {
            try db.prepare(queries.best).forEachRow([.integer(Int64(limit))]) { row in offer(try DownloadColumns.download(row)) }
            return
        }
        // Walking the lane in order and skipping full hosts would step over every due job of theirs
        // ranked above the jobs it returns: a million behind one busy host. So the walk stops after
        // a few times `limit` jobs, and if full hosts held too many of those, the best jobs of each
        // other host follow (a seek per host with due jobs); those the walk offered are not offered again.
        let hosts = JSONString.array(excludingHosts)
        var offered: Set<String> = []
        var wantsMore = true
        try db.prepare(queries.walk).forEachRow([.integer(Int64(limit * 4)), .text(hosts), .integer(Int64(limit))]) { row in
            let job = try DownloadColumns.download(row)
            offered.insert(job.id)
            wantsMore = offer(job)
            return wantsMore
        }
        guard wantsMore, offered.count < limit else { return }
        try db.prepare(queries.byHost).forEachRow([.text(hosts), .integer(Int64(limit)), .integer(Int64(limit))]) { row in
            let job = try DownloadColumns.download(row)
            return offered.contains(job.id) || offer(job)
        }
    }

    /// The next time a queued job becomes due or a discretionary job ages into the normal lane.
    static func nextQueueChange(_ db: SQLiteConnection, after now: Int64, agingDelay: Int64) throws -> Int64? {
        let due = try db.prepare("SELECT MIN(run_at) FROM downloads INDEXED BY downloads_pending WHERE state = 'queued' AND due = 0")
            .query { $0.optionalInt64(0) }.first ?? nil
        let aging = try db.prepare("SELECT MIN(created_at) FROM downloads INDEXED BY downloads_aging WHERE state = 'queued' AND lane = 1")
            .query { $0.optionalInt64(0) }.first ?? nil
        return [due, aging.map { $0 + agingDelay }].compactMap { $0 }.map { max($0, now + 1) }.min()
    }

}

/// The fair-queueing tags of the jobs one transaction inserts: the virtual time and each session's
/// last tag are read once, and each session's row is written once, by `save`, instead of three
/// statements per job. Valid only inside one write transaction (nothing else changes them meanwhile).
struct FairTags {
    private var virtualTime: Int64?
    private var lastTags: [String: Int64] = [:]
    private var taken: [String: Int64] = [:]

    /// The tag the next job of `session` gets.
    mutating func next(_ db: SQLiteConnection, session: String) throws -> Int64 {
        let virtualTime = try self.virtualTime ?? db.prepare("SELECT value FROM scheduler_state WHERE key = 'virtual_time'")
            .query { $0.int64(0) }.first ?? 0
        self.virtualTime = virtualTime
        let last = try lastTags[session] ?? db.prepare("SELECT last_tag FROM sessions WHERE name = ?")
            .query([.text(session)]) { $0.int64(0) }.first ?? 0
        lastTags[session] = last
        return FairQueue.tag(sessionLastTag: last, virtualTime: virtualTime)
    }

    /// A job of `session` was inserted with `tag`.
    mutating func take(_ tag: Int64, session: String) {
        lastTags[session] = tag
        taken[session] = tag
    }

    /// Writes the last tag of every session a job was inserted into.
    func save(_ db: SQLiteConnection) throws {
        let statement = try db.prepare("INSERT OR REPLACE INTO sessions (name, last_tag) VALUES (?, ?)")
        for (session, tag) in taken { try statement.run([.text(session), .integer(tag)]) }
    }
}

extension SQLiteStore {
    /// Queued jobs by why they wait, as far as the database knows: backing off after a failure,
    /// waiting for their date, or due (waiting for a slot, their host, the discretionary rules or disk).
    public func queueDepth() throws -> QueueDepth {
        try withReader { db in
            var depth = QueueDepth()
            let rows = try db.prepare("""
                SELECT due, next_attempt_at IS NOT NULL, COUNT(*) FROM downloads WHERE state = 'queued' GROUP BY 1, 2
                """).query { ($0.int(0), $0.int(1), $0.int(2)) }
            for (due, retrying, count) in rows { depth.add(count, due: due == 1, retrying: retrying == 1) }
            return depth
        }
    }

    /// Webhook deliveries not yet settled, and when the oldest of their events happened.
    public func webhookBacklog() throws -> WebhookBacklog {
        try withReader { db in
            try db.prepare("""
                SELECT COUNT(*), MIN(e.created_at) FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
                WHERE d.state = 'pending'
                """).query { WebhookBacklog(pending: $0.int(0), oldestEventAt: $0.optionalInt64(1)) }.first
                ?? WebhookBacklog(pending: 0, oldestEventAt: nil)
        }
    }
}

/// The three ways to read a lane's due jobs best first, as SQL. The lane is spelled out, not bound:
/// a partial index serves only queries whose WHERE implies its own.
private struct DueQueries {
    /// With no host left out, the lane's index in order: each row read only when the pass asks for
    /// it (the walk below sorts all it walked before its first row, every column of each).
    /// Parameter: the limit.
    let best: String
    /// Parameters: how many jobs to walk, the excluded hosts (a JSON array), the limit.
    let walk: String
    /// Parameters: the excluded hosts (a JSON array), the limit per host, the limit. The best
    /// `limit` jobs hold at most `limit` of one host, so that is the limit per host too.
    let byHost: String

    static let normal = DueQueries(lane: .normal, index: "downloads_normal_lane", order: "priority DESC, fair_tag, id")
    static let discretionary = DueQueries(
        lane: .discretionary, index: "downloads_discretionary_lane", order: "expected_bytes_to_receive, priority DESC, fair_tag, id")

    static func of(_ lane: Lane) -> DueQueries { lane == .normal ? normal : discretionary }

    /// `index` is in lane order; `\(index)_by_host` is the same with the host first.
    private init(lane: Lane, index: String, order: String) {
        let due = "state = 'queued' AND due = 1 AND lane = \(lane.rawValue)"
        let excluded = "NOT IN (SELECT value FROM json_each(?))"
        // INDEXED BY: the planner, without statistics, would rather scan the whole queue by state.
        best = "SELECT \(DownloadColumns.list) FROM downloads INDEXED BY \(index) WHERE \(due) ORDER BY \(order) LIMIT ?"
        // fair_tag is not a column of `Download`; the walk selects it for the outer ORDER BY.
        walk = """
            SELECT \(DownloadColumns.list) FROM (SELECT \(DownloadColumns.list), fair_tag FROM downloads INDEXED BY \(index)
            WHERE \(due) ORDER BY \(order) LIMIT ?)
            WHERE host_key \(excluded) ORDER BY \(order) LIMIT ?
            """
        // The hosts with due jobs, one index seek each (SQLite has no skip scan without statistics).
        byHost = """
            WITH RECURSIVE due_hosts(host) AS (
                SELECT MIN(host_key) FROM downloads INDEXED BY \(index)_by_host WHERE \(due)
                UNION ALL
                SELECT (SELECT MIN(host_key) FROM downloads INDEXED BY \(index)_by_host WHERE \(due) AND host_key > host)
                FROM due_hosts WHERE host IS NOT NULL
            )
            SELECT \(DownloadColumns.list) FROM due_hosts, downloads
            WHERE host \(excluded) AND id IN (SELECT id FROM downloads INDEXED BY \(index)_by_host
                WHERE \(due) AND host_key = host ORDER BY \(order) LIMIT ?)
            ORDER BY \(order) LIMIT ?
            """
    }
}
