/// The schema, as an append-only list of migrations. The database records how many have run;
/// a database that has run more than this binary knows was written by a newer fetchd, and this
/// one refuses to touch it.
enum Migrations {
    static let all: [String] = [
        // 1: jobs, the webhook outbox, idempotency keys.
        """
        CREATE TABLE downloads (
            id TEXT PRIMARY KEY NOT NULL,
            url TEXT NOT NULL,
            destination TEXT NOT NULL,
            session TEXT NOT NULL,
            state TEXT NOT NULL CHECK (state IN ('queued','running','paused','completed','failed','cancelled')),
            earliest_begin_at INTEGER,
            discretionary INTEGER NOT NULL,
            priority REAL NOT NULL CHECK (priority BETWEEN 0 AND 1),
            expected_bytes_to_send INTEGER,
            expected_bytes_to_receive INTEGER,
            bytes_received INTEGER NOT NULL DEFAULT 0,
            bytes_expected INTEGER,
            attempts INTEGER NOT NULL DEFAULT 0,
            http_status INTEGER,
            error_code TEXT,
            error_message TEXT,
            sha256 TEXT,
            expected_sha256 TEXT,
            webhook_url TEXT,
            headers TEXT,
            overwrite INTEGER NOT NULL,
            validator TEXT,
            created_at INTEGER NOT NULL,
            started_at INTEGER,
            finished_at INTEGER,
            run_at INTEGER NOT NULL,
            next_attempt_at INTEGER,
            host_key TEXT NOT NULL
        ) WITHOUT ROWID;
        -- One live job per destination: a second submission for it is a conflict, decided atomically.
        CREATE UNIQUE INDEX downloads_live_destination ON downloads(destination)
            WHERE state IN ('queued','running','paused');
        CREATE INDEX downloads_queue ON downloads(discretionary, priority DESC, id) WHERE state = 'queued';
        CREATE INDEX downloads_due ON downloads(run_at) WHERE state = 'queued';
        CREATE INDEX downloads_state ON downloads(state, id);
        CREATE INDEX downloads_session ON downloads(session, state);

        CREATE TABLE webhook_events (
            id TEXT PRIMARY KEY NOT NULL,
            type TEXT NOT NULL,
            payload BLOB NOT NULL,
            created_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE webhook_deliveries (
            event_id TEXT NOT NULL REFERENCES webhook_events(id) ON DELETE CASCADE,
            url TEXT NOT NULL,
            state TEXT NOT NULL CHECK (state IN ('pending','delivered','failed')),
            attempts INTEGER NOT NULL DEFAULT 0,
            next_attempt_at INTEGER NOT NULL,
            last_status INTEGER,
            last_error TEXT,
            updated_at INTEGER NOT NULL,
            PRIMARY KEY (event_id, url)
        ) WITHOUT ROWID;
        CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_at) WHERE state = 'pending';

        CREATE TABLE idempotency_keys (
            principal TEXT NOT NULL,
            key TEXT NOT NULL,
            body_sha256 TEXT NOT NULL,
            download_id TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (principal, key)
        ) WITHOUT ROWID;
        """,
        // 2: the history of every attempt, for clients asking why a job is where it is.
        """
        CREATE TABLE download_attempts (
            download_id TEXT NOT NULL REFERENCES downloads(id) ON DELETE CASCADE,
            number INTEGER NOT NULL,
            started_at INTEGER NOT NULL,
            ended_at INTEGER NOT NULL,
            outcome TEXT NOT NULL,
            error_code TEXT,
            error_message TEXT,
            http_status INTEGER,
            bytes_transferred INTEGER NOT NULL,
            bytes_on_disk INTEGER NOT NULL,
            PRIMARY KEY (download_id, number)
        ) WITHOUT ROWID;
        """,
        // 3: scheduling without scans. Queued jobs are `due` once their run_at has passed (a
        // promotion step flips the flag, so the claim index holds only startable jobs); `lane` 1 is
        // a discretionary job that has not yet waited its maximum delay; `fair_tag` orders jobs
        // fairly between sessions (start-time fair queueing).
        """
        ALTER TABLE downloads ADD COLUMN due INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE downloads ADD COLUMN lane INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE downloads ADD COLUMN fair_tag INTEGER NOT NULL DEFAULT 0;
        UPDATE downloads SET lane = discretionary;
        DROP INDEX downloads_queue;
        DROP INDEX downloads_due;
        CREATE INDEX downloads_normal_lane ON downloads(priority DESC, fair_tag, id) WHERE state = 'queued' AND due = 1 AND lane = 0;
        CREATE INDEX downloads_discretionary_lane ON downloads(expected_bytes_to_receive, priority DESC, fair_tag, id)
            WHERE state = 'queued' AND due = 1 AND lane = 1;
        CREATE INDEX downloads_pending ON downloads(run_at) WHERE state = 'queued' AND due = 0;
        CREATE INDEX downloads_aging ON downloads(created_at) WHERE state = 'queued' AND lane = 1;
        CREATE TABLE sessions (name TEXT PRIMARY KEY NOT NULL, last_tag INTEGER NOT NULL) WITHOUT ROWID;
        CREATE TABLE scheduler_state (key TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL) WITHOUT ROWID;
        INSERT INTO scheduler_state (key, value) VALUES ('virtual_time', 0);
        """,
        // 4: deliveries in event order per URL, where order matters (session.finished after its jobs' events).
        """
        CREATE INDEX webhook_deliveries_by_url ON webhook_deliveries(url, event_id) WHERE state = 'pending';
        """,
        // 5: retention, so that pruning finds old rows without scanning.
        """
        CREATE INDEX downloads_finished ON downloads(finished_at) WHERE state IN ('completed','failed','cancelled');
        CREATE INDEX webhook_deliveries_settled ON webhook_deliveries(updated_at) WHERE state != 'pending';
        CREATE INDEX webhook_events_created ON webhook_events(created_at);
        CREATE INDEX idempotency_keys_created ON idempotency_keys(created_at);
        """,
        // 6: the claim indexes again, host first: the best due jobs of each host, for passes that
        // leave out hosts at their limit without stepping over all of those hosts' jobs.
        """
        CREATE INDEX downloads_normal_lane_by_host ON downloads(host_key, priority DESC, fair_tag, id)
            WHERE state = 'queued' AND due = 1 AND lane = 0;
        CREATE INDEX downloads_discretionary_lane_by_host ON downloads(host_key, expected_bytes_to_receive, priority DESC, fair_tag, id)
            WHERE state = 'queued' AND due = 1 AND lane = 1;
        """,
        // 7: the session an event belongs to, so a session.finished waits only for its own session's
        // earlier events (those to the same URL), not for every other session's.
        """
        ALTER TABLE webhook_events ADD COLUMN session TEXT NOT NULL DEFAULT '';
        UPDATE webhook_events SET session = COALESCE(json_extract(CAST(payload AS TEXT), '$.data.session'), '');
        CREATE INDEX webhook_events_session ON webhook_events(session, id);
        """,
        // 8: jobs by state, kept by triggers in the transaction of every change, so /metrics and
        // FETCHD_MAX_QUEUED read six rows instead of counting the queue.
        """
        CREATE TABLE job_counts (state TEXT PRIMARY KEY NOT NULL, count INTEGER NOT NULL) WITHOUT ROWID;
        INSERT INTO job_counts (state, count) SELECT state, COUNT(*) FROM downloads GROUP BY state;
        CREATE TRIGGER job_counts_insert AFTER INSERT ON downloads BEGIN
            INSERT INTO job_counts (state, count) VALUES (NEW.state, 1) ON CONFLICT (state) DO UPDATE SET count = count + 1;
        END;
        CREATE TRIGGER job_counts_delete AFTER DELETE ON downloads BEGIN
            UPDATE job_counts SET count = count - 1 WHERE state = OLD.state;
        END;
        CREATE TRIGGER job_counts_update AFTER UPDATE OF state ON downloads WHEN OLD.state != NEW.state BEGIN
            UPDATE job_counts SET count = count - 1 WHERE state = OLD.state;
            INSERT INTO job_counts (state, count) VALUES (NEW.state, 1) ON CONFLICT (state) DO UPDATE SET count = count + 1;
        END;
        """,
        // 9: jobs a client steers after submit: its own metadata, a revision for ETag/If-Match that
        // every write of the row moves on, and where the retry budget last started over.
        """
        ALTER TABLE downloads ADD COLUMN metadata TEXT;
        ALTER TABLE downloads ADD COLUMN attempts_before_retry INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE downloads ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;
        """,
        // 10: the answers to batch submissions made with an idempotency key, replayed as given.
        """
        CREATE TABLE idempotent_batches (
            principal TEXT NOT NULL,
            key TEXT NOT NULL,
            body_sha256 TEXT NOT NULL,
            answer BLOB NOT NULL,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (principal, key)
        ) WITHOUT ROWID;
        CREATE INDEX idempotent_batches_created ON idempotent_batches(created_at);
        """,
        // 11: every state change, in commit order, for GET /events and its Last-Event-ID replay.
        // AUTOINCREMENT: a sequence number is never used twice, even after the newest rows are pruned.
        """
        CREATE TABLE event_log (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            session TEXT NOT NULL,
            download_id TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            payload BLOB NOT NULL
        );
        CREATE INDEX event_log_session ON event_log(session, seq);
        CREATE INDEX event_log_created ON event_log(created_at);
        """,
        // 12: URL refresh: whether a job waits for a new URL after 401/403/410, and since when it does.
        """
        ALTER TABLE downloads ADD COLUMN url_refresh INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE downloads ADD COLUMN awaiting_url_since INTEGER;
        """,
        // 13: hosts that answered 429/503 with Retry-After, held for every job until then (across restarts).
        """
        CREATE TABLE host_backoffs (host_key TEXT PRIMARY KEY NOT NULL, until INTEGER NOT NULL);
        """,
        // 14: outages that pass — attempts that never reached the origin, the time of the last
        // byte (or first attempt), and since when a job whose disk filled has waited for space.
        """
        ALTER TABLE downloads ADD COLUMN outage_attempts INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE downloads ADD COLUMN progress_at INTEGER;
        ALTER TABLE downloads ADD COLUMN disk_full_since INTEGER;
        """,
        // 15: files and checksums — a checksum in any algorithm, a digest file's URL, onConflict:
        // rename, the file's path once known (a job from before names its file: the destination),
        // resourceTimeout. Directory destinations (`dir/`) are shared by any number of live jobs,
        // so the one-live-job rule leaves them out.
        """
        ALTER TABLE downloads ADD COLUMN checksum TEXT;
        ALTER TABLE downloads ADD COLUMN checksum_url TEXT;
        ALTER TABLE downloads ADD COLUMN rename_on_conflict INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE downloads ADD COLUMN path TEXT;
        ALTER TABLE downloads ADD COLUMN resource_timeout TEXT;
        UPDATE downloads SET path = destination;
        DROP INDEX downloads_live_destination;
        CREATE UNIQUE INDEX downloads_live_destination ON downloads(destination)
            WHERE state IN ('queued','running','paused') AND destination NOT LIKE '%/';
        """,
        // 16: mirrors and segmented downloads: the other URLs and
        // which one attempts go to, parallel connections and each byte range's progress, a job's
        // own rate cap, and the URL each attempt used.
        """
        ALTER TABLE downloads ADD COLUMN mirrors TEXT;
        ALTER TABLE downloads ADD COLUMN connections INTEGER NOT NULL DEFAULT 1;
        ALTER TABLE downloads ADD COLUMN max_bytes_per_second INTEGER;
        ALTER TABLE downloads ADD COLUMN mirror_index INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE downloads ADD COLUMN mirror_misses INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE downloads ADD COLUMN ranges TEXT;
        ALTER TABLE download_attempts ADD COLUMN url TEXT;
        """,
        // 17: the partial indexes' conditions as OR-ed equalities instead of IN lists. SQLite checks
        // a constant IN list of three or more values through a temporary b-tree that it builds on
        // every execution of a statement writing the row: a fifth of the CPU of inserting a job.
        // (Queries meant for these indexes must spell the same OR, which implies the condition.)
        """
        DROP INDEX downloads_live_destination;
        CREATE UNIQUE INDEX downloads_live_destination ON downloads(destination)
            WHERE (state = 'queued' OR state = 'running' OR state = 'paused') AND destination NOT LIKE '%/';
        DROP INDEX downloads_finished;
        CREATE INDEX downloads_finished ON downloads(finished_at)
            WHERE state = 'completed' OR state = 'failed' OR state = 'cancelled';
        """,
        // 18: event log rows of many events (`LogRow`): a batch or a session action writes a row
        // per run of jobs, not a row and two index entries per job. The rows so far hold one each.
        // New jobs counted once per transaction by the one statement that inserts jobs
        // (`SQLiteStore.insert`), not by a trigger once per job. And the one-live-job rule on a
        // column the writes that start or end a job's life set (`DownloadColumns.liveDestination`):
        // an index whose condition names the state is rewritten by every state change, so a pause
        // of 100,000 jobs rewrote 100,000 entries to leave them as they were.
        """
        ALTER TABLE event_log ADD COLUMN count INTEGER NOT NULL DEFAULT 1;
        DROP TRIGGER job_counts_insert;
        ALTER TABLE downloads ADD COLUMN live_destination TEXT;
        UPDATE downloads SET live_destination = destination
            WHERE (state = 'queued' OR state = 'running' OR state = 'paused') AND destination NOT LIKE '%/';
        DROP INDEX downloads_live_destination;
        CREATE UNIQUE INDEX downloads_live_destination ON downloads(live_destination) WHERE live_destination IS NOT NULL;
        -- A net for a write that changes whether a job is live without setting the column: it
        -- does what the write should have (fetchd's own writes set it, so this never runs for them).
        CREATE TRIGGER downloads_live_destination_follows AFTER UPDATE OF state ON downloads
            WHEN (NEW.live_destination IS NULL)
                = ((NEW.state = 'queued' OR NEW.state = 'running' OR NEW.state = 'paused') AND NEW.destination NOT LIKE '%/')
        BEGIN
            UPDATE downloads SET live_destination = CASE WHEN NEW.live_destination IS NULL THEN NEW.destination END WHERE id = NEW.id;
        END;
        """,
        // 19: the state CHECKs as OR-ed equalities, for the reason of 17: SQLite built a temporary
        // b-tree of the IN list each time a statement wrote a job's row or a delivery's (an insert
        // of a job opened, filled and closed one). A CHECK is not stored in rows, so the table's
        // text is edited in place (SQLite's documented way to change one, lang_altertable.html)
        // instead of copying the tables; RESET reloads the schema. Every row already satisfies
        // the new text, which allows the same states; the schema cookie stays, so a connection
        // that still holds the old text checks the same thing more slowly.
        """
        PRAGMA writable_schema = ON;
        UPDATE sqlite_schema SET sql = replace(sql,
            'CHECK (state IN (''queued'',''running'',''paused'',''completed'',''failed'',''cancelled''))',
            'CHECK (state = ''queued'' OR state = ''running'' OR state = ''paused'' OR state = ''completed'' OR state = ''failed'' OR state = ''cancelled'')')
            WHERE type = 'table' AND name = 'downloads';
        UPDATE sqlite_schema SET sql = replace(sql,
            'CHECK (state IN (''pending'',''delivered'',''failed''))',
            'CHECK (state = ''pending'' OR state = ''delivered'' OR state = ''failed'')')
            WHERE type = 'table' AND name = 'webhook_deliveries';
        PRAGMA writable_schema = RESET;
        """,
        // 20: a session's jobs by whether they are finished (`finished_at`, set by every write that
        // ends a job and cleared by a retry), not by state: a pause or resume of 100,000 jobs leaves
        // each entry in its place, where under (session, state) it moved every one and, changing the
        // index it walked, had SQLite list the jobs in a temporary b-tree before the first write.
        """
        DROP INDEX downloads_session;
        CREATE INDEX downloads_session ON downloads(session, finished_at);
        """,
        // 21: object destinations: the multipart upload under way (its key, id, committed parts
        // and digest state), and the stored object's ETag and version.
        """
        ALTER TABLE downloads ADD COLUMN object_upload TEXT;
        ALTER TABLE downloads ADD COLUMN object_etag TEXT;
        ALTER TABLE downloads ADD COLUMN object_version_id TEXT;
        """,
        // 22: uploads: what an upload job sends, how, and the reply it keeps (NULL for a download).
        "ALTER TABLE downloads ADD COLUMN upload TEXT;",
        // 23: watches. A check job names its watch (NULL for any other job); a watch is one row:
        // its fields and state as one JSON text (`Watch.text`), beside the columns looked up —
        // one watch per destination, the check it has, and the idempotency key that made it.
        """
        ALTER TABLE downloads ADD COLUMN watch TEXT;
        CREATE TABLE watches (
            id TEXT PRIMARY KEY NOT NULL,
            destination TEXT NOT NULL UNIQUE,
            state TEXT NOT NULL CHECK (state = 'active' OR state = 'paused'),
            check_id TEXT,
            body TEXT NOT NULL,
            revision INTEGER NOT NULL DEFAULT 1,
            idempotency_principal TEXT,
            idempotency_key TEXT,
            body_sha256 TEXT
        ) WITHOUT ROWID;
        CREATE UNIQUE INDEX watches_idempotency ON watches(idempotency_principal, idempotency_key) WHERE idempotency_key IS NOT NULL;
        """,
        // 24: an upload holds no destination (`DownloadColumns.liveDestination`), so the net of 18
        // must not give it one when a claim makes it running: a second upload then collided with
        // the first on the empty destination.
        """
        UPDATE downloads SET live_destination = NULL WHERE upload IS NOT NULL;
        DROP TRIGGER downloads_live_destination_follows;
        CREATE TRIGGER downloads_live_destination_follows AFTER UPDATE OF state ON downloads
            WHEN (NEW.live_destination IS NULL)
                = ((NEW.state = 'queued' OR NEW.state = 'running' OR NEW.state = 'paused') AND NEW.destination NOT LIKE '%/'
                   AND NEW.upload IS NULL)
        BEGIN
            UPDATE downloads SET live_destination = CASE WHEN NEW.live_destination IS NULL THEN NEW.destination END WHERE id = NEW.id;
        END;
        """,
        // 25: uploads by state for /metrics, counted from an index of the uploads alone (a queue of
        // a million downloads is not read for them).
        "CREATE INDEX downloads_upload_state ON downloads(state) WHERE upload IS NOT NULL;",
    ]

    static func run(on connection: SQLiteConnection) throws {
        try connection.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        let current = try connection.prepare("SELECT version FROM schema_version").query { $0.int(0) }.first ?? 0
        if current > all.count {
            throw SQLiteError(code: 0, message: "the database has schema version \(current) but this fetchd knows only up to \(all.count): it was written by a newer fetchd; upgrade fetchd or use another data directory")
        }
        for version in current..<all.count {
            try connection.transaction {
                try connection.execute(all[version])
                try connection.prepare("DELETE FROM schema_version").run()
                try connection.prepare("INSERT INTO schema_version (version) VALUES (?)").run([.integer(Int64(version + 1))])
            }
        }
    }
}
