import DownloadCore
import Persistence

extension SQLiteStore {
    /// Each job honours its idempotency key and the one-live-job-per-destination rule atomically.
    public func insert(_ jobs: [NewJob]) throws -> [InsertOutcome] {
        try withConnection { db in
            try db.transaction { try self.insert(jobs, into: db) }
        }
    }

    public func insertBatch(_ jobs: [NewJob], idempotency: IdempotencyRecord?, now: Int64,
                            answer: ([InsertOutcome]) -> [UInt8]) throws -> BatchInsertOutcome {
        try withConnection { db in
            try db.transaction {
                if let idempotency, let (digest, kept) = try db.prepare(
                    "SELECT body_sha256, answer FROM idempotent_batches WHERE principal = ? AND key = ?"
                ).query([.text(idempotency.principal), .text(idempotency.key)], { ($0.string(0), $0.blob(1)) }).first {
                    return digest == idempotency.bodySHA256 ? .replayed(kept) : .keyMismatch
                }
                let outcomes = try self.insert(jobs, into: db)
                if let idempotency {
                    try db.prepare(
                        "INSERT INTO idempotent_batches (principal, key, body_sha256, answer, created_at) VALUES (?, ?, ?, ?, ?)"
                    ).run([.text(idempotency.principal), .text(idempotency.key), .text(idempotency.bodySHA256),
                           .blob(answer(outcomes)), .integer(now)])
                }
                return .inserted(outcomes)
            }
        }
    }

    func insert(_ jobs: [NewJob], into db: SQLiteConnection) throws -> [InsertOutcome] {
        var tags = FairTags()
        // Looked up once per transaction, not per job (the cache hashes the statement's text).
        let insertDownload = try db.prepare(Self.insertDownloadSQL)
        var logged: [NewRowSnapshot] = []
        var outcomes: [InsertOutcome] = []
        outcomes.reserveCapacity(jobs.count)
        var start = 0
        while start < jobs.count {
            let run = jobs[start..<min(start + Self.rowsPerInsert, jobs.count)]
            start = run.endIndex
            var together = 0
            if run.count == Self.rowsPerInsert, run.indices.allSatisfy({ run[$0].idempotency == nil }) {
                together = try insertTogether(run, tags: &tags, logging: &logged, into: db)
                outcomes += repeatElement(.created, count: together)
            }
            for job in run.dropFirst(together) {
                outcomes.append(try insert(job, with: insertDownload, tags: &tags, logging: &logged, into: db))
            }
        }
        try tags.save(db)
        try stateLog.append(db, logged)
        try Self.count(created: outcomes.ofCreated(jobs, \.state), in: db)
        return outcomes
    }

    /// Adds new jobs to `job_counts` (which triggers keep for every other change; see migration 18).
    private static func count(created states: [DownloadState], in db: SQLiteConnection) throws {
        var added: [DownloadState: Int] = [:]
        for state in states { added[state, default: 0] += 1 }
        for (state, count) in added {
            try db.prepare("INSERT INTO job_counts (state, count) VALUES (?, ?) ON CONFLICT (state) DO UPDATE SET count = count + excluded.count")
                .run([.text(state.rawValue), .integer(Int64(count))])
        }
    }

    /// Inserts `run` (jobs without idempotency keys) with one statement: a batch's rows cost SQLite
    /// one statement's start and end per `rowsPerInsert` jobs, not per job. Returns how many of the
    /// run's first jobs it inserted: all, or those before the first that meets a live job at its
    /// destination (or another of the run), which the caller then inserts one at a time, to say which.
    private func insertTogether(_ run: ArraySlice<NewJob>, tags: inout FairTags, logging logged: inout [NewRowSnapshot],
                                into db: SQLiteConnection) throws -> Int {
        var chosen = tags
        var chosenTags: [Int64] = []
        chosenTags.reserveCapacity(run.count)
        // Each job's row in `values`: its written columns, which its log entry then shares, and four more.
        let written = DownloadTable.insertColumns.indices.count
        let rowWidth = written + 4
        var values: [SQLValue] = []
        values.reserveCapacity(run.count * rowWidth)
        for index in run.indices {
            // The job's one copy (a retain per field of its Download), which its columns are then
            // written from in place.
            var job = run[index].download
            let tag = try chosen.next(db, session: job.session)
            chosen.take(tag, session: job.session)
            chosenTags.append(tag)
            DownloadColumns.append(&job, to: &values)
            // One by one: a literal list would be an allocation per job.
            values.append(.integer(job.discretionary ? 1 : 0))
            values.append(.integer(tag))
            values.append(DownloadColumns.liveDestination(job))
            values.append(Self.dueAtInsert(job))
        }
        var inserted = run.count
        do {
            try db.prepare(Self.insertRowsSQL).run(values)
            tags = chosen
        } catch let error as SQLiteError where error.isConstraintViolation {
            // OR FAIL: the rows before the one that failed stay, SQLite counts them, and the
            // transaction goes on.
            inserted = db.changes
            for (index, tag) in zip(run.indices.prefix(inserted), chosenTags) { tags.take(tag, session: run[index].download.session) }
        }
        for (row, index) in run.indices.prefix(inserted).enumerated() {
            let start = row * rowWidth
            logged.append(NewRowSnapshot(id: run[index].download.id, session: run[index].download.session,
                                         values: values[start..<start + written]))
        }
        return inserted
    }

    /// `logged`: where a created job's event goes, for the log rows written after the batch.
    private func insert(_ job: NewJob, with insertDownload: Statement, tags: inout FairTags,
                        logging logged: inout [NewRowSnapshot], into db: SQLiteConnection) throws -> InsertOutcome {
        // `job.download` read in place throughout: a copy of a Download is one retain per field.
        let idempotency = job.idempotency
        if let idempotency {
            let existing = try db.prepare(
                "SELECT body_sha256, download_id FROM idempotency_keys WHERE principal = ? AND key = ?"
            ).query([.text(idempotency.principal), .text(idempotency.key)]) { ($0.string(0), $0.string(1)) }.first
            if let (bodySHA256, id) = existing {
                guard bodySHA256 == idempotency.bodySHA256 else { return .keyMismatch }
                if let original = try Self.fetch(db, id: id) { return .replayed(original) }
            }
        }
        let tag = try tags.next(db, session: job.download.session)
        do {
            // A failed statement is undone on its own; the transaction and the batch's other jobs go on.
            let values = DownloadColumns.values(job.download)
            try insertDownload.run(values, [
                .integer(job.download.discretionary ? 1 : 0), .integer(tag), DownloadColumns.liveDestination(job.download),
                Self.dueAtInsert(job.download),
            ])
            // The log keeps the new row's snapshot (as a session action's rows), not the Download's
            // JSON: less than half the bytes, which the commit and the checkpoint then copy.
            logged.append(NewRowSnapshot(id: job.download.id, session: job.download.session, values: values[...]))
        } catch let error as SQLiteError where error.isConstraintViolation {
            return .destinationBusy
        }
        tags.take(tag, session: job.download.session)
        if let idempotency {
            try db.prepare(
                "INSERT OR REPLACE INTO idempotency_keys (principal, key, body_sha256, download_id, created_at) VALUES (?, ?, ?, ?, ?)"
            ).run([.text(idempotency.principal), .text(idempotency.key), .text(idempotency.bodySHA256),
                   .text(job.download.id), .integer(job.download.createdAt)])
        }
        return .created
    }

    /// Built once: the statement cache is keyed by the SQL text, and this one is long.
    private static let insertDownloadSQL = "INSERT INTO downloads (\(insertColumns)) VALUES \(rowPlaceholders)"
    private static let insertColumns = "\(DownloadColumns.insertList), lane, fair_tag, live_destination, due"
    private static let rowPlaceholders = "(\(DownloadColumns.placeholders), ?, ?, ?, ?)"

    /// A job that may run from the moment it is created is inserted due, straight into its lane's
    /// claim index, rather than into the pending one for the next pass to move it over (`promote`):
    /// one UPDATE and two index entries fewer per job (2,000 small files: 361 promotions of 44 µs).
    /// A later `run_at` waits for the promotion as before.
    private static func dueAtInsert(_ download: Download) -> SQLValue {
        .integer(download.state == .queued && download.runAt <= download.createdAt ? 1 : 0)
    }

    /// Jobs a multi-row insert writes (`insertTogether`): 50 rows bind 2,500 values, well under
    /// SQLite's limit of 32,766.
    static let rowsPerInsert = 50
    /// OR FAIL, not the default ABORT: a statement that need not undo its own rows keeps no
    /// statement journal, a copy of every page it changes (a tenth of an insert's cost in SQLite).
    private static let insertRowsSQL =
        "INSERT OR FAIL INTO downloads (\(insertColumns)) VALUES \(Array(repeating: rowPlaceholders, count: rowsPerInsert).joined(separator: ", "))"

    public func download(id: String) throws -> Download? {
        try withReader { db in try Self.fetch(db, id: id) }
    }

    static func fetch(_ db: SQLiteConnection, id: String) throws -> Download? {
        try db.prepare("SELECT \(DownloadColumns.list) FROM downloads WHERE id = ?").query([.text(id)], DownloadColumns.download).first
    }

    /// Newest first; the cursor is the id of the last item of the previous page (ids sort by creation).
    public func list(kind: Direction, state: DownloadState?, session: String?, limit: Int, cursor: String?) throws -> DownloadPage {
        try withReader { db in
            var table = "downloads"
            var conditions = [kind == .upload ? "upload IS NOT NULL" : "upload IS NULL"]
            var values: [SQLValue] = []
            switch (state, session) {
            case let (state?, session?):
                // A session's jobs in a state as a session action finds them (each `?` after these is ?3, ?4).
                let jobs = Self.sessionJobs(in: state, session: "?1", state: "?2")
                table = jobs.table
                conditions.append(jobs.condition)
                values += [.text(session), .text(state.rawValue)]
            case let (state?, nil): conditions.append("state = ?"); values.append(.text(state.rawValue))
            case let (nil, session?): conditions.append("session = ?"); values.append(.text(session))
            case (nil, nil): break
            }
            if let cursor { conditions.append("id < ?"); values.append(.text(cursor)) }
            let filter = "WHERE " + conditions.joined(separator: " AND ")
            values.append(.integer(Int64(limit + 1)))
            var items = try db.prepare("SELECT \(DownloadColumns.list) FROM \(table) \(filter) ORDER BY id DESC LIMIT ?")
                .query(values, DownloadColumns.download)
            var next: String?
            if items.count > limit {
                items.removeLast()
                next = items.last?.id
            }
            return DownloadPage(items: items, nextCursor: next)
        }
    }

    /// Writes `download` if the stored job is still in one of `expecting` (and, with a revision, still
    /// at it) — a compare-and-set — together with its events; the caller logs its new state. When
    /// the write makes the job terminal and leaves its session with no live job, `sessionFinished`
    /// is asked for the events that announce it, in the same transaction.
    /// Returns false, writing nothing, if the stored state was not one expected.
    func update(
        _ db: SQLiteConnection, _ download: Download, expecting: Set<DownloadState>, unchangedSince revision: Int64? = nil,
        events: [WebhookEvent], attempt: AttemptRecord?, sessionFinished: ((SessionSnapshot) -> [WebhookEvent])?
    ) throws -> Bool {
        // OR-ed, not IN: see migration 15.
        let states = expecting.map { "state = '\($0.rawValue)'" }.sorted().joined(separator: " OR ")
        let unchanged = revision == nil ? "" : " AND revision = ?"
        let values = DownloadColumns.stateValues(download) + [.text(download.id)] + (revision.map { [.integer($0)] } ?? [])
        // A job (re)entering the queue is not due until the promotion step has seen its run_at.
        let due = download.state == .queued ? ", due = 0" : ""
        do {
            try db.prepare("UPDATE downloads SET \(DownloadColumns.stateAssignments)\(due) WHERE id = ? AND (\(states))\(unchanged)").run(values)
        } catch let error as SQLiteError where error.isConstraintViolation && !download.state.isTerminal {
            // Only a failed job coming back to life can meet another live job at its destination.
            throw DestinationBusy()
        }
        guard db.changes == 1 else { return false }
        if let attempt { try Self.record(db, attempt: attempt, of: download.id) }
        var allEvents = events
        if download.state.isTerminal, let sessionFinished,
           let snapshot = try Self.finishedSession(db, session: download.session) {
            allEvents += sessionFinished(snapshot)
        }
        try Self.record(db, events: allEvents, now: download.finishedAt ?? download.createdAt)
        return true
    }

    /// A client's change (PATCH): the client's fields, and for a queued job when it is due and
    /// which lane it waits in, as compare-and-set on the revision of a live job.
    public func change(_ download: Download, expectingRevision revision: Int64) throws -> Download? {
        try withConnection { db in
            try db.transaction {
                try db.prepare("""
                    UPDATE downloads SET \(DownloadColumns.clientAssignments),
                    run_at = CASE WHEN state = 'queued' THEN ? ELSE run_at END,
                    due = CASE WHEN state = 'queued' THEN 0 ELSE due END, lane = ?,
                    awaiting_url_since = ?
                    WHERE id = ? AND revision = ? AND state IN ('queued','running','paused')
                    """).run(DownloadColumns.clientValues(download) + [
                    .integer(download.runAt), .integer(download.discretionary ? 1 : 0),
                    download.awaitingURLSince.map(SQLValue.integer) ?? .null,
                    .text(download.id), .integer(revision),
                ])
                guard db.changes == 1 else { return nil }
                return try Self.fetch(db, id: download.id)
            }
        }
    }

    /// The attempts of a job, oldest first.
    public func attempts(of id: String) throws -> [AttemptRecord] {
        try withReader { db in
            try db.prepare("""
                SELECT number, started_at, ended_at, outcome, error_code, error_message, http_status, bytes_transferred, bytes_on_disk,
                url FROM download_attempts WHERE download_id = ? ORDER BY number
                """).query([.text(id)]) { row in
                AttemptRecord(
                    number: row.int(0), startedAt: row.int64(1), endedAt: row.int64(2), outcome: row.string(3),
                    error: row.optionalString(4).map { DownloadError(code: $0, message: row.optionalString(5) ?? "") },
                    httpStatus: row.optionalInt(6), bytesTransferred: row.int64(7), bytesOnDisk: row.int64(8),
                    url: row.optionalString(9))
            }
        }
    }

    /// Records an attempt that ended without a state change of its own (a pause or cancel stopped it).
    static func record(_ db: SQLiteConnection, attempt: AttemptRecord, of id: String) throws {
        try db.prepare("""
            INSERT OR REPLACE INTO download_attempts (download_id, number, started_at, ended_at, outcome, error_code,
            error_message, http_status, bytes_transferred, bytes_on_disk, url) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).run([
            .text(id), .integer(Int64(attempt.number)), .integer(attempt.startedAt), .integer(attempt.endedAt),
            .text(attempt.outcome), attempt.error.map { .text($0.code) } ?? .null, attempt.error.map { .text($0.message) } ?? .null,
            attempt.httpStatus.map { .integer(Int64($0)) } ?? .null, .integer(attempt.bytesTransferred), .integer(attempt.bytesOnDisk),
            attempt.url.map { .text($0) } ?? .null,
        ])
    }

    /// Progress is not a state change: it is written only while the job is still live.
    static func updateProgress(_ db: SQLiteConnection, id: String, bytesReceived: Int64, bytesExpected: Int64?, validator: String?) throws {
        try db.prepare(
            "UPDATE downloads SET bytes_received = ?, bytes_expected = COALESCE(?, bytes_expected), validator = COALESCE(?, validator), revision = revision + 1 WHERE id = ? AND state IN ('running','paused','queued')"
        ).run([.integer(bytesReceived), bytesExpected.map(SQLValue.integer) ?? .null,
               validator.map(SQLValue.text) ?? .null, .text(id)])
    }

    /// One process owns the data directory (its lock), so at start every running job was left by a
    /// process that stopped.
    public func interruptedJobs() throws -> [Download] {
        try withConnection { db in
            try db.prepare("SELECT \(DownloadColumns.list) FROM downloads WHERE state = 'running'")
                .query([], DownloadColumns.download)
        }
    }

    public func uploadsToAbort(failedBefore keptUntil: Int64, limit: Int) throws -> [Download] {
        try withReader { db in
            try db.prepare("""
                SELECT \(DownloadColumns.list) FROM downloads WHERE object_upload IS NOT NULL
                AND (state = 'completed' OR state = 'cancelled' OR (state = 'failed' AND (bytes_received = 0 OR finished_at < ?)))
                LIMIT ?
                """).query([.integer(keptUntil), .integer(Int64(limit))], DownloadColumns.download)
        }
    }

    /// Jobs by state: of one session (counted), or of all (kept up to date by the insert and by triggers, O(1)).
    public func counts(session: String?) throws -> [DownloadState: Int] {
        try withReader { db in
            let rows: [(String, Int)]
            if let session {
                rows = try db.prepare("SELECT state, COUNT(*) FROM downloads WHERE session = ? GROUP BY state")
                    .query([.text(session)]) { ($0.string(0), $0.int(1)) }
            } else {
                rows = try db.prepare("SELECT state, count FROM job_counts").query { ($0.string(0), $0.int(1)) }
            }
            return Self.countsByState(rows)
        }
    }

    /// From an index of the uploads alone.
    public func uploadCounts() throws -> [DownloadState: Int] {
        try withReader { db in
            Self.countsByState(try db.prepare("SELECT state, COUNT(*) FROM downloads WHERE upload IS NOT NULL GROUP BY state")
                .query { ($0.string(0), $0.int(1)) })
        }
    }

    static func countsByState(_ rows: [(String, Int)]) -> [DownloadState: Int] {
        var counts = Dictionary(uniqueKeysWithValues: DownloadState.allCases.map { ($0, 0) })
        for (state, count) in rows { if let state = DownloadState(rawValue: state) { counts[state] = count } }
        return counts
    }

    static func finishedSession(_ db: SQLiteConnection, session: String) throws -> SessionSnapshot? {
        // Most terminal updates leave live jobs behind: a seek in `downloads_session` to the session's
        // unfinished part (migration 20) says so without counting the session.
        let live = try db.prepare("""
            SELECT EXISTS (SELECT 1 FROM downloads WHERE session = ? AND \(sessionIndexPart(finished: false))
                AND (state = 'queued' OR state = 'running' OR state = 'paused'))
            """)
            .query([.text(session)]) { $0.int(0) }.first ?? 0
        guard live == 0 else { return nil }
        let counts = countsByState(try db.prepare("SELECT state, COUNT(*) FROM downloads WHERE session = ? GROUP BY state")
            .query([.text(session)]) { ($0.string(0), $0.int(1)) })
        let urls = try db.prepare("SELECT DISTINCT webhook_url FROM downloads WHERE session = ? AND webhook_url IS NOT NULL")
            .query([.text(session)]) { $0.string(0) }
        return SessionSnapshot(session: session, counts: counts, webhookURLs: urls.sorted())
    }
}

extension SQLiteStore {
    /// The body digest and the job an idempotency key made, if the key is known.
    public func idempotentDownload(principal: String, key: String) throws -> (bodySHA256: String, download: Download)? {
        try withReader { db in
            guard let (digest, id) = try db.prepare("SELECT body_sha256, download_id FROM idempotency_keys WHERE principal = ? AND key = ?")
                .query([.text(principal), .text(key)], { ($0.string(0), $0.string(1)) }).first,
                let download = try Self.fetch(db, id: id) else { return nil }
            return (digest, download)
        }
    }
}
