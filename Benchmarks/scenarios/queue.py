"""4. queue: fetchd holding a large queue (1,000,000 jobs; 100,000 with --quick).

The queue is built through the API with wrk (64 connections, unique destinations, a far-future
earliestBeginDate), and the time that takes is reported. Then, at that size:
- RSS of the process that took the submissions, and of a restarted one after some list reads;
- `GET /downloads?limit=100` latency (wrk --latency, 8 connections);
- restart to ready: SIGTERM, then exec of a new fetchd until `/readyz` answers 200;
- dispatch rate. Method: PROBE jobs share one earliestBeginDate T a few seconds ahead, point at a
  1 KiB file on nginx, and fetchd runs with FETCHD_MAX_TRANSFERS and ..._PER_HOST = PROBE, so
  neither slots nor the origin limit it. Dispatch rate = PROBE / (last startedAt - T): jobs started
  per second once they are due, wake-up included. It is measured at 10,000 queued and again at
  the full size; the target is that the second is within 20 % of the first.
"""
import time

from benchlib import procs, wrk
from benchlib.origin import make_file
from benchlib.table import Row
from .common import FAR_FUTURE, start_pair
from benchlib.times import parse_rfc3339, rfc3339

SMALL_QUEUE = 10_000


def run(ctx) -> list[Row]:
    full = 100_000 if ctx.quick else 1_000_000
    probe = 1000 if ctx.quick else 2000
    label = f"4 queue {full:,}"
    files = ctx.cache + "/queue"
    make_file(files + "/tiny.bin", 1024)
    origin, fetchd = start_pair(ctx, "queue", files, FETCHD_MAX_TRANSFERS=probe, FETCHD_MAX_TRANSFERS_PER_HOST=probe)
    tiny = origin.url("tiny.bin")

    fill_rate = fill(ctx, fetchd, tiny, "bulk-a", SMALL_QUEUE)
    at_small = [dispatch(ctx, fetchd, tiny, probe, fill_rate, f"small{r}") for r in range(ctx.rounds)]
    with ctx.profiled(fetchd.pid, "queue-fill"):
        start = time.perf_counter()
        fill(ctx, fetchd, tiny, "bulk-b", full - SMALL_QUEUE)
        fill_seconds = time.perf_counter() - start
    rss_filled = procs.rss_mb(fetchd.pid)
    with ctx.profiled(fetchd.pid, "queue-list"):
        newest = latency(ctx, fetchd, "/downloads?limit=100")
    queued = latency(ctx, fetchd, "/downloads?state=queued&limit=100")
    with ctx.profiled(fetchd.pid, "queue-dispatch"):
        at_full = [dispatch(ctx, fetchd, tiny, probe, fill_rate, f"full{r}") for r in range(ctx.rounds)]
    restart = []
    for r in range(ctx.rounds):
        fetchd.stop()
        restart.append(fetchd.start())
        ctx.log(f"queue: restart to ready {restart[-1]:.2f} s")
    latency(ctx, fetchd, "/downloads?limit=100", seconds=2)
    rss_restarted = procs.rss_mb(fetchd.pid)
    fetchd.stop()
    origin.stop()
    return [
        Row(label, f"building the queue: {full - SMALL_QUEUE:,} POSTs", "s", [fill_seconds],
            note=f"{(full - SMALL_QUEUE) / fill_seconds:,.0f}/s, wrk 64 conns"),
        Row(label, "RSS after taking the submissions", "MB", [rss_filled], target="value <= 150"),
        Row(label, "RSS after restart + list reads", "MB", [rss_restarted], target="value <= 150"),
        Row(label, "GET /downloads?limit=100 p99", "ms", [newest["p99_ms"]], target="value <= 20",
            note=f"p50 {newest['p50_ms']:.2f} ms, {newest['rps']:,.0f} req/s"),
        Row(label, "GET /downloads?state=queued&limit=100 p99", "ms", [queued["p99_ms"]],
            note=f"p50 {queued['p50_ms']:.2f} ms"),
        Row(label, "restart to ready", "s", restart, target="value <= 5"),
        Row(label, "dispatch rate", "jobs/s", at_full, f"fetchd at {SMALL_QUEUE:,} queued", at_small,
            "ratio >= 0.8", f"{probe} due at once"),
    ]


def fill(ctx, fetchd, url: str, prefix: str, count: int) -> float:
    """Submits `count` far-future jobs in session `bulk` with wrk; returns submissions per second."""
    threads = 2
    assert count % threads == 0
    before = sum(fetchd.api.session_counts("bulk").values())
    start = time.perf_counter()
    proc = wrk.start(fetchd.base + "/downloads", 64, threads, script=wrk.lua("post_downloads.lua"),
                     script_args=[url, prefix, "bulk", FAR_FUTURE, count // threads])
    interval = 0.05 if count <= SMALL_QUEUE else 0.5
    try:
        procs.wait_until(lambda: sum(fetchd.api.session_counts("bulk").values()) - before >= count,
                         count / 100 + 60, interval, f"{count:,} submissions")
    finally:
        result = wrk.finish(proc)
    seconds = time.perf_counter() - start
    if result["failed"]:
        raise RuntimeError(f"queue: {result['failed']} submissions failed")
    ctx.log(f"queue: {count:,} submitted in {seconds:.1f} s ({count / seconds:,.0f}/s)")
    return count / seconds


def dispatch(ctx, fetchd, url: str, probe: int, fill_rate: float, session: str) -> float:
    """Jobs started per second when `probe` jobs become due at once (see the module doc)."""
    lead = 2 + 3 * probe / fill_rate
    due_ms = int((time.time() + lead) * 1000)
    jobs = [{"url": url, "destination": f"{session}/{i}", "session": session, "earliestBeginDate": rfc3339(due_ms)}
            for i in range(probe)]
    fetchd.api.submit_many(jobs)
    if time.time() * 1000 >= due_ms:
        raise RuntimeError("queue: the probe jobs were not all submitted before they were due; raise the lead")
    procs.wait_until(lambda: _settled(fetchd.api.session_counts(session)), lead + 120, 0.1, "probe jobs")
    started = [parse_rfc3339(job["startedAt"]) for job in fetchd.api.jobs(session)]
    rate = probe / max((max(started) - due_ms) / 1000, 1e-3)
    ctx.log(f"queue: dispatch {session}: {rate:,.0f} jobs/s (first start {min(started) - due_ms} ms after due)")
    return rate


def _settled(counts: dict) -> bool:
    if counts["failed"] or counts["cancelled"]:
        raise RuntimeError(f"queue: probe jobs failed: {counts}")
    return counts["queued"] == 0 and counts["running"] == 0


def latency(ctx, fetchd, path: str, seconds: int | None = None) -> dict:
    result = wrk.run(fetchd.base + path, connections=8, duration=seconds or (5 if ctx.quick else 10), latency=True)
    if result["failed"]:
        raise RuntimeError(f"queue: {result['failed']} failed requests for {path}")
    ctx.log(f"queue: {path}: p50 {result['p50_ms']:.2f} ms, p99 {result['p99_ms']:.2f} ms")
    return result
