/// The PostgreSQL schema, as an append-only list of migrations (its own, not SQLite's: the two
/// evolve apart). The database records how many have run; one that has run more than this binary
/// knows was written by a newer fetchd, and this one refuses to touch it. Nodes starting together
/// take turns under an advisory lock.
enum PostgresMigrations {
    static let all: [String] = [
        // 1: jobs with their scheduling columns, attempts, the webhook outbox, idempotency keys,
        // host holds, fair-queueing state and kept job counts: the same model as SQLite's schema version 9.
        """
        CREATE TABLE downloads (
            -- Ids sort by creation byte for byte (pages, cursors, event order), whatever the database's locale.
            id text COLLATE "C" PRIMARY KEY,
            url text NOT NULL,
            destination text NOT NULL,
            session text NOT NULL,
            state text NOT NULL CHECK (state IN ('queued','running','paused','completed','failed','cancelled')),
            earliest_begin_at bigint,
            discretionary boolean NOT NULL,
            priority double precision NOT NULL CHECK (priority BETWEEN 0 AND 1),
            expected_bytes_to_send bigint,
            expected_bytes_to_receive bigint,
            bytes_received bigint NOT NULL DEFAULT 0,
            bytes_expected bigint,
            attempts integer NOT NULL DEFAULT 0,
            http_status integer,
            error_code text,
            error_message text,
            sha256 text,
            expected_sha256 text,
            webhook_url text,
            headers text,
            overwrite boolean NOT NULL,
            validator text,
            created_at bigint NOT NULL,
            started_at bigint,
            finished_at bigint,
            run_at bigint NOT NULL,
            next_attempt_at bigint,
            host_key text NOT NULL,
            -- Queued jobs whose run_at has passed (set by the claim's promotion step, so the lane
            -- indexes hold only startable jobs); lane 1 is a discretionary job that has not yet
            -- waited its maximum delay; fair_tag orders sessions fairly (start-time fair queueing).
            due boolean NOT NULL DEFAULT false,
            lane smallint NOT NULL DEFAULT 0 CHECK (lane IN (0, 1)),
            fair_tag bigint NOT NULL DEFAULT 0
        );
        -- One live job per destination: a second submission for it is a conflict, decided atomically.
        CREATE UNIQUE INDEX downloads_live_destination ON downloads (destination) WHERE state IN ('queued','running','paused');
        -- The claim's lanes, best first, and the same with the host first (for passes that leave out full hosts).
        -- Discretionary jobs of unknown size come first, as in SQLite, where NULL sorts lowest.
        CREATE INDEX downloads_normal_lane ON downloads (priority DESC, fair_tag, id) WHERE state = 'queued' AND due AND lane = 0;
        CREATE INDEX downloads_discretionary_lane ON downloads (expected_bytes_to_receive NULLS FIRST, priority DESC, fair_tag, id)
            WHERE state = 'queued' AND due AND lane = 1;
        CREATE INDEX downloads_normal_lane_by_host ON downloads (host_key, priority DESC, fair_tag, id)
            WHERE state = 'queued' AND due AND lane = 0;
        CREATE INDEX downloads_discretionary_lane_by_host ON downloads
            (host_key, expected_bytes_to_receive NULLS FIRST, priority DESC, fair_tag, id) WHERE state = 'queued' AND due AND lane = 1;
        CREATE INDEX downloads_pending ON downloads (run_at) WHERE state = 'queued' AND NOT due;
        CREATE INDEX downloads_aging ON downloads (created_at) WHERE state = 'queued' AND lane = 1;
        CREATE INDEX downloads_state ON downloads (state, id);
        CREATE INDEX downloads_session ON downloads (session, state);
        CREATE INDEX downloads_finished ON downloads (finished_at) WHERE state IN ('completed','failed','cancelled');
        -- The queue churns: vacuum it long before the default 20 % of dead rows.
        ALTER TABLE downloads SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.02);

        CREATE TABLE download_attempts (
            download_id text COLLATE "C" NOT NULL REFERENCES downloads (id) ON DELETE CASCADE,
            number integer NOT NULL,
            started_at bigint NOT NULL,
            ended_at bigint NOT NULL,
            outcome text NOT NULL,
            error_code text,
            error_message text,
            http_status integer,
            bytes_transferred bigint NOT NULL,
            bytes_on_disk bigint NOT NULL,
            PRIMARY KEY (download_id, number)
        );

        CREATE TABLE webhook_events (
            id text COLLATE "C" PRIMARY KEY,
            type text NOT NULL,
            payload bytea NOT NULL,
            created_at bigint NOT NULL,
            session text NOT NULL
        );
        CREATE INDEX webhook_events_session ON webhook_events (session, id);
        CREATE INDEX webhook_events_created ON webhook_events (created_at);
        CREATE TABLE webhook_deliveries (
            event_id text COLLATE "C" NOT NULL REFERENCES webhook_events (id) ON DELETE CASCADE,
            url text NOT NULL,
            state text NOT NULL CHECK (state IN ('pending','delivered','failed')),
            attempts integer NOT NULL DEFAULT 0,
            next_attempt_at bigint NOT NULL,
            last_status integer,
            last_error text,
            updated_at bigint NOT NULL,
            PRIMARY KEY (event_id, url)
        );
        CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
        CREATE INDEX webhook_deliveries_by_url ON webhook_deliveries (url, event_id) WHERE state = 'pending';
        CREATE INDEX webhook_deliveries_settled ON webhook_deliveries (updated_at) WHERE state <> 'pending';

        CREATE TABLE idempotency_keys (
            principal text NOT NULL,
            key text NOT NULL,
            body_sha256 text NOT NULL,
            download_id text NOT NULL,
            created_at bigint NOT NULL,
            PRIMARY KEY (principal, key)
        );
        CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

        -- Hosts that answered 429/503 with Retry-After, held for every job until then (across restarts).
        CREATE TABLE host_backoffs (host_key text PRIMARY KEY, until bigint NOT NULL);

        CREATE TABLE sessions (name text PRIMARY KEY, last_tag bigint NOT NULL);
        CREATE TABLE scheduler_state (key text PRIMARY KEY, value bigint NOT NULL);
        INSERT INTO scheduler_state (key, value) VALUES ('virtual_time', 0);

        -- Jobs by state, kept by triggers in the transaction of every change, so /metrics and
        -- FETCHD_MAX_QUEUED read a few rows instead of counting the queue. Each connection adds to
        -- its own shard (by backend process), so concurrent writers do not queue on one row lock;
        -- a count is the sum over shards.
        CREATE TABLE job_counts (
            state text NOT NULL,
            shard integer NOT NULL,
            count bigint NOT NULL,
            PRIMARY KEY (state, shard)
        );
        CREATE FUNCTION job_counts_follow() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE own_shard integer := pg_backend_pid() % 16;
        BEGIN
            IF TG_OP <> 'INSERT' THEN
                INSERT INTO job_counts (state, shard, count) VALUES (OLD.state, own_shard, -1)
                ON CONFLICT (state, shard) DO UPDATE SET count = job_counts.count - 1;
            END IF;
            IF TG_OP <> 'DELETE' THEN
                INSERT INTO job_counts (state, shard, count) VALUES (NEW.state, own_shard, 1)
                ON CONFLICT (state, shard) DO UPDATE SET count = job_counts.count + 1;
            END IF;
            RETURN NULL;
        END
        $$;
        CREATE TRIGGER job_counts_insert_delete AFTER INSERT OR DELETE ON downloads
            FOR EACH ROW EXECUTE FUNCTION job_counts_follow();
        CREATE TRIGGER job_counts_update AFTER UPDATE OF state ON downloads
            FOR EACH ROW WHEN (OLD.state <> NEW.state) EXECUTE FUNCTION job_counts_follow();
        """,
        // 2: steering after submit and outages that pass, as SQLite's versions 9–14: a job's own
        // metadata, a revision for ETag/If-Match that every write of the row moves on, where the
        // retry budget last started over, URL refresh, attempts that never reached the origin, the
        // time of the last byte and since when a full disk has held the job; the answers to keyed
        // batch submissions; and every state change in one sequence, for GET /events.
        """
        ALTER TABLE downloads
            ADD COLUMN metadata text,
            ADD COLUMN attempts_before_retry integer NOT NULL DEFAULT 0,
            ADD COLUMN revision bigint NOT NULL DEFAULT 0,
            ADD COLUMN url_refresh boolean NOT NULL DEFAULT false,
            ADD COLUMN awaiting_url_since bigint,
            ADD COLUMN outage_attempts integer NOT NULL DEFAULT 0,
            ADD COLUMN progress_at bigint,
            ADD COLUMN disk_full_since bigint;

        CREATE TABLE idempotent_batches (
            principal text NOT NULL,
            key text NOT NULL,
            body_sha256 text NOT NULL,
            answer bytea NOT NULL,
            created_at bigint NOT NULL,
            PRIMARY KEY (principal, key)
        );
        CREATE INDEX idempotent_batches_created ON idempotent_batches (created_at);

        -- An identity never hands out a number twice, even after the newest rows are pruned.
        CREATE TABLE event_log (
            seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            session text NOT NULL,
            download_id text NOT NULL,
            created_at bigint NOT NULL,
            payload bytea NOT NULL
        );
        CREATE INDEX event_log_session ON event_log (session, seq);
        CREATE INDEX event_log_created ON event_log (created_at);
        """,
        // 3: files and checksums, as SQLite's version 15: a checksum in any algorithm, a digest
        // file's URL, onConflict: rename, the file's path once known (a job from before names its
        // file: the destination), resourceTimeout; directory destinations (`dir/`) are shared by
        // any number of live jobs.
        """
        ALTER TABLE downloads
            ADD COLUMN checksum text,
            ADD COLUMN checksum_url text,
            ADD COLUMN rename_on_conflict boolean NOT NULL DEFAULT false,
            ADD COLUMN path text,
            ADD COLUMN resource_timeout text;
        UPDATE downloads SET path = destination;
        DROP INDEX downloads_live_destination;
        CREATE UNIQUE INDEX downloads_live_destination ON downloads (destination)
            WHERE state IN ('queued','running','paused') AND destination NOT LIKE '%/';
        """,
        // 4: mirrors and segmented downloads, as SQLite's version 16.
        """
        ALTER TABLE downloads
            ADD COLUMN mirrors text,
            ADD COLUMN connections integer NOT NULL DEFAULT 1,
            ADD COLUMN max_bytes_per_second bigint,
            ADD COLUMN mirror_index integer NOT NULL DEFAULT 0,
            ADD COLUMN mirror_misses integer NOT NULL DEFAULT 0,
            ADD COLUMN ranges text;
        ALTER TABLE download_attempts ADD COLUMN url text;
        """,
        // 5: many nodes. Each node has a row it renews (heartbeat, in the database's clock) and
        // holds a session advisory lock keyed by its lock_key while its process lives; a running
        // job names the node whose lease it runs under; a webhook delivery in flight is leased to
        // the node sending it until leased_until.
        """
        CREATE SEQUENCE node_lock_keys AS integer CYCLE;
        CREATE TABLE nodes (
            id text PRIMARY KEY,
            name text NOT NULL,
            lock_key integer NOT NULL,
            started_at bigint NOT NULL,
            heartbeat_at bigint NOT NULL
        );
        ALTER TABLE downloads ADD COLUMN lease_owner text;
        -- The running load per node and host, read by every claim pass.
        CREATE INDEX downloads_running ON downloads (lease_owner, host_key) WHERE state = 'running';
        ALTER TABLE webhook_deliveries ADD COLUMN lease_owner text, ADD COLUMN leased_until bigint NOT NULL DEFAULT 0;
        """,
        // 6: counts kept once per statement instead of once per row. A claim or settlement of 32 jobs ran 64 upserts of job_counts from a row
        // trigger; now one, grouped by state from the statement's transition tables. (Transition
        // tables allow neither a column list nor more than one event per trigger, so every UPDATE
        // of downloads fires it; one that moves no state writes nothing.) The same triggers keep
        // running jobs per node and host, which every claim pass reads: counted from the running
        // rows, a pass read every index entry a settled job had left until vacuum (6 ms at 20,000).
        """
        CREATE TABLE running_counts (
            lease_owner text NOT NULL,  -- '' for a running job without one
            host_key text NOT NULL,
            count bigint NOT NULL,
            PRIMARY KEY (lease_owner, host_key)
        );
        INSERT INTO running_counts (lease_owner, host_key, count)
        SELECT COALESCE(lease_owner, ''), host_key, COUNT(*) FROM downloads WHERE state = 'running' GROUP BY 1, 2;
        DROP TRIGGER job_counts_insert_delete ON downloads;
        DROP TRIGGER job_counts_update ON downloads;
        DROP FUNCTION job_counts_follow();
        \(countsFollow(perSession: false))
        CREATE TRIGGER job_counts_insert AFTER INSERT ON downloads
            REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION job_counts_follow();
        CREATE TRIGGER job_counts_update AFTER UPDATE ON downloads
            REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION job_counts_follow();
        CREATE TRIGGER job_counts_delete AFTER DELETE ON downloads
            REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION job_counts_follow();
        """,
        // 7: a session's counts by state and its webhook URLs, kept by the same triggers, sharded as
        // job_counts is. Every time a session's last live job ends (`session.finished`) its counts
        // and distinct webhook URLs are read: counted from the jobs, that read every job the
        // session ever had (a long-lived session drained 20 times a second: 30 ms each at 80,000
        // jobs, most of the server's time in a 10-minute soak).
        """
        CREATE TABLE session_counts (
            session text NOT NULL,
            state text NOT NULL,
            shard integer NOT NULL,
            count bigint NOT NULL,
            PRIMARY KEY (session, state, shard)
        );
        INSERT INTO session_counts (session, state, shard, count) SELECT session, state, 0, COUNT(*) FROM downloads GROUP BY 1, 2;
        CREATE TABLE session_webhooks (
            session text NOT NULL,
            webhook_url text NOT NULL,
            shard integer NOT NULL,
            count bigint NOT NULL,
            PRIMARY KEY (session, webhook_url, shard)
        );
        INSERT INTO session_webhooks (session, webhook_url, shard, count)
        SELECT session, webhook_url, 0, COUNT(*) FROM downloads WHERE webhook_url IS NOT NULL GROUP BY 1, 2;
        \(countsFollow(perSession: true))
        """,
        // 8: object destinations, as SQLite's version 21.
        """
        ALTER TABLE downloads
            ADD COLUMN object_upload text,
            ADD COLUMN object_etag text,
            ADD COLUMN object_version_id text;
        """,
        // 9: uploads, as SQLite's version 22; an upload writes no destination, so none of its
        // own is held by the one-live-job-per-destination index.
        """
        ALTER TABLE downloads ADD COLUMN upload text;
        DROP INDEX downloads_live_destination;
        CREATE UNIQUE INDEX downloads_live_destination ON downloads (destination)
            WHERE state IN ('queued','running','paused') AND destination NOT LIKE '%/' AND upload IS NULL;
        """,
        // 10: watches, as SQLite's version 23.
        """
        ALTER TABLE downloads ADD COLUMN watch text;
        CREATE TABLE watches (
            id text PRIMARY KEY,
            destination text NOT NULL UNIQUE,
            state text NOT NULL CHECK (state IN ('active','paused')),
            check_id text,
            body text NOT NULL,
            revision bigint NOT NULL DEFAULT 1,
            idempotency_principal text,
            idempotency_key text,
            body_sha256 text
        );
        CREATE UNIQUE INDEX watches_idempotency ON watches (idempotency_principal, idempotency_key) WHERE idempotency_key IS NOT NULL;
        """,
        // 11: uploads by state for /metrics, as SQLite's version 25.
        "CREATE INDEX downloads_upload_state ON downloads (state) WHERE upload IS NOT NULL;",
    ]

    /// `job_counts_follow`, the function of the jobs table's statement triggers: adds each statement's
    /// changes to job_counts (this backend's shard) and running_counts, and from version 7 on
    /// (`perSession`) to session_counts and session_webhooks (this backend's shard too).
    private static func countsFollow(perSession: Bool) -> String {
        let columns = "state, lease_owner, host_key" + (perSession ? ", session, webhook_url" : "")
        return """
        CREATE OR REPLACE FUNCTION job_counts_follow() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE own_shard integer := pg_backend_pid() % 16;
        BEGIN
            -- Each branch names only the transition tables its trigger has.
            IF TG_OP = 'INSERT' THEN
                \(countChanges("SELECT \(columns), 1 AS change FROM new_rows", perSession: perSession))
            ELSIF TG_OP = 'DELETE' THEN
                \(countChanges("SELECT \(columns), -1 AS change FROM old_rows", perSession: perSession))
            ELSE
                \(countChanges("""
                    SELECT \(columns), -1 AS change FROM old_rows
                    UNION ALL SELECT \(columns), 1 FROM new_rows
                    """, perSession: perSession))
            END IF;
            RETURN NULL;
        END
        $$;
        """
    }

    /// The statement of `job_counts_follow` that adds a statement's `changes` (rows of the counted
    /// columns and -1 for a row that left or +1 for a row that came) to the counts, writing only
    /// counts that moved, in key order.
    private static func countChanges(_ changes: String, perSession: Bool) -> String {
        let sessions = !perSession ? "" : """
            , sessions AS (
                INSERT INTO session_counts (session, state, shard, count)
                SELECT session, state, own_shard, SUM(change) FROM changes GROUP BY 1, 2 HAVING SUM(change) <> 0 ORDER BY 1, 2
                ON CONFLICT (session, state, shard) DO UPDATE SET count = session_counts.count + EXCLUDED.count
            ), webhooks AS (
                INSERT INTO session_webhooks (session, webhook_url, shard, count)
                SELECT session, webhook_url, own_shard, SUM(change) FROM changes WHERE webhook_url IS NOT NULL
                GROUP BY 1, 2 HAVING SUM(change) <> 0 ORDER BY 1, 2
                ON CONFLICT (session, webhook_url, shard) DO UPDATE SET count = session_webhooks.count + EXCLUDED.count
            )
            """
        return """
        WITH changes AS (\(changes)), states AS (
            INSERT INTO job_counts (state, shard, count)
            SELECT state, own_shard, SUM(change) FROM changes GROUP BY state HAVING SUM(change) <> 0 ORDER BY state
            ON CONFLICT (state, shard) DO UPDATE SET count = job_counts.count + EXCLUDED.count
        )\(sessions)
        INSERT INTO running_counts (lease_owner, host_key, count)
        SELECT COALESCE(lease_owner, ''), host_key, SUM(change) FROM changes WHERE state = 'running'
        GROUP BY 1, 2 HAVING SUM(change) <> 0 ORDER BY 1, 2
        ON CONFLICT (lease_owner, host_key) DO UPDATE SET count = running_counts.count + EXCLUDED.count;
        """
    }

    static func run(on connection: PostgresConnection) throws {
        try connection.transaction {
            try connection.execute(AdvisoryLock.migrations)
            try connection.execute("CREATE TABLE IF NOT EXISTS schema_version (version integer NOT NULL)")
            let current = try connection.query("SELECT version FROM schema_version") { $0.int(0) }.first ?? 0
            if current > all.count {
                throw PostgresError(message: "the database has schema version \(current) but this fetchd knows only up to \(all.count): it was written by a newer fetchd; upgrade fetchd or use another database", sqlState: nil, sql: nil)
            }
            guard current < all.count else { return }
            for version in current..<all.count { try connection.execute(all[version]) }
            try connection.execute("DELETE FROM schema_version")
            try connection.run("INSERT INTO schema_version (version) VALUES ($1)", [.integer(Int64(all.count))])
        }
    }
}
