"""5. concurrency: 1,000 transfers at once from an nginx that throttles each connection (limit_rate),
fetchd with FETCHD_MAX_TRANSFERS=1000 and FETCHD_MAX_TRANSFERS_PER_HOST=1000, vs aria2c -j 1000.

Once 1,000 connections to the origin are established, the tool's CPU time over a fixed window
gives the CPU per transfer (% of one core) and its RSS the memory per transfer (total RSS / 1,000,
the process's baseline included). /healthz is probed every 20 ms on one connection from
submission until the last transfer completed."""
import contextlib
import os
import time

from benchlib import procs
from benchlib.fetchd import Fetchd
from benchlib.origin import Origin, make_file
from benchlib.probe import LatencyProbe, connections_to
from benchlib.table import Row
from .common import alternating, aria2c, empty_dir

COUNT, RATE = 1000, 64 << 10


def run(ctx) -> list[Row]:
    size = (512 << 10) if ctx.quick else (1 << 20)       # 8 s or 16 s per transfer at RATE
    window = 3 if ctx.quick else 6
    rounds = 1 if ctx.quick else ctx.rounds
    files = os.path.join(ctx.cache, "concurrency")
    make_file(os.path.join(files, "slow.bin"), size)
    origin = Origin(ctx.fresh("concurrency-origin"), files, limit_rate=str(RATE))
    url = origin.url("slow.bin", slow=True)
    out = os.path.join(ctx.workdir, "concurrency-out")
    healthz = []

    def sample(pid: int, r: int, name: str) -> tuple[float, float]:
        procs.wait_until(lambda: connections_to(origin.port) >= COUNT, 60, 0.05, f"{COUNT} connections")
        cpu, start = procs.cpu_seconds(pid), time.perf_counter()
        with ctx.profiled(pid, f"concurrency-{name}-r{r}") if name == "fetchd" else contextlib.nullcontext():
            time.sleep(window)
        cpu_pct = (procs.cpu_seconds(pid) - cpu) / (time.perf_counter() - start) * 100
        return cpu_pct, procs.rss_mb(pid)

    def with_fetchd(r):
        fetchd = Fetchd(ctx.fetchd_bin, ctx.fresh("concurrency-fetchd"), FETCHD_MAX_TRANSFERS=COUNT,
                        FETCHD_MAX_TRANSFERS_PER_HOST=COUNT)
        probe = LatencyProbe(fetchd.port)
        session = f"conc{r}"
        fetchd.api.submit_many([{"url": url, "destination": f"{session}/{i}", "session": session}
                                for i in range(COUNT)])
        result = sample(fetchd.pid, r, "fetchd")
        procs.wait_until(lambda: fetchd.api.session_counts(session)["completed"] == COUNT, 120, 0.2,
                         "1,000 throttled transfers to complete")
        healthz.append(probe.stop())
        fetchd.stop()
        return result

    def with_aria2(r):
        list_file = os.path.join(ctx.workdir, "concurrency-urls.txt")
        with open(list_file, "w") as f:
            f.writelines(f"{url}\n  out=f{i}.bin\n" for i in range(COUNT))
        aria2 = procs.spawn(aria2c("-j", str(COUNT), "-i", list_file, "-d", empty_dir(out)))
        result = sample(aria2.pid, r, "aria2")
        if aria2.wait(120) != 0:
            raise RuntimeError(f"concurrency: aria2c exited {aria2.returncode}")
        procs.stop(aria2)
        return result

    tools = {"fetchd": with_fetchd, "aria2": with_aria2}
    cpu = {name: [] for name in tools}
    rss = {name: [] for name in tools}
    for r, name in alternating(list(tools), rounds):
        cpu_pct, rss_mb = tools[name](r)
        cpu[name].append(cpu_pct / COUNT)
        rss[name].append(rss_mb * 1000 / COUNT)
        ctx.log(f"concurrency round {r + 1} {name}: {cpu_pct:.0f} % CPU, {rss_mb:.0f} MB RSS")
    origin.stop()
    label = f"5 concurrency {COUNT} × {RATE >> 10} KiB/s"
    p99 = [h["p99_ms"] for h in healthz]
    return [
        Row(label, "CPU per transfer", "% core", cpu["fetchd"], "aria2c -j 1000", cpu["aria2"]),
        Row(label, "RSS per transfer", "KB", rss["fetchd"], "aria2c -j 1000", rss["aria2"], note="total RSS / 1000"),
        Row(label, "/healthz p99 throughout", "ms", p99, target="value <= 50",
            note=f"max {max(h['max_ms'] for h in healthz):.0f} ms, {sum(h['samples'] for h in healthz)} samples, "
                 f"{sum(h['errors'] for h in healthz)} errors"),
    ]

