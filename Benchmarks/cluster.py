#!/usr/bin/env python3
"""One fetchd node against three on one PostgreSQL (issue 18), in one run.

    python3 Benchmarks/cluster.py [--fetchd .build/release/fetchd] [--quick]

Starts a PostgreSQL server of its own (scripts/postgres/test-server.sh in a scratch directory),
nginx listening on 30 loopback ports (30 host:ports for the per-host rules), and for each
measurement a fresh database schema with 1 and then 3 fetchd nodes sharing one download root and
staging directory. Prints, for 1 and 3 nodes:

- slot-bound: jobs throttled by nginx (`limit_rate`) over the 30 ports, each node with
  FETCHD_MAX_TRANSFERS=10: wall time from the first start to the last completion, and the speed-up;
- claim + settle: tiny files over the 30 ports, submitted in batches with a near
  `earliestBeginDate` so intake is not timed: completed jobs per second;
- intake: `POST /downloads` per second and p99 with wrk (64 connections per node, far-future
  jobs), all nodes at once.

Numbers are printed, not judged: the machine is shared and the figures are noisy.
"""
import argparse
import os
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from benchlib import procs, wrk  # noqa: E402
from benchlib.fetchd import Fetchd  # noqa: E402
from benchlib.origin import Origin, make_small_files  # noqa: E402
from benchlib.standalone import log, scratch  # noqa: E402
from benchlib.times import rfc3339  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PORTS = 30
# Time to submit a workload before it becomes due, so intake is not timed with it.
LEAD = 6
class Postgres:
    """A PostgreSQL server of the benchmark's own; a fresh schema per measurement."""

    def __init__(self, workdir: str):
        self.env = dict(os.environ, FETCHD_TEST_PG_DIR=f"/tmp/fetchd-bench-pg-{uuid.uuid4().hex}")
        self.url = self._script("start")

    def _script(self, command: str) -> str:
        return subprocess.run([os.path.join(REPO, "scripts", "postgres", "test-server.sh"), command], env=self.env,
                              capture_output=True, text=True, check=True).stdout.strip()

    def schema(self) -> str:
        name = "bench_" + uuid.uuid4().hex[:12]
        subprocess.run(["psql", "-X", "-q", self.url, "-c", f"CREATE SCHEMA {name}"], check=True)
        return f"{self.url}&options=-csearch_path%3D{name}"

    def stop(self):
        self._script("stop")


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


def intake(binary, workdir, pg, count, seconds):
    nodes = cluster(binary, workdir, pg.schema(), count)
    origin_url = "http://127.0.0.1:9/x"
    def post(n):
        return wrk.run(nodes[n].base + "/downloads", 64, duration=seconds, script=wrk.lua("post_downloads.lua"),
                       script_args=[origin_url, f"n{n}", "intake", "2999-01-01T00:00:00Z"], latency=True)

    with ThreadPoolExecutor(count) as pool:
        results = list(pool.map(post, range(count)))
    for node in nodes:
        node.kill()
    return sum(r["rps"] for r in results), max(r.get("p99_ms", 0) for r in results), sum(r["failed"] for r in results)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fetchd", default=".build/release/fetchd")
    parser.add_argument("--quick", action="store_true", help="fewer jobs, shorter intake")
    args = parser.parse_args()
    binary = os.path.abspath(args.fetchd)
    with scratch("fetchd-cluster-bench-") as workdir:
        files = os.path.join(os.environ.get("TMPDIR", "/tmp"), "fetchd-bench-files", "cluster")
        make_small_files(files, 30, 256 * 1024)
        for i in range(30):
            with open(os.path.join(files, f"t{i}.bin"), "wb") as f:
                f.write(os.urandom(512))
        ports = origin(workdir, files)
        pg = Postgres(workdir)
        try:
            slow_jobs, tiny_jobs, seconds = (60, 1000, 3) if args.quick else (120, 3000, 5)
            rows = []
            for count in (1, 3):
                log(f"{count} node(s): slot-bound, {slow_jobs} jobs of 256 KiB at 128 KiB/s")
                slow = workload(binary, workdir, pg, ports, count, slow_jobs, "slow/f", slots=10, per_host=4)
                log(f"{count} node(s): claim + settle, {tiny_jobs} jobs of 512 B")
                rate = tiny_jobs / workload(binary, workdir, pg, ports, count, tiny_jobs, "files/t", slots=32, per_host=32)
                log(f"{count} node(s): intake, wrk for {seconds} s per node")
                rps, p99, failed = intake(binary, workdir, pg, count, seconds)
                rows.append((count, slow, rate, rps, p99, failed))
        finally:
            pg.stop()
    print("| nodes | slot-bound wall (s) | claim + settle (jobs/s) | intake (POST/s) | intake p99 (ms) | failed |")
    print("|---|---|---|---|---|---|")
    for count, slow, rate, rps, p99, failed in rows:
        print(f"| {count} | {slow:.1f} | {rate:.0f} | {rps:.0f} | {p99:.1f} | {failed} |")
    print(f"\nslot-bound speed-up with 3 nodes: {rows[0][1] / rows[1][1]:.2f} x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
