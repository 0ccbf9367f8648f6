"""7. batch: jobs per second through POST /downloads/batch, 1,000 jobs a request (wrk, 4 connections,
unique destinations, a far-future earliestBeginDate so nothing downloads) vs aria2's JSON-RPC
system.multicall of 1,000 aria2.addUri calls with pause=true. Each round starts both afresh, so
every round meets an empty queue. Also fetchd's CPU per job (user + sys over the run / jobs)."""
from benchlib import procs, wrk
from benchlib.fetchd import Fetchd
from benchlib.origin import accepting, free_port
from benchlib.table import Row
from .common import FAR_FUTURE, rate_rounds

ITEMS = 1000
CONNECTIONS = 4
ORIGIN = "http://127.0.0.1:9/never-fetched.bin"


def run(ctx) -> list[Row]:
    seconds = 3 if ctx.quick else 5
    cpu_per_job = []

    def with_fetchd(r):
        fetchd = Fetchd(ctx.fetchd_bin, ctx.fresh("batch-fetchd"))
        with ctx.profiled(fetchd.pid, f"batch-r{r}"):
            before = procs.cpu_seconds(fetchd.pid)
            result = wrk.run(fetchd.base + "/downloads/batch", CONNECTIONS, threads=1, duration=seconds,
                             script=wrk.lua("post_batch.lua"),
                             script_args=[ORIGIN, f"r{r}", "batch", FAR_FUTURE, ITEMS])
            cpu = procs.cpu_seconds(fetchd.pid) - before
        cpu_per_job.append(cpu / max(1, result["requests"] * ITEMS) * 1e6)
        fetchd.kill()
        return result

    def with_aria2(r):
        port = free_port()
        aria2 = procs.spawn(["aria2c", "--enable-rpc", f"--rpc-listen-port={port}", "--rpc-listen-all=false",
                             "--rpc-max-request-size=64M", "-d", ctx.fresh("batch-aria2"),
                             "--console-log-level=error", "-q"])
        procs.wait_until(lambda: accepting(port), 10, what="aria2 RPC")
        result = wrk.run(f"http://127.0.0.1:{port}/jsonrpc", CONNECTIONS, threads=1, duration=seconds,
                         script=wrk.lua("aria2_multicall.lua"), script_args=[ORIGIN, f"r{r}", ITEMS])
        procs.stop(aria2)
        return result

    jobs_s, failed = rate_rounds(ctx, {"fetchd": with_fetchd, "aria2": with_aria2}, "batch", ITEMS, "jobs/s")
    note = f"{ITEMS:,} a request, {CONNECTIONS} conns, {seconds} s"
    if failed["fetchd"] or failed["aria2"]:
        note += f"; failed requests: fetchd {failed['fetchd']}, aria2 {failed['aria2']}"
    return [Row("9 batch", "POST /downloads/batch", "jobs/s", jobs_s["fetchd"], "aria2 multicall addUri",
                jobs_s["aria2"], "value >= 100000", note),
            Row("9 batch", "fetchd CPU per job (user + sys)", "µs", cpu_per_job)]
