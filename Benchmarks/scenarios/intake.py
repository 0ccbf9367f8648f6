"""3. intake: POST /downloads per second with wrk at 64 connections (unique destinations, a far-future
earliestBeginDate so nothing downloads) vs aria2's JSON-RPC aria2.addUri with pause=true.
Each round starts both services afresh, so every round meets an empty queue. Without --quick it
also times fetchd's exit on SIGTERM right after the load (killed past 60 s)."""
import os

from benchlib import procs, wrk
from benchlib.fetchd import Fetchd
from benchlib.origin import accepting, free_port
from benchlib.table import Row
from .common import FAR_FUTURE, rate_rounds

CONNECTIONS = 64
ORIGIN = "http://127.0.0.1:9/never-fetched.bin"


def run(ctx) -> list[Row]:
    seconds = 3 if ctx.quick else 10
    stopping = []
    cpu_per_post = []

    def with_fetchd(r):
        fetchd = Fetchd(ctx.fetchd_bin, ctx.fresh("intake-fetchd"))
        with ctx.profiled(fetchd.pid, f"intake-r{r}"):
            before = procs.cpu_seconds(fetchd.pid)
            result = wrk.run(fetchd.base + "/downloads", CONNECTIONS, duration=seconds,
                             script=wrk.lua("post_downloads.lua"), script_args=[ORIGIN, f"r{r}", "intake", FAR_FUTURE])
            cpu_per_post.append((procs.cpu_seconds(fetchd.pid) - before) / max(1, result["requests"]) * 1e6)
        if ctx.quick:
            fetchd.kill()
        else:
            stopping.append(_time_stop(fetchd))
        return result

    def with_aria2(r):
        port = free_port()
        aria2 = procs.spawn(["aria2c", "--enable-rpc", f"--rpc-listen-port={port}", "--rpc-listen-all=false",
                             "-d", ctx.fresh("intake-aria2"), "--console-log-level=error", "-q"])
        procs.wait_until(lambda: accepting(port), 10, what="aria2 RPC")
        result = wrk.run(f"http://127.0.0.1:{port}/jsonrpc", CONNECTIONS, duration=seconds,
                         script=wrk.lua("aria2_adduri.lua"), script_args=[ORIGIN, f"r{r}"])
        procs.stop(aria2)
        return result

    rps, failed = rate_rounds(ctx, {"fetchd": with_fetchd, "aria2": with_aria2}, "intake")
    note = f"{CONNECTIONS} conns, {seconds} s"
    if failed["fetchd"] or failed["aria2"]:
        note += f"; failed: fetchd {failed['fetchd']}, aria2 {failed['aria2']}"
    rows = [Row("3 intake", "POST /downloads", "req/s", rps["fetchd"], "aria2.addUri", rps["aria2"],
                "ratio >= 5", note),
            Row("3 intake", "fetchd CPU per POST (user + sys)", "µs", cpu_per_post, target="value <= 60")]
    if stopping:
        rows.append(Row("3 intake", "SIGTERM to exit right after the load", "s", stopping,
                        note="60 = killed; FETCHD_SHUTDOWN_TIMEOUT is 10 s"))
    return rows


def _time_stop(fetchd) -> float:
    try:
        return fetchd.stop(timeout=60)
    except RuntimeError:
        return 60.0

