// The floor of a durable small-file queue on this machine: what a service that keeps
// fetchd's promises must do for each file besides its three HTTP exchanges (the POST, the GET from
// the origin, the webhook), in C, on one thread, with no hand-offs between threads:
//   - the job inserted (16 a transaction, a group commit), claimed and settled in SQLite (WAL,
//     synchronous=NORMAL, 8 KiB pages, as fetchd), 16 a transaction as 16 slots turn over, with its
//     attempt, its webhook event and delivery rows, an event-log row per transaction, and the
//     delivery marked delivered;
//   - the file written under a partial name, hashed (SHA-256), fsynced, linked into place, its
//     partial name removed, the destination directory fsynced once per 16 files; an HMAC per event.
// Usage: floor DIR [FILES] [all|nosync|db|files]; prints one JSON line with wall and CPU time.
// Run by Benchmarks/durable_floor.py, which builds it and puts it beside curl.
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { BATCH = 16, SIZE = 16384 };

static sqlite3 *db;
static sqlite3_stmt *insert_job, *claim_job, *settle_job, *insert_attempt, *insert_event, *insert_delivery, *append_log, *mark_delivered;
static char payload[700];

static double wall_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static double cpu_now(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6;
}

static void fail(const char *what) {
    fprintf(stderr, "floor: %s: %s\n", what, db ? sqlite3_errmsg(db) : "");
    exit(1);
}

static void exec_sql(const char *sql) {
    if (sqlite3_exec(db, sql, 0, 0, 0) != SQLITE_OK) fail(sql);
}

static sqlite3_stmt *prepare(const char *sql) {
    sqlite3_stmt *statement;
    if (sqlite3_prepare_v2(db, sql, -1, &statement, 0) != SQLITE_OK) fail(sql);
    return statement;
}

static void step(sqlite3_stmt *statement) {
    if (sqlite3_step(statement) != SQLITE_DONE) fail("step");
    sqlite3_reset(statement);
}

static void bind_id(sqlite3_stmt *statement, int job) {
    char id[32];
    snprintf(id, sizeof id, "job%08d", job);
    sqlite3_bind_text(statement, 1, id, -1, SQLITE_TRANSIENT);
}

static void open_store(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/floor.sqlite", dir);
    if (sqlite3_open(path, &db) != SQLITE_OK) fail(path);
    exec_sql("PRAGMA page_size = 8192; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA cache_size = -65536");
    // fetchd's downloads table has 46 columns and ten indexes; this one has the indexes a small
    // file's states touch.
    exec_sql(
        "CREATE TABLE downloads (id TEXT PRIMARY KEY, url TEXT, destination TEXT, session TEXT, state TEXT, priority REAL,"
        " bytes INTEGER, sha256 TEXT, created_at INTEGER, started_at INTEGER, finished_at INTEGER, run_at INTEGER, host_key TEXT,"
        " fair_tag INTEGER, due INTEGER, lane INTEGER, live_destination TEXT, revision INTEGER DEFAULT 0, attempts INTEGER DEFAULT 0,"
        " webhook_url TEXT, headers TEXT, metadata TEXT, validator TEXT, http_status INTEGER) WITHOUT ROWID;"
        "CREATE UNIQUE INDEX live ON downloads(live_destination) WHERE live_destination IS NOT NULL;"
        "CREATE INDEX by_state ON downloads(state, id);"
        "CREATE INDEX by_session ON downloads(session, finished_at);"
        "CREATE INDEX lane ON downloads(priority DESC, fair_tag, id) WHERE state = 'queued' AND due = 1 AND lane = 0;"
        "CREATE INDEX lane_by_host ON downloads(host_key, priority DESC, fair_tag, id) WHERE state = 'queued' AND due = 1 AND lane = 0;"
        "CREATE INDEX finished ON downloads(finished_at) WHERE state IN ('completed','failed','cancelled');"
        "CREATE TABLE attempts (download_id TEXT, number INTEGER, started_at INTEGER, ended_at INTEGER, outcome TEXT,"
        " PRIMARY KEY (download_id, number)) WITHOUT ROWID;"
        "CREATE TABLE events (id TEXT PRIMARY KEY, type TEXT, payload BLOB, created_at INTEGER, session TEXT) WITHOUT ROWID;"
        "CREATE INDEX events_created ON events(created_at);"
        "CREATE INDEX events_session ON events(session, id);"
        "CREATE TABLE deliveries (event_id TEXT, url TEXT, state TEXT, attempts INTEGER, next_attempt_at INTEGER, updated_at INTEGER,"
        " PRIMARY KEY (event_id, url)) WITHOUT ROWID;"
        "CREATE INDEX deliveries_due ON deliveries(next_attempt_at) WHERE state = 'pending';"
        "CREATE INDEX deliveries_by_url ON deliveries(url, event_id) WHERE state = 'pending';"
        "CREATE INDEX deliveries_settled ON deliveries(updated_at) WHERE state != 'pending';"
        "CREATE TABLE event_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, session TEXT, download_id TEXT, created_at INTEGER, payload BLOB);"
        "CREATE INDEX event_log_session ON event_log(session, seq);"
        "CREATE INDEX event_log_created ON event_log(created_at);");
    insert_job = prepare(
        "INSERT INTO downloads (id, url, destination, session, state, priority, bytes, created_at, run_at, host_key, fair_tag, due,"
        " lane, live_destination, webhook_url) VALUES (?1, 'http://127.0.0.1:8080/f.bin', ?2, 's', 'queued', 0, 0, 1, 1,"
        " '127.0.0.1:8080', ?3, 1, 0, ?2, 'http://127.0.0.1:9000/hook')");
    claim_job = prepare("UPDATE downloads SET state = 'running', started_at = 5, attempts = 1, revision = revision + 1 WHERE id = ?1 AND state = 'queued'");
    settle_job = prepare(
        "UPDATE downloads SET state = 'completed', finished_at = 9, bytes = 16384, http_status = 200, live_destination = NULL,"
        " sha256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855', revision = revision + 1"
        " WHERE id = ?1 AND state = 'running'");
    insert_attempt = prepare("INSERT INTO attempts VALUES (?1, 1, 5, 9, 'completed')");
    insert_event = prepare("INSERT INTO events VALUES (?1, 'download.completed', ?2, 9, 's')");
    insert_delivery = prepare("INSERT INTO deliveries VALUES (?1, 'http://127.0.0.1:9000/hook', 'pending', 0, 9, 9)");
    append_log = prepare("INSERT INTO event_log (session, download_id, created_at, payload) VALUES ('s', '[]', 9, ?1)");
    mark_delivered = prepare("UPDATE deliveries SET state = 'delivered', attempts = 1, updated_at = 10 WHERE event_id = ?1");
}

/// One transaction; `per_job` for each job of the batch, then one event-log row.
static void transaction(int first, int count, void (*per_job)(int), int logged) {
    exec_sql("BEGIN IMMEDIATE");
    for (int job = first; job < first + count; job++) per_job(job);
    if (logged) {
        sqlite3_bind_blob(append_log, 1, payload, sizeof payload, SQLITE_STATIC);
        step(append_log);
    }
    exec_sql("COMMIT");
}

static void insert_one(int job) {
    char destination[64];
    snprintf(destination, sizeof destination, "out/f%d.bin", job);
    bind_id(insert_job, job);
    sqlite3_bind_text(insert_job, 2, destination, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(insert_job, 3, job);
    step(insert_job);
}

static void claim_one(int job) {
    bind_id(claim_job, job);
    step(claim_job);
}

static void settle_one(int job) {
    unsigned char mac[32];
    unsigned int length;
    bind_id(settle_job, job);
    step(settle_job);
    bind_id(insert_attempt, job);
    step(insert_attempt);
    bind_id(insert_event, job);
    sqlite3_bind_blob(insert_event, 2, payload, 600, SQLITE_STATIC);
    step(insert_event);
    bind_id(insert_delivery, job);
    step(insert_delivery);
    HMAC(EVP_sha256(), "whsec_floor_secret", 18, (unsigned char *)payload, 600, mac, &length);
}

static void delivered_one(int job) {
    bind_id(mark_delivered, job);
    step(mark_delivered);
}

static void place_files(const char *dir, int out, int first, int count, int sync) {
    static unsigned char body[SIZE];
    char partial[4096], final[4096];
    for (int job = first; job < first + count; job++) {
        unsigned char digest[32];
        snprintf(partial, sizeof partial, "%s/partial/job%08d", dir, job);
        snprintf(final, sizeof final, "%s/out/f%d.bin", dir, job);
        int fd = open(partial, O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (fd < 0 || write(fd, body, SIZE) != SIZE) fail(partial);
        SHA256(body, SIZE, digest);
        if (sync && fsync(fd) != 0) fail("fsync");
        close(fd);
        if (link(partial, final) != 0 || unlink(partial) != 0) fail(final);
    }
    if (sync && fsync(out) != 0) fail("fsync of the directory");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: floor DIR [FILES] [all|nosync|db|files]\n");
        return 2;
    }
    const char *dir = argv[1], *mode = argc > 3 ? argv[3] : "all";
    int files = argc > 2 ? atoi(argv[2]) : 2000;
    int with_db = strcmp(mode, "files") != 0, with_files = strcmp(mode, "db") != 0, sync = strcmp(mode, "nosync") != 0;
    char path[4096];
    memset(payload, 'p', sizeof payload);
    snprintf(path, sizeof path, "%s/out", dir);
    mkdir(path, 0755);
    int out = open(path, O_RDONLY | O_DIRECTORY);
    snprintf(path, sizeof path, "%s/partial", dir);
    mkdir(path, 0755);
    if (with_db) open_store(dir);
    double wall = wall_now(), cpu = cpu_now();
    for (int first = 0; first < files; first += BATCH) {
        int count = files - first < BATCH ? files - first : BATCH;
        if (with_db) transaction(first, count, insert_one, 1);
        if (with_db) transaction(first, count, claim_one, 1);
        if (with_files) place_files(dir, out, first, count, sync);
        if (with_db) transaction(first, count, settle_one, 1);
        if (with_db) transaction(first, count, delivered_one, 0);
    }
    wall = wall_now() - wall;
    cpu = cpu_now() - cpu;
    printf("{\"mode\": \"%s\", \"files\": %d, \"wall_s\": %.3f, \"cpu_s\": %.3f, \"cpu_per_file_us\": %.0f}\n",
           mode, files, wall, cpu, cpu / files * 1e6);
    return 0;
}
