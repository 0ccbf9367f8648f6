#!/usr/bin/env python3
"""One fetchd node against three on one PostgreSQL, in one run.

    python3 Benchmarks/cluster.py [--fetchd .build/release/fetchd] [--quick] [--only PARTS]
    python3 Benchmarks/cluster.py --soak MINUTES

(`swift build -c release --product fetchd --product fetchd-store-bench` builds both binaries.)

Starts a PostgreSQL server of its own (scripts/postgres/test-server.sh in a scratch directory),
nginx listening on 30 loopback ports (30 host:ports for the per-host rules), and for each
measurement a fresh database schema with 1 and then 3 fetchd nodes sharing one download root and
staging directory. Prints, for 1 and 3 nodes:

- slot-bound: jobs throttled by nginx (`limit_rate`) over the 30 ports, each node with
  FETCHD_MAX_TRANSFERS=10: wall time from the first start to the last completion, and the speed-up;
- store claim + settle (`store`): the queue alone, as `fetchd-store-bench` drives the real
  PostgresStore: each node (a store with its own connections and node name) claims up to 32 jobs
  a pass and settles them as completed in one `apply`, no transfers: jobs per second, and the
  claim pass's p99;
- tiny files end to end (`tiny`): 512-byte files over the 30 ports, submitted in batches with a
  near `earliestBeginDate` so intake is not timed: completed jobs per second, transfers, files,
  fsync and placement included;
- due latency (`due`): jobs with `earliestBeginDate` spread over 3 s, free slots on every node;
  a Python origin records when each request arrives: p50/p99 of arrival − earliestBeginDate;
- intake (`intake`): `POST /downloads` per second and p99 with wrk (64 connections in all,
  split over the nodes; `--intake-connections`), far-future jobs, all nodes at once.

`--soak MINUTES`: three store-bench nodes drain jobs submitted at 1,000 a second for MINUTES;
each minute the claim pass's p50/p99 and `n_dead_tup / n_live_tup` of `downloads` and
`event_log` (pg_stat_user_tables); prints every minute and the first against the last.

Numbers are printed, not judged: the machine is shared and the figures are noisy.
"""
import argparse
import json
import os
import threading
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from http.server import ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from benchlib import procs, wrk  # noqa: E402
from benchlib.fetchd import Fetchd  # noqa: E402
from benchlib.origin import Origin, make_small_files  # noqa: E402
from benchlib.standalone import log, scratch  # noqa: E402
from benchlib.times import rfc3339  # noqa: E402
from start_latency import TinyOrigin  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PORTS = 30
# Time to submit a workload before it becomes due, so intake is not timed with it.
LEAD = 6
class Postgres:
    """A PostgreSQL server of the benchmark's own; a fresh schema per measurement."""

    def __init__(self, workdir: str):
        self.env = dict(os.environ, FETCHD_TEST_PG_DIR=f"/tmp/fetchd-bench-pg-{uuid.uuid4().hex}")
        self.schemas: list[str] = []
        self.url = self._script("start")

    def _script(self, command: str) -> str:
        return subprocess.run([os.path.join(REPO, "scripts", "postgres", "test-server.sh"), command], env=self.env,
                              capture_output=True, text=True, check=True).stdout.strip()

    def schema(self) -> str:
        return self.schema_named()[1]

    def schema_named(self) -> tuple[str, str]:
        """A fresh schema: its name, and the URL whose connections use it. The measurements before
        are dropped and their writes checkpointed first, so that no measurement pays for the
        autovacuum and checkpoint work of the one before it (each starts from the same server)."""
        for old in self.schemas:
            subprocess.run(["psql", "-X", "-q", self.url, "-c", f"DROP SCHEMA {old} CASCADE"], check=True)
        self.schemas = []
        subprocess.run(["psql", "-X", "-q", self.url, "-c", "CHECKPOINT"], check=True)
        name = "bench_" + uuid.uuid4().hex[:12]
        self.schemas.append(name)
        subprocess.run(["psql", "-X", "-q", self.url, "-c", f"CREATE SCHEMA {name}"], check=True)
        return name, f"{self.url}&options=-csearch_path%3D{name}"

    def query(self, sql: str) -> list[list[str]]:
        out = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-F", "\t", self.url, "-c", sql], check=True,
                             capture_output=True, text=True).stdout
        return [line.split("\t") for line in out.splitlines() if line]

    def cpu_seconds(self) -> float:
        """User + system CPU of the whole server so far: the postmaster, its live processes
        (backends, autovacuum, WAL writer) and the ones that have exited (their time is the
        postmaster's children's)."""
        with open(os.path.join(self.env["FETCHD_TEST_PG_DIR"], "data", "postmaster.pid")) as f:
            postmaster = int(f.readline())
        while True:
            own = sum(_stat(postmaster)[11:15])
            total = own
            for entry in os.listdir("/proc"):
                if entry.isdigit():
                    try:
                        fields = _stat(int(entry))
                    except (OSError, ValueError):
                        continue
                    if fields[1] == postmaster:
                        total += fields[11] + fields[12]
            # A process reaped meanwhile moved its time into the postmaster's children's: again.
            if sum(_stat(postmaster)[11:15]) == own:
                return total / os.sysconf("SC_CLK_TCK")

    def stop(self):
        self._script("stop")


def _stat(pid: int) -> list[int]:
    """/proc/PID/stat after the command name, as numbers where they are (ppid at 1, times at 11–14)."""
    with open(f"/proc/{pid}/stat") as f:
        return [int(field) if field.lstrip("-").isdigit() else 0 for field in f.read().rsplit(")", 1)[1].split()]


def origin(workdir: str, root: str) -> list[int]:
    """nginx on PORTS loopback ports, `/slow/` at 128 KiB/s per connection; returns the ports."""
    return Origin(workdir, root, limit_rate="128k", ports=PORTS).ports


def cluster(binary: str, workdir: str, database: str, count: int, **settings) -> list[Fetchd]:
    shared = os.path.join(workdir, f"shared-{uuid.uuid4().hex[:8]}")
    nodes = [Fetchd(binary, os.path.join(shared, f"node{n}"), start=False, FETCHD_DATABASE_URL=database,
                    FETCHD_NODE_NAME=f"node-{n}", FETCHD_DOWNLOAD_ROOT=os.path.join(shared, "downloads"),
                    FETCHD_STAGING_DIR=os.path.join(shared, "downloads", ".fetchd-partial"),
                    **settings) for n in range(count)]
    for node in nodes:
        node.start()
    return nodes


def drain(nodes: list[Fetchd], jobs: list[dict]) -> float:
    """Submits `jobs` in batches spread over the nodes, due `LEAD` seconds from now; returns the
    seconds from their due time to the last completion."""
    due = time.time() + LEAD
    for job in jobs:
        job["earliestBeginDate"] = rfc3339(int(due * 1000))
    batches = [jobs[i:i + 500] for i in range(0, len(jobs), 500)]

    def post(i):
        status, body = nodes[i % len(nodes)].api.request("POST", "/downloads/batch", {"items": batches[i]})
        assert status == 200 and all(item["status"] == 201 for item in body["items"]), (status, str(body)[:300])

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(post, range(len(batches))))
    assert time.time() < due, "intake took longer than the lead time"
    while nodes[0].api.session_counts("bench").get("completed", 0) < len(jobs):
        counts = nodes[0].api.session_counts("bench")
        if counts.get("failed"):
            raise RuntimeError(f"jobs failed: {counts}")
        time.sleep(0.05)
    return time.time() - due


def workload(binary, workdir, pg, ports, count, jobs, path, slots, per_host) -> float:
    """`jobs` files `<path><0..29>.bin` over `ports`, drained by `count` nodes with `slots`
    transfers each; the seconds it took."""
    nodes = cluster(binary, workdir, pg.schema(), count, FETCHD_MAX_TRANSFERS=slots, FETCHD_MAX_TRANSFERS_PER_HOST=per_host)
    work = [{"url": f"http://127.0.0.1:{ports[i % PORTS]}/{path}{i % 30}.bin", "destination": f"w/{i}.bin",
             "session": "bench"} for i in range(jobs)]
    seconds = drain(nodes, work)
    for node in nodes:
        node.stop()
    return seconds


def intake(binary, workdir, pg, count, seconds, connections):
    """wrk on every node at once, `connections` in all split over the nodes (wrk keeps each busy,
    so its latency is about connections ÷ throughput: the same clients, spread, compare fairly)."""
    nodes = cluster(binary, workdir, pg.schema(), count)
    origin_url = "http://127.0.0.1:9/x"
    def post(n):
        return wrk.run(nodes[n].base + "/downloads", max(1, connections // count), duration=seconds, script=wrk.lua("post_downloads.lua"),
                       script_args=[origin_url, f"n{n}", "intake", "2999-01-01T00:00:00Z"], latency=True)

    pg_cpu, nodes_cpu = pg.cpu_seconds(), sum(procs.cpu_seconds(node.pid) for node in nodes)
    with ThreadPoolExecutor(count) as pool:
        results = list(pool.map(post, range(count)))
    pg_cpu, nodes_cpu = pg.cpu_seconds() - pg_cpu, sum(procs.cpu_seconds(node.pid) for node in nodes) - nodes_cpu
    for node in nodes:
        node.kill()
    posts = max(1, sum(r["requests"] for r in results))
    return (sum(r["rps"] for r in results), max(r.get("p99_ms", 0) for r in results), sum(r["failed"] for r in results),
            pg_cpu / posts * 1e6, nodes_cpu / posts * 1e6)


def store_bench(binary: str, pg: Postgres, count: int, jobs: int) -> dict:
    """Claim + settle of `jobs` queued jobs by `count` store-level nodes; the bench's JSON line, with
    the server's CPU over the same time (`pg_cpu_s`: from the bench's "queued" line to its result)."""
    proc = subprocess.Popen([binary, pg.schema(), "--nodes", str(count), "--jobs", str(jobs), "--slots", "32"],
                            stdout=subprocess.PIPE, text=True)
    result, started = None, None
    for line in proc.stdout:
        stats = json.loads(line)
        if "queued" in stats:
            started = pg.cpu_seconds()
        elif "jobs_per_s" in stats:
            result = dict(stats, pg_cpu_s=pg.cpu_seconds() - started if started is not None else 0.0)
    if proc.wait() != 0 or result is None:
        raise RuntimeError("the store bench failed")
    return result


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


class ArrivalOrigin(TinyOrigin):
    """Records when each request arrives (path → seconds since the epoch) and answers 2 bytes."""
    arrivals: dict[str, float] = {}

    def do_GET(self):
        self.arrivals.setdefault(self.path, time.time())
        super().do_GET()


def due_latency(binary, workdir, pg, count, jobs=300, spread=3.0) -> tuple[float, float, int]:
    """Jobs due over `spread` seconds from 2 s on, on `count` nodes with free slots: p50 and p99
    (ms) of the origin's arrival time − earliestBeginDate, and how many arrived early."""
    ArrivalOrigin.arrivals = {}
    server = ThreadingHTTPServer(("127.0.0.1", 0), ArrivalOrigin)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    nodes = cluster(binary, workdir, pg.schema(), count, FETCHD_MAX_TRANSFERS=64, FETCHD_MAX_TRANSFERS_PER_HOST=64)
    try:
        first = int(time.time() * 1000) + 2000
        dates = {f"/due/{i}": first + int(i * spread * 1000 / jobs) for i in range(jobs)}
        work = [{"url": f"http://127.0.0.1:{server.server_address[1]}{path}", "destination": f"due/{i}",
                 "session": "bench", "earliestBeginDate": rfc3339(date)} for i, (path, date) in enumerate(dates.items())]
        for i in range(0, jobs, 100):
            status, body = nodes[(i // 100) % count].api.request("POST", "/downloads/batch", {"items": work[i:i + 100]})
            assert status == 200, (status, str(body)[:300])
        assert time.time() * 1000 < first, "submitting took longer than the lead time"
        deadline = time.time() + spread + 30
        while nodes[0].api.session_counts("bench").get("completed", 0) < jobs and time.time() < deadline:
            time.sleep(0.05)
    finally:
        for node in nodes:
            node.stop()
        server.shutdown()
    delays = [(ArrivalOrigin.arrivals[path] * 1000 - date) for path, date in dates.items() if path in ArrivalOrigin.arrivals]
    assert len(delays) == jobs, f"{jobs - len(delays)} due jobs never reached the origin"
    return percentile(delays, 50), percentile(delays, 99), sum(d < 0 for d in delays)


def soak(store_binary: str, pg: Postgres, minutes: int, rate: int, naptime: str) -> int:
    """Three store-level nodes drain `rate` jobs a second for `minutes`; a row a minute."""
    # Each job leaves two dead row versions (claim, settlement) that no page pruning can take
    # (both change indexed columns), 2,000 a second here; autovacuum looks once per naptime
    # (default 1 min), so the server is run as docs/operations.md ("Many nodes") advises for such churn.
    pg.query(f"ALTER SYSTEM SET autovacuum_naptime = '{naptime}'")
    pg.query("SELECT pg_reload_conf()")
    print(f"autovacuum_naptime = {naptime}")
    schema, url = pg.schema_named()
    proc = subprocess.Popen([store_binary, url, "--nodes", "3", "--soak", str(minutes * 60), "--rate", str(rate)],
                            stdout=subprocess.PIPE, text=True)
    rows = []
    print("| minute | submitted | settled | claim passes | claim p50 (ms) | claim p99 (ms) | settle p99 (ms) "
          "| downloads dead/live | event_log dead/live |")
    print("|---|---|---|---|---|---|---|---|---|")
    for line in proc.stdout:
        stats = json.loads(line)
        if "minute" not in stats:
            continue
        tuples = {name: (int(live), int(dead)) for name, live, dead in pg.query(
            f"SELECT relname, n_live_tup, n_dead_tup FROM pg_stat_user_tables WHERE schemaname = '{schema}' "
            "AND relname IN ('downloads', 'event_log')")}
        ratios = {name: dead / max(1, live) for name, (live, dead) in tuples.items()}
        stats.update(downloads=ratios.get("downloads", 0.0), event_log=ratios.get("event_log", 0.0))
        rows.append(stats)
        print(f"| {stats['minute']} | {stats['submitted']} | {stats['settled']} | {stats['claims']} | {stats['claim_p50_ms']:.2f} | "
              f"{stats['claim_p99_ms']:.2f} | {stats['settle_p99_ms']:.2f} | {stats['downloads']:.3f} | {stats['event_log']:.3f} |",
              flush=True)
    if proc.wait() != 0 or not rows:
        raise RuntimeError("the store bench failed")
    first, last = rows[0], rows[-1]
    print(f"\nsoak at {rate} jobs/s over {minutes} min (store-level driver, 3 nodes): claim p99 first minute "
          f"{first['claim_p99_ms']:.2f} ms, last {last['claim_p99_ms']:.2f} ms "
          f"({last['claim_p99_ms'] / max(first['claim_p99_ms'], 0.001):.2f} x; target <= 2 x); "
          f"dead/live last minute: downloads {last['downloads']:.3f}, event_log {last['event_log']:.3f} (target <= 0.2)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fetchd", default=".build/release/fetchd")
    parser.add_argument("--store-bench", help="fetchd-store-bench (default: beside --fetchd)")
    parser.add_argument("--quick", action="store_true", help="fewer jobs, shorter intake")
    parser.add_argument("--only", default="slot,store,tiny,due,intake", help="comma-separated parts to run")
    parser.add_argument("--intake-connections", type=int, default=64,
                        help="wrk connections in all for intake, split over the nodes (64: 64 per node before)")
    parser.add_argument("--soak", type=int, metavar="MINUTES", help="run only the soak, for MINUTES")
    parser.add_argument("--rate", type=int, default=1000, help="jobs a second submitted in the soak")
    parser.add_argument("--autovacuum-naptime", default="10s", help="the soak's PostgreSQL autovacuum_naptime (its default: 1min)")
    args = parser.parse_args()
    binary = os.path.abspath(args.fetchd)
    store_binary = os.path.abspath(args.store_bench or os.path.join(os.path.dirname(binary), "fetchd-store-bench"))
    parts = set(args.only.split(","))
    if ("store" in parts or args.soak) and not os.access(store_binary, os.X_OK):
        sys.exit(f"cluster.py: no {store_binary}: swift build -c release --product fetchd-store-bench (or --store-bench PATH)")
    if args.soak:
        pg = Postgres("")
        try:
            return soak(store_binary, pg, args.soak, args.rate, args.autovacuum_naptime)
        finally:
            pg.stop()
    with scratch("fetchd-cluster-bench-") as workdir:
        files = os.path.join(os.environ.get("TMPDIR", "/tmp"), "fetchd-bench-files", "cluster")
        make_small_files(files, 30, 256 * 1024)
        for i in range(30):
            with open(os.path.join(files, f"t{i}.bin"), "wb") as f:
                f.write(os.urandom(512))
        ports = origin(workdir, files)
        pg = Postgres(workdir)
        try:
            slow_jobs, tiny_jobs, store_jobs, seconds = (60, 1000, 10000, 3) if args.quick else (120, 3000, 30000, 5)
            rows = []
            for count in (1, 3):
                row = {"nodes": count}
                if "slot" in parts:
                    log(f"{count} node(s): slot-bound, {slow_jobs} jobs of 256 KiB at 128 KiB/s")
                    row["slow"] = workload(binary, workdir, pg, ports, count, slow_jobs, "slow/f", slots=10, per_host=4)
                if "store" in parts:
                    log(f"{count} node(s): store claim + settle, {store_jobs} jobs")
                    row["store"] = store_bench(store_binary, pg, count, store_jobs)
                if "tiny" in parts:
                    log(f"{count} node(s): tiny files end to end, {tiny_jobs} jobs of 512 B")
                    row["tiny"] = tiny_jobs / workload(binary, workdir, pg, ports, count, tiny_jobs, "files/t", slots=32, per_host=32)
                if "due" in parts:
                    log(f"{count} node(s): due latency, 300 jobs due over 3 s")
                    row["due"] = due_latency(binary, workdir, pg, count)
                if "intake" in parts:
                    log(f"{count} node(s): intake, wrk for {seconds} s per node")
                    row["intake"] = intake(binary, workdir, pg, count, seconds, args.intake_connections)
                rows.append(row)
        finally:
            pg.stop()
    def cell(row, key, show):
        return show(row[key]) if key in row else "-"
    print("| nodes | slot-bound wall (s) | store claim + settle (jobs/s) | store claim p99 (ms) | store CPU per job, bench / PostgreSQL (µs) "
          "| tiny files end to end (jobs/s) | due p50 / p99 (ms) | intake (POST/s) | intake p99 (ms) | intake failed "
          "| intake CPU per POST, fetchd / PostgreSQL (µs) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['nodes']} | {cell(row, 'slow', lambda v: f'{v:.1f}')} | {cell(row, 'store', lambda v: '%.0f' % v['jobs_per_s'])} "
              f"| {cell(row, 'store', lambda v: '%.1f' % v['claim_p99_ms'])} "
              f"| {cell(row, 'store', lambda v: '%.0f / %.0f' % (v['cpu_s'] / v['jobs'] * 1e6, v['pg_cpu_s'] / v['jobs'] * 1e6))} "
              f"| {cell(row, 'tiny', lambda v: f'{v:.0f}')} "
              f"| {cell(row, 'due', lambda v: f'{v[0]:.0f} / {v[1]:.0f}' + (f' ({v[2]} early)' if v[2] else ''))} "
              f"| {cell(row, 'intake', lambda v: f'{v[0]:.0f}')} | {cell(row, 'intake', lambda v: f'{v[1]:.1f}')} "
              f"| {cell(row, 'intake', lambda v: str(v[2]))} | {cell(row, 'intake', lambda v: f'{v[4]:.0f} / {v[3]:.0f}')} |")
    if "slot" in parts:
        print(f"\nslot-bound speed-up with 3 nodes: {rows[0]['slow'] / rows[1]['slow']:.2f} x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
