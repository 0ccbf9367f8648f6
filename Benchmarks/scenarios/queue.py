"""4. queue: fetchd holding a large queue (1,000,000 jobs; 100,000 with --quick).

Building the queue: one job is POSTed through the API (far-future earliestBeginDate) and the rest
of the queue are copies of that row written straight into the SQLite file while fetchd is stopped
(benchlib/seed.py) — clearly not the API: through the API every POST makes the scheduler scan the
whole queue (see "POST /downloads at N queued"), so building 1M that way takes hours. Snapshots
of the database at 10,000 and at N queued are kept, and each measurement starts a fetchd on a
fresh copy:
- start to ready: exec of fetchd on the existing database until `/readyz` answers 200, then the
  same after SIGTERM and restart (the median of the restarts is the figure);
- how long fetchd stays busy after it is ready (its CPU above 5 % of a core), waited out before
  the list reads: API requests made meanwhile stall behind the scheduler;
- RSS after start and after list reads, each with its private part (RssAnon: what fetchd wrote,
  not the pages of its binary and libraries, which move with how the linker laid the code out);
- `GET /downloads?limit=100` latency (wrk --latency, with 8 connections and with 1), and meanwhile
  how long fetchd's threads ran and how long they waited, runnable, for a CPU (/proc schedstat):
  on a busy machine the wait, not fetchd, makes the p99;
- POST /downloads req/s at N queued (wrk, 64 connections, a short run);
- dispatch rate. PROBE more jobs are written in the same way, all due at one instant T a few
  seconds after fetchd starts, pointing at a 1 KiB file on nginx; fetchd runs with
  FETCHD_MAX_TRANSFERS and ..._PER_HOST = PROBE, so neither slots nor the host limit hold them.
  Dispatch rate = PROBE / (last "transfer started" log line - T): jobs started per second once
  due, wake-up included (the log's millisecond timestamps, because `startedAt` is the time the
  scheduler's pass began, the same for every job one pass claims). Measured at 10,000 and at N
  queued, in alternating rounds; the target is that the second is within 20 % of the first. The
  fetchd is then killed (SIGKILL, which fetchd must survive anyway), because settling thousands of
  completions at N queued can take very long.
"""
import glob
import os
import shutil
import time

from benchlib import procs, seed, wrk
from benchlib.fetchd import Fetchd
from benchlib.origin import Origin, make_file
from benchlib.table import Row
from benchlib.times import parse_rfc3339
from .common import FAR_FUTURE

SMALL = 10_000


def run(ctx) -> list[Row]:
    full = 100_000 if ctx.quick else 1_000_000
    probe = 1000 if ctx.quick else 2000
    label = f"4 queue {full // 1000:,}k"
    make_file(os.path.join(ctx.cache, "queue", "tiny.bin"), 1024)
    origin = Origin(ctx.fresh("queue-origin"), os.path.join(ctx.cache, "queue"))
    tiny = origin.url("tiny.bin")
    settings = {"FETCHD_MAX_TRANSFERS": probe, "FETCHD_MAX_TRANSFERS_PER_HOST": probe}

    # The template job, through the API; then the snapshots.
    workdir = ctx.fresh("queue-build")
    fetchd = Fetchd(ctx.fetchd_bin, workdir, **settings)
    template = fetchd.api.submit({"url": tiny, "destination": "bulk/template", "session": "bulk",
                                  "earliestBeginDate": FAR_FUTURE})
    created = parse_rfc3339(template["createdAt"])
    fetchd.stop()
    seed.clone(fetchd.data_dir, template["id"], SMALL - 1, "bulk", "bulk-a", created_at=created - 2)
    snapshots = {SMALL: _snapshot(ctx, fetchd.data_dir, SMALL)}
    seconds = seed.clone(fetchd.data_dir, template["id"], full - SMALL, "bulk", "bulk-b", created_at=created - 3)
    snapshots[full] = _snapshot(ctx, fetchd.data_dir, full)
    ctx.log(f"queue: {full:,} jobs in the database ({seconds:.1f} s to write {full - SMALL:,} rows)")

    def instance(size: int) -> tuple[Fetchd, float]:
        work = ctx.fresh(f"queue-{size}")
        os.makedirs(os.path.join(work, "data"))
        shutil.copy(snapshots[size], seed.database(os.path.join(work, "data")))
        fetchd = Fetchd(ctx.fetchd_bin, work, start=False, **settings)
        return fetchd, fetchd.start()

    def dispatch(size: int, r: int) -> float:
        fetchd, ready = instance(size)          # started once to learn how long a start takes here
        fetchd.stop()
        due = int(time.time() * 1000) + int(max(2.0, 3 * ready) * 1000)
        seed.clone(fetchd.data_dir, template["id"], probe, "probe", "probe", run_at=due,
                   created_at=int(time.time() * 1000))
        fetchd.start()
        with ctx.profiled(fetchd.pid, f"queue-dispatch-{size}-r{r}"):
            started = procs.wait_until(lambda: _all_started(fetchd, probe), 600, 0.05, "probe jobs to start")
        fetchd.kill()
        rate = probe / max((max(started) - due) / 1000, 1e-3)
        ctx.log(f"queue: dispatch at {size:,} queued: {rate:,.0f} jobs/s "
                f"(first start {min(started) - due} ms after due)")
        return rate

    # Alternating, like every other scenario's rounds: run back to back, a slow spell of the host
    # fell on one size only (2026-12-01: 10k 33,898, 25,974, 27,397 then 1M 23,529, 17,241, 21,505 jobs/s).
    at_small, at_full = [], []
    for r in range(ctx.rounds):
        at_small.append(dispatch(SMALL, r))
        at_full.append(dispatch(full, r))

    fetchd, first_start = instance(full)
    busy = procs.wait_idle(fetchd.pid)
    ctx.log(f"queue: busy for {busy:.1f} s after ready")
    rss_started, private_started = procs.rss_mb(fetchd.pid), procs.rss_mb(fetchd.pid, "RssAnon")
    with ctx.profiled(fetchd.pid, "queue-list"):
        newest = latency(ctx, fetchd, "/downloads?limit=100")
    alone = latency(ctx, fetchd, "/downloads?limit=100", connections=1)
    queued = latency(ctx, fetchd, "/downloads?state=queued&limit=100")
    rss_listed, private_listed = procs.rss_mb(fetchd.pid), procs.rss_mb(fetchd.pid, "RssAnon")
    restarts = []
    for _ in range(ctx.rounds):
        fetchd.stop()
        restarts.append(fetchd.start())
        ctx.log(f"queue: restart to ready {restarts[-1]:.2f} s")
    with ctx.profiled(fetchd.pid, "queue-intake"):
        intake = wrk.run(fetchd.base + "/downloads", 64, duration=3 if ctx.quick else 5,
                         script=wrk.lua("post_downloads.lua"),
                         script_args=[tiny, "late", "bulk", FAR_FUTURE])
    ctx.log(f"queue: POST /downloads at {full:,} queued: {intake['rps']:.1f} req/s")
    fetchd.kill()
    origin.stop()
    return [
        Row(label, f"building the queue: {full - SMALL:,} rows written to SQLite", "s", [seconds],
            note="NOT through the API"),
        Row(label, "busy after ready (CPU > 5 %)", "s", [busy], note="API calls stall meanwhile"),
        Row(label, "RSS after start", "MB", [rss_started], target="value <= 150",
            note=f"private (RssAnon) {private_started:.2f} MB"),
        Row(label, "RSS after list reads", "MB", [rss_listed], target="value <= 150",
            note=f"private (RssAnon) {private_listed:.2f} MB"),
        Row(label, "GET /downloads?limit=100 p99", "ms", [newest["p99_ms"]], target="value <= 20",
            note=f"8 conns; p50 {newest['p50_ms']:.2f} ms, {newest['rps']:,.0f} req/s; {newest['cpu']}"),
        Row(label, "GET /downloads?limit=100 p99", "ms", [alone["p99_ms"]],
            note=f"1 conn; p50 {alone['p50_ms']:.2f} ms, {alone['rps']:,.0f} req/s; {alone['cpu']}"),
        Row(label, "GET /downloads?state=queued&limit=100 p99", "ms", [queued["p99_ms"]],
            note=f"8 conns; p50 {queued['p50_ms']:.2f} ms; {queued['cpu']}"),
        Row(label, "restart to ready", "s", restarts, target="value <= 5",
            note=f"first start {first_start:.2f} s"),
        Row(label, "dispatch rate", "jobs/s", at_full, f"fetchd at {SMALL // 1000}k queued", at_small,
            "ratio >= 0.8", f"{probe} due at once"),
        Row(label, "POST /downloads at full queue", "req/s", [intake["rps"]],
            note=f"64 conns; {intake['failed']} failed"),
    ]


def _all_started(fetchd, count: int) -> list[int] | None:
    started = fetchd.logged_times("transfer started")
    return started if len(started) >= count else None


def _snapshot(ctx, data_dir: str, size: int) -> str:
    path = os.path.join(ctx.workdir, f"queue-{size}.sqlite")
    shutil.copy(seed.database(data_dir), path)
    return path


def latency(ctx, fetchd, path: str, connections: int = 8) -> dict:
    ran, waited = _scheduled(fetchd.pid)
    result = wrk.run(fetchd.base + path, connections=connections, threads=min(2, connections),
                     duration=3 if ctx.quick else 10, latency=True)
    if result["failed"]:
        raise RuntimeError(f"queue: {result['failed']} failed requests for {path}")
    ran_after, waited_after = _scheduled(fetchd.pid)
    result["cpu"] = f"fetchd ran {ran_after - ran:.1f} s, waited for a CPU {waited_after - waited:.1f} s"
    ctx.log(f"queue: {path} ({connections} conns): p50 {result['p50_ms']:.2f} ms, p99 {result['p99_ms']:.2f} ms; {result['cpu']}")
    return result


def _scheduled(pid: int) -> tuple[float, float]:
    """Seconds the process's threads have run, and have waited runnable for a CPU, so far."""
    ran = waited = 0
    for path in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(path) as f:
                run_ns, wait_ns, _ = map(int, f.read().split())
        except OSError:  # the thread ended meanwhile
            continue
        ran += run_ns
        waited += wait_ns
    return ran / 1e9, waited / 1e9
