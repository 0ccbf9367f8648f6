#!/usr/bin/env python3
"""Does the database stay bounded under churn? (target: under 50 MB after 100,000 jobs, retention 0)

    python3 Benchmarks/churn.py [--fetchd .build/release/fetchd] [--jobs 100000] [--in-flight 256]

Starts fetchd with FETCHD_RETENTION=0 and a global webhook subscriber (benchlib's receiver), and
pushes `--jobs` jobs of 1 KiB from a local nginx through it: POST → completed → webhook delivered
→ pruned by the housekeeper. At most `--in-flight` jobs are between their POST and their
`download.completed` webhook, so the churn is steady rather than one big queue. Completed files
are deleted as they land. Jobs come in sessions of `--session-size` (fetchd keeps a row per
session name); `--idempotency-keys` sends an Idempotency-Key with every POST (fetchd keeps keys
at least 24 hours, whatever the retention). One more client reads `GET /downloads?limit=100`
every `--poll` seconds throughout, as status pages do (it would hold back WAL checkpoints if
reads kept a snapshot open); its latency is reported too.

Every `--every` seconds it records the size of fetchd.sqlite, its -wal and -shm files, fetchd's
RSS and its webhook backlog (`fetchd_webhook_backlog`: deliveries not yet settled). At the end it
waits a few housekeeping intervals, records the final sizes, stops fetchd and reads what is left
in the database (pages, free pages, rows and bytes per table).
Exits 1 if the database files ever reached `--limit-mb` (10^6 bytes) in total.
"""
import argparse
import json
import os
import re
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from benchlib import procs, sqlite_files  # noqa: E402
from benchlib.fetchd import Fetchd  # noqa: E402
from benchlib.origin import Origin, make_file  # noqa: E402
from benchlib.probe import LatencyProbe  # noqa: E402
from benchlib.standalone import log, scratch  # noqa: E402
from benchlib.table import fmt, markdown  # noqa: E402
from benchlib.webhooks import SIGNING_SECRET, WebhookReceiver  # noqa: E402

# With retention 0 the housekeeper runs every second (a quarter of the retention, at least 1 s).
SETTLE_SECONDS = 5


class Window:
    """Hands out job numbers while fewer than `size` jobs are submitted but not yet finished."""

    def __init__(self, total: int, size: int):
        self.total, self.size = total, size
        self.submitted = self.finished = 0
        self.failed: Exception | None = None
        self.cond = threading.Condition()

    def take(self) -> int | None:
        with self.cond:
            while self.submitted < self.total and self.submitted - self.finished >= self.size and not self.failed:
                self.cond.wait(1)
            if self.submitted >= self.total or self.failed:
                return None
            self.submitted += 1
            return self.submitted - 1

    def update(self, finished: int):
        with self.cond:
            self.finished = finished
            self.cond.notify_all()

    def fail(self, error: Exception):
        with self.cond:
            self.failed = error
            self.cond.notify_all()


def submitter(fetchd: Fetchd, url: str, window: Window, args):
    try:
        while (n := window.take()) is not None:
            fetchd.api.submit({"url": f"{url}?n={n}", "destination": f"churn/{n}", "session": f"churn{n // args.session_size}"},
                              {"Idempotency-Key": f"churn-{uuid.uuid4()}"} if args.idempotency_keys else None)
    except Exception as error:  # surfaced by the main loop
        window.fail(error)


def delete_landed(directory: str):
    """Completed files are not needed: fetchd has placed them and forgotten them."""
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.is_file() and not entry.name.startswith("."):
                os.unlink(entry.path)


class Sampler:
    """Records the database files' sizes and fetchd's RSS every `every` seconds on a thread of its
    own, so a slow turn of the main loop (unlinks wait on fetchd's directory fsyncs) skips none."""

    def __init__(self, fetchd: Fetchd, window: Window, every: float):
        self.fetchd, self.window, self.every = fetchd, window, every
        self.started = time.perf_counter()
        self.samples = [self.take()]
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def take(self) -> dict:
        metrics = self.fetchd.api.request("GET", "/metrics")[1].decode()
        return {"t": time.perf_counter() - self.started, "finished": self.window.finished,
                **sqlite_files.sizes(self.fetchd.data_dir), "rss_mb": procs.rss_mb(self.fetchd.pid),
                "cpu_s": procs.cpu_seconds(self.fetchd.pid),
                "webhook_backlog": int(re.search(r"^fetchd_webhook_backlog (\d+)", metrics, re.M).group(1))}

    def _run(self):
        while not self.stopping.wait(self.every):
            self.samples.append(last := self.take())
            log(f"{last['finished']:,} finished, {last['total'] / 1e6:.1f} MB (WAL {last['-wal'] / 1e6:.1f}), "
                f"RSS {last['rss_mb']:.0f} MB, webhook backlog {last['webhook_backlog']}")

    def stop(self) -> list[dict]:
        self.stopping.set()
        self.thread.join()
        self.samples.append(self.take())
        return self.samples


def churn(args, workdir: str) -> dict:
    files = os.path.join(workdir, "files")
    make_file(os.path.join(files, "churn.bin"), args.size)
    origin = Origin(os.path.join(workdir, "origin"), files)
    receiver = WebhookReceiver()
    fetchd = Fetchd(args.fetchd, os.path.join(workdir, "fetchd"), FETCHD_RETENTION="0",
                    FETCHD_WEBHOOK_URL=receiver.url, FETCHD_WEBHOOK_SECRET=SIGNING_SECRET,
                    FETCHD_MAX_TRANSFERS=args.transfers, FETCHD_MAX_TRANSFERS_PER_HOST=args.transfers)
    landed = os.path.join(fetchd.root, "churn")
    os.makedirs(landed, exist_ok=True)
    window = Window(args.jobs, args.in_flight)
    threads = [threading.Thread(target=submitter, args=(fetchd, origin.url("churn.bin"), window, args), daemon=True)
               for _ in range(args.threads)]
    sampler = Sampler(fetchd, window, args.every)
    reads = LatencyProbe(fetchd.port, "/downloads?limit=100", args.poll)
    for thread in threads:
        thread.start()
    finished, progress_at, deleted_at = 0, time.perf_counter(), 0.0
    while finished < args.jobs:
        time.sleep(0.1)
        if window.failed:
            raise RuntimeError(f"a POST failed: {window.failed}")
        counts = receiver.counts()
        if counts.get("download.failed", 0):
            raise RuntimeError(f"{counts['download.failed']} jobs failed; see {fetchd.log_path}")
        if counts.get("download.completed", 0) > finished:
            finished, progress_at = counts["download.completed"], time.perf_counter()
        elif time.perf_counter() - progress_at > 120:
            raise RuntimeError(f"no job finished for 120 s at {finished}; see {fetchd.log_path}")
        window.update(finished)
        if time.perf_counter() - deleted_at >= 1:
            delete_landed(landed)
            deleted_at = time.perf_counter()
    wall = time.perf_counter() - sampler.started
    samples = sampler.stop()
    list_reads = reads.stop()
    delete_landed(landed)
    time.sleep(SETTLE_SECONDS)
    settled = sampler.take()
    fetchd.stop()
    stopped = sqlite_files.sizes(fetchd.data_dir)
    receiver.stop()
    origin.stop()
    return {"jobs": args.jobs, "wall_s": wall, "list_reads": list_reads, "samples": samples, "settled": settled, "stopped": stopped,
            "anatomy": sqlite_files.anatomy(fetchd.data_dir)}


def report(result: dict, limit_mb: float) -> bool:
    samples = result["samples"]
    shown = samples[:: max(1, len(samples) // 12)]
    shown += [s for s in (samples[-1], result["settled"]) if s is not shown[-1]]
    lines = [["t (s)", "jobs finished", "jobs/s since previous", "db MB", "WAL MB", "shm MB", "total MB", "RSS MB",
              "webhook backlog"]]
    prev = None
    for s in shown:
        rate = (s["finished"] - prev["finished"]) / (s["t"] - prev["t"]) if prev and s["t"] > prev["t"] else None
        lines.append([fmt(s["t"]), f"{s['finished']:,}", fmt(rate), *(fmt(s[k] / 1e6) for k in ("db", "-wal", "-shm", "total")),
                      fmt(s["rss_mb"]), f"{s['webhook_backlog']:,}"])
        prev = s
    lines[-1][0] += f" (+{SETTLE_SECONDS} s idle)"
    peak = max(s["total"] for s in samples + [result["settled"]])
    anatomy = result["anatomy"]
    print(markdown(lines))
    print(f"\n{result['jobs']:,} jobs in {result['wall_s']:.0f} s ({result['jobs'] / result['wall_s']:.0f} jobs/s); "
          f"fetchd CPU {result['settled']['cpu_s']:.0f} s; peak RSS {max(s['rss_mb'] for s in samples):.0f} MB; "
          f"peak WAL {max(s['-wal'] for s in samples) / 1e6:.1f} MB")
    reads = result["list_reads"]
    print(f"GET /downloads?limit=100 meanwhile: p50 {reads['p50_ms']:.1f} ms, p99 {reads['p99_ms']:.1f} ms, "
          f"max {reads['max_ms']:.0f} ms ({reads['samples']} reads, {reads['errors']} errors)")
    print(f"database files: peak {peak / 1e6:.1f} MB, settled {result['settled']['total'] / 1e6:.1f} MB, "
          f"after stop {result['stopped']['total'] / 1e6:.1f} MB; {anatomy['pages']} pages of {anatomy['page_size']} B, "
          f"{anatomy['free_pages']} free")
    print(f"webhook backlog: at most {max(s['webhook_backlog'] for s in samples):,}, "
          f"{result['settled']['webhook_backlog']:,} at rest (unsettled deliveries are kept whatever the retention)")
    print("rows left: " + ", ".join(f"{t} {n}" for t, n in anatomy["rows"].items()))
    print("largest: " + ", ".join(f"{name} {size / 1e3:.0f} kB" for name, size in list(anatomy["bytes"].items())[:6]))
    ok = peak < limit_mb * 1e6
    print(f"target: database files under {limit_mb:g} MB throughout: {'met' if ok else 'MISSED'}")
    return ok


def main() -> int:
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fetchd", default=os.environ.get("FETCHD_BIN", os.path.join(repo, ".build/release/fetchd")))
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--in-flight", type=int, default=256, help="jobs POSTed but not yet finished, at most")
    parser.add_argument("--threads", type=int, default=4, help="client threads, one keep-alive connection each")
    parser.add_argument("--transfers", type=int, default=16, help="FETCHD_MAX_TRANSFERS(_PER_HOST)")
    parser.add_argument("--size", type=int, default=1024, help="bytes per file")
    parser.add_argument("--session-size", type=int, default=500, help="jobs per session")
    parser.add_argument("--idempotency-keys", action="store_true", help="a unique Idempotency-Key on every POST")
    parser.add_argument("--every", type=float, default=5, help="seconds between samples")
    parser.add_argument("--poll", type=float, default=0.05, help="seconds between list reads")
    parser.add_argument("--limit-mb", type=float, default=50)
    parser.add_argument("--json", metavar="FILE", help="also write every sample as JSON")
    args = parser.parse_args()
    args.fetchd = os.path.abspath(args.fetchd)

    with scratch("fetchd-churn-") as workdir:
        result = churn(args, workdir)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0 if report(result, args.limit_mb) else 1


if __name__ == "__main__":
    sys.exit(main())
