"""segmented: one 1 GiB file (256 MiB with --quick) from nginx with `limit_rate 20m` per
connection; fetchd with `connections: 8` vs `aria2c -x8 -s8` in the same run, and fetchd against
what eight such connections can carry (8 × 20 MiB/s: nginx's `m` is MiB).

fetchd starts on one connection and hands over to eight byte ranges once it knows the size, and
hashes the finished file (SHA-256) and fsyncs it before it reports `completed`.
"""
import os

from benchlib import procs
from benchlib.origin import make_file
from benchlib.table import Row
from .common import aria2c, empty_dir, fetch_once, start_pair, throughput_rounds

CONNECTIONS = 8
PER_CONNECTION_MIB_S = 20


def run(ctx) -> list[Row]:
    size = (256 if ctx.quick else 1024) << 20
    label = f"7 segmented {size >> 20} MiB, {CONNECTIONS} × limit_rate {PER_CONNECTION_MIB_S}m"
    files = os.path.join(ctx.cache, "segmented")
    make_file(os.path.join(files, "big.bin"), size)
    origin, fetchd = start_pair(ctx, "segmented", files, limit_rate=f"{PER_CONNECTION_MIB_S}m",
                                FETCHD_MAX_TRANSFERS_PER_HOST=CONNECTIONS)
    url = origin.url("big.bin", slow=True)
    out = empty_dir(os.path.join(ctx.workdir, "segmented-out"))
    target = os.path.join(out, "big.bin")

    tools = {
        "fetchd": lambda r: fetch_once(fetchd, "segmented", {"url": url, "destination": f"segmented/r{r}.bin",
                                                             "connections": CONNECTIONS}),
        "aria2c -x8 -s8": lambda r: procs.run(aria2c(f"-x{CONNECTIONS}", f"-s{CONNECTIONS}", "-d", out,
                                                     "-o", "big.bin", url)),
    }
    with ctx.profiled(fetchd.pid, "segmented"):
        mib_s, _ = throughput_rounds(ctx, tools, size, fetchd.pid, "segmented", target)
    fetchd.stop()
    origin.stop()
    ceiling = [float(CONNECTIONS * PER_CONNECTION_MIB_S)]
    return [
        Row(label, "throughput", "MiB/s", mib_s["fetchd"], "aria2c -x8 -s8", mib_s["aria2c -x8 -s8"],
            "ratio >= 0.95", "fetchd: 8 connections over 16 MiB ranges, SHA-256 + fsync"),
        Row(label, "throughput", "MiB/s", mib_s["fetchd"], "8 × 20 MiB/s", ceiling, "ratio >= 0.8"),
    ]
