"""13. watches: 10,000 watches (1,000 quick) of one file on one nginx, each checked every minute
(FETCHD_WATCH_MIN_INTERVAL=1m lets the interval be 1m), which nginx answers 304 itself (it
compares If-None-Match and If-Modified-Since with the file); vs the cron way: once a minute, `xargs
-P 6` runs `curl --etag-compare F --etag-save F` over the same URLs (6 at once, fetchd's default
transfers per host). The URLs differ only in their query (`?w=<n>`), which nginx ignores.

fetchd is measured once every watch has had its first check (the 200 that placed the file),
over whole minutes of due times (2; 1 quick) from a second before the first: the watches' times
are spread over 6 s of each minute, so every watch is checked once a minute in the window. The
loop is measured after one untimed pass that placed the files and saved their ETags, over as many
passes. From nginx's access log, which stamps each request with `$msec`:

- CPU per check: fetchd's CPU time (its /healthz probe included) or the loop's (xargs and every
  curl, as children waited for), over the requests nginx logged in the window (all 304).
- lateness: when each check reached nginx after its due time. A watch's due times are its next
  check time read before the window plus whole minutes (a watch's time keeps its phase), read in
  milliseconds from fetchd's database (the API shows whole seconds); the loop's due time is the
  start of its pass, so its lateness is how long a pass takes to get there.
- /healthz p99, probed every 100 ms on one connection through fetchd's window.
"""
import math
import os
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor

from benchlib import procs, sqlite_files
from benchlib.fetchd import Fetchd
from benchlib.origin import Origin, make_file
from benchlib.probe import LatencyProbe
from benchlib.table import Row

INTERVAL_MS = 60_000
PARALLEL = 6
FILE_SIZE = 4096


def run(ctx) -> list[Row]:
    count = 1000 if ctx.quick else 10_000
    window = 60 if ctx.quick else 120
    files = os.path.join(ctx.cache, "watches")
    make_file(os.path.join(files, "feed.bin"), FILE_SIZE)
    origin = Origin(ctx.fresh("watches-origin"), files, access_log=True)
    urls = [f"{origin.url('feed.bin')}?w={i}" for i in range(count)]

    fetchd, healthz = watch_with_fetchd(ctx, origin, urls, window)
    curl = watch_with_curl(ctx, origin, urls, window)
    origin.stop()
    for name, figures in (("fetchd", fetchd), ("curl loop", curl)):
        ctx.log(f"watches {name}: {figures['checks']} checks ({figures['not_304']} not 304), "
                f"{figures['cpu_us']:.0f} µs CPU a check, lateness p50 {figures['p50_ms']:.0f} ms, "
                f"p99 {figures['p99_ms']:.0f} ms, max {figures['max_ms']:.0f} ms")
    for name, figures in (("fetchd", fetchd), ("curl loop", curl)):
        expected = count * window * 1000 // INTERVAL_MS
        if not expected * 0.95 <= figures["checks"] <= expected * 1.05 or figures["not_304"]:
            raise RuntimeError(f"watches: {name} made {figures['checks']} checks in the window, {figures['not_304']} "
                               f"of them not 304 (expected about {expected}, all 304)")
    label = f"13 watches {count:,} × 1 min"
    peer = f"xargs -P {PARALLEL} curl --etag-compare"
    return [
        Row(label, "CPU per 304 check", "µs", [fetchd["cpu_us"]], peer, [curl["cpu_us"]],
            note=f"{fetchd['checks']:,} checks in {window} s"),
        Row(label, "check lateness p99", "ms", [fetchd["p99_ms"]], peer, [curl["p99_ms"]],
            note=f"p50 {fetchd['p50_ms']:.0f} ms, max {fetchd['max_ms']:.0f} ms; peer max {curl['max_ms']:.0f} ms"),
        Row(label, "/healthz p99 throughout", "ms", [healthz["p99_ms"]], target="value <= 50",
            note=f"max {healthz['max_ms']:.0f} ms, {healthz['samples']} samples, {healthz['errors']} errors"),
    ]


def watch_with_fetchd(ctx, origin: Origin, urls: list[str], window: float) -> tuple[dict, dict]:
    fetchd = Fetchd(ctx.fetchd_bin, ctx.fresh("watches-fetchd"), FETCHD_WATCH_MIN_INTERVAL="1m")

    def create(i: int):
        status, body = fetchd.api.request("POST", "/watches", {"url": urls[i], "destination": f"w/{i}.bin",
                                                                "interval": "1m"})
        if status != 201:
            raise RuntimeError(f"watches: POST /watches: {status} {body!r:.300}")

    started = time.perf_counter()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(create, range(len(urls)), chunksize=64))
    ctx.log(f"watches: {len(urls):,} watches made in {time.perf_counter() - started:.1f} s")
    procs.wait_until(lambda: all(w["lastCheckedAt"] for w in all_watches(fetchd)), 300, 1.0,
                     "every watch's first check")
    ctx.log(f"watches: every first check done {time.perf_counter() - started:.1f} s after the first POST")
    due = {urls[int(destination[2:-4])]: at for destination, at in due_times(fetchd)}
    begin = min(due.values()) / 1000 - 1
    while begin < time.time():  # the first due times are under way: the next minute's
        begin += INTERVAL_MS / 1000
    time.sleep(max(0.0, begin - time.time()))

    probe = LatencyProbe(fetchd.port, "/healthz", interval=0.1)
    begin, cpu = time.time(), procs.cpu_seconds(fetchd.pid)
    with ctx.profiled(fetchd.pid, "watches-fetchd"):
        time.sleep(window)
    end, cpu = time.time(), procs.cpu_seconds(fetchd.pid) - cpu
    healthz = probe.stop()
    fetchd.stop()
    requests = logged(origin, begin, end)
    late = [t - nearest_due(due[url], t) for t, _, url in requests]
    return figures(requests, late, cpu), healthz


def all_watches(fetchd: Fetchd) -> list[dict]:
    watches, cursor = [], None
    while True:
        page = fetchd.api.get("/watches?limit=1000" + (f"&cursor={cursor}" if cursor else ""))
        watches += page["items"]
        cursor = page["nextCursor"]
        if not cursor:
            return watches


def due_times(fetchd: Fetchd) -> list[tuple[str, int]]:
    """(destination, next check time in ms) of every watch, from the database, read-only."""
    db = sqlite3.connect(f"file:{sqlite_files.path(fetchd.data_dir)}?mode=ro", uri=True)
    try:
        return db.execute("SELECT destination, json_extract(body, '$.nextCheckAt') FROM watches").fetchall()
    finally:
        db.close()


def nearest_due(due: int, t: int) -> int:
    """The due time (`due` plus whole intervals) that the request at `t` answered."""
    return due + round((t - due) / INTERVAL_MS) * INTERVAL_MS


def watch_with_curl(ctx, origin: Origin, urls: list[str], window: float) -> dict:
    """One pass a minute over every URL, as a cron job would run it; the window is whole passes."""
    work = ctx.fresh("watches-curl")
    os.makedirs(os.path.join(work, "etags"))
    os.makedirs(os.path.join(work, "files"))
    numbers = os.path.join(work, "numbers.txt")
    with open(numbers, "w") as f:
        f.writelines(f"{i}\n" for i in range(len(urls)))
    base = urls[0].rsplit("=", 1)[0]
    command = ["xargs", "-P", str(PARALLEL), "-I{}", "curl", "-sf", "-o", f"{work}/files/{{}}.bin",
               "--etag-compare", f"{work}/etags/{{}}", "--etag-save", f"{work}/etags/{{}}", f"{base}={{}}"]

    def one_pass():
        with open(numbers) as stdin:
            procs.run(command, stdin=stdin)

    one_pass()  # places the files and saves their ETags, as fetchd's first checks did
    begin, cpu = time.time(), procs.children_cpu()
    starts = []  # (ms the pass started, ms it was due): one that overran its minute delays the next
    for n in range(math.ceil(window * 1000 / INTERVAL_MS)):
        due = begin + n * INTERVAL_MS / 1000
        time.sleep(max(0.0, due - time.time()))
        starts.append((time.time() * 1000, due * 1000))
        one_pass()
    cpu = procs.children_cpu() - cpu
    requests = logged(origin, begin, time.time())
    late = [t - max((s for s in starts if s[0] <= t), default=starts[0])[1] for t, _, _ in requests]
    return figures(requests, late, cpu)


def logged(origin: Origin, begin: float, end: float) -> list[tuple[int, str, str]]:
    """(ms, status, URI) of each request nginx logged from `begin` to `end` (seconds)."""
    time.sleep(1.5)  # the log's buffer is written every second
    requests = []
    with open(origin.access_log) as f:
        for line in f:
            stamp, status, uri = line.split()
            t = round(float(stamp) * 1000)
            if begin * 1000 <= t < end * 1000:
                requests.append((t, status, origin.url(uri.split("/files/", 1)[1])))
    return requests


def figures(requests: list, late: list[int], cpu: float) -> dict:
    late = sorted(late)
    return {"checks": len(requests), "not_304": sum(status != "304" for _, status, _ in requests),
            "cpu_us": cpu / max(1, len(requests)) * 1e6,
            "p50_ms": late[len(late) // 2], "p99_ms": late[min(len(late) - 1, int(len(late) * 0.99))],
            "max_ms": late[-1]}
