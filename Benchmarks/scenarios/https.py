"""6. https: one 512 MiB file (256 MiB with --quick) from nginx over TLS on loopback, once over
HTTP/1.1 and once over HTTP/2 (ALPN); fetchd (FETCHD_CA_BUNDLE with the run's own CA) vs
`curl -o --cacert` vs `curl | tee | sha256sum; sync FILE` (fetchd's work with standard tools) vs
`aria2c --ca-certificate` (aria2 speaks HTTP/1.1 only, also on the HTTP/2 port). nginx's access log
shows which protocol each request used.

On two cores nginx's TLS, the client's TLS and its SHA-256 share the CPU, so a client that hashes
cannot reach curl's rate: the targets are 0.75 × curl over the same protocol, 1.2 × the standard
tools doing fetchd's work and 1.3 × aria2.
"""
import os

from benchlib import procs
from benchlib.fetchd import Fetchd
from benchlib.origin import make_file
from benchlib.table import Row
from benchlib.tls_origin import TLSOrigin
from .common import aria2c, curl_hashing_and_syncing, empty_dir, fetch_once, throughput_rounds


def run(ctx) -> list[Row]:
    size = (256 if ctx.quick else 512) << 20
    files = os.path.join(ctx.cache, "single")
    make_file(os.path.join(files, "big.bin"), size)
    origin = TLSOrigin(ctx.fresh("https-origin"), files)
    fetchd = Fetchd(ctx.fetchd_bin, ctx.fresh("https-fetchd"), FETCHD_CA_BUNDLE=origin.ca)
    out = empty_dir(os.path.join(ctx.workdir, "https-out"))
    target = os.path.join(out, "big.bin")
    rows = []
    try:
        for http2 in (False, True):
            rows += measure(ctx, origin, fetchd, origin.url("big.bin", http2), target, out, size, http2)
        seen = ", ".join(f"{key}: {n}" for key, n in sorted(origin.protocols("big.bin").items()))
        ctx.log(f"https: requests by port and protocol: {seen}")
    finally:
        fetchd.stop()
        origin.stop()
    return rows


def measure(ctx, origin, fetchd, url, target, out, size, http2) -> list[Row]:
    protocol = "HTTP/2" if http2 else "HTTP/1.1"
    label = f"6 https {protocol} {size >> 20} MiB"

    tools = {
        "fetchd": lambda r: fetch_once(fetchd, "https", {"url": url, "destination": f"https/{'h2' if http2 else 'h1'}-r{r}.bin"}),
        "curl -o": lambda r: procs.run(["curl", "-sS", "--fail", "--cacert", origin.ca, "-o", target, url]),
        "curl|tee|sha256sum; sync": lambda r: procs.run(curl_hashing_and_syncing(url, target, "--cacert", origin.ca)),
        "aria2c": lambda r: procs.run(aria2c("--ca-certificate", origin.ca, "-d", out, "-o", "big.bin", url)),
    }
    with ctx.profiled(fetchd.pid, f"https-{'h2' if http2 else 'h1'}"):
        mib_s, cpu = throughput_rounds(ctx, tools, size, fetchd.pid, f"https {protocol}", target)
    note = "fetchd: SHA-256 + fsync"
    return [
        Row(label, "throughput", "MiB/s", mib_s["fetchd"], "curl -o", mib_s["curl -o"], "ratio >= 0.75", note),
        Row(label, "throughput", "MiB/s", mib_s["fetchd"], "curl + sha256sum + fsync",
            mib_s["curl|tee|sha256sum; sync"], "ratio >= 1.2", note),
        Row(label, "throughput", "MiB/s", mib_s["fetchd"], "aria2c (HTTP/1.1)", mib_s["aria2c"], "ratio >= 1.3", note),
        Row(label, "CPU time (user + sys)", "s", cpu["fetchd"], "curl -o", cpu["curl -o"], note=note),
    ]
