"""segmented: a file of 64 MiB and one of 1 GiB (256 MiB with --quick) from nginx with
`limit_rate 20m` per connection; fetchd with `connections: 8` vs `aria2c -x8 -s8` in the same run,
and fetchd against what eight such connections can carry (8 × 20 MiB/s: nginx's `m` is MiB). The
64 MiB file takes under half a second, so its rate is mostly what starting costs: the first request,
and opening the ranges once the size is known. aria2 runs with `-k1M` (its least split size) so that
it too opens eight connections on 64 MiB (by default it splits no piece below 20 MiB).

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
START_UP_SIZE = 64 << 20


def run(ctx) -> list[Row]:
    files = os.path.join(ctx.cache, "segmented")
    origin, fetchd = start_pair(ctx, "segmented", files, limit_rate=f"{PER_CONNECTION_MIB_S}m",
                                FETCHD_MAX_TRANSFERS_PER_HOST=CONNECTIONS)
    rows = []
    for size in (START_UP_SIZE, (256 if ctx.quick else 1024) << 20):
        rows += _one_size(ctx, origin, fetchd, files, size)
    fetchd.stop()
    origin.stop()
    return rows


def _one_size(ctx, origin, fetchd, files: str, size: int) -> list[Row]:
    label = f"7 segmented {size >> 20} MiB, {CONNECTIONS} × limit_rate {PER_CONNECTION_MIB_S}m"
    name = f"{size >> 20}m.bin"
    make_file(os.path.join(files, name), size)
    url = origin.url(name, slow=True)
    out = empty_dir(os.path.join(ctx.workdir, "segmented-out"))
    target = os.path.join(out, name)

    tools = {
        "fetchd": lambda r: fetch_once(fetchd, "segmented", {"url": url, "destination": f"segmented/r{r}.bin",
                                                             "connections": CONNECTIONS}),
        "aria2c -x8 -s8 -k1M": lambda r: procs.run(aria2c(f"-x{CONNECTIONS}", f"-s{CONNECTIONS}", "-k1M", "-d", out,
                                                     "-o", name, url)),
    }
    with ctx.profiled(fetchd.pid, f"segmented-{size >> 20}m"):
        mib_s, _ = throughput_rounds(ctx, tools, size, fetchd.pid, f"segmented {size >> 20} MiB", target)
    rows = [Row(label, "throughput", "MiB/s", mib_s["fetchd"], "aria2c -x8 -s8 -k1M", mib_s["aria2c -x8 -s8 -k1M"],
                "ratio >= 0.95", "fetchd: 8 connections over ranges of at most 16 MiB, SHA-256 + fsync")]
    if size > START_UP_SIZE:  # the small file is about starting, not the connections' rate
        ceiling = [float(CONNECTIONS * PER_CONNECTION_MIB_S)]
        rows.append(Row(label, "throughput", "MiB/s", mib_s["fetchd"], "8 × 20 MiB/s", ceiling, "ratio >= 0.8"))
    return rows
