"""1. single: one 512 MiB file (256 MiB with --quick) from nginx on loopback to disk;
fetchd vs curl -o vs aria2c, and vs the disk: `dd conv=fsync` writing as many bytes.

fetchd also computes SHA-256 while downloading and fsyncs before it reports `completed`;
the `curl | tee | sha256sum; sync FILE` row does the same work with standard tools. Where the
disk is fast, the two cores bound it first: the work's parts are timed alone in the same rounds
(the bytes received and dropped, with nginx's CPU; SHA-256 of the file; `dd conv=fsync`), and no
client can finish before their CPU shared by the cores, nor before the hash, one stream on one core.
"""
import os

from benchlib import procs
from benchlib.origin import make_file
from benchlib.table import Row
from .common import aria2c, curl_hashing_and_syncing, empty_dir, fetch_once, start_pair, throughput_rounds


def run(ctx) -> list[Row]:
    size = (256 if ctx.quick else 512) << 20
    label = f"1 single {size >> 20} MiB"
    files = os.path.join(ctx.cache, "single")
    make_file(os.path.join(files, "big.bin"), size)
    origin, fetchd = start_pair(ctx, "single", files)
    url = origin.url("big.bin")
    out = empty_dir(os.path.join(ctx.workdir, "single-out"))
    target = os.path.join(out, "big.bin")
    nginx_cpu = []

    def received_and_dropped(r):
        before = origin.cpu_seconds()
        procs.run(["curl", "-sS", "--fail", "-o", "/dev/null", url])
        nginx_cpu.append(origin.cpu_seconds() - before)

    tools = {
        "fetchd": lambda r: fetch_once(fetchd, "single", {"url": url, "destination": f"single/r{r}.bin"}),
        "curl -o": lambda r: procs.run(["curl", "-sS", "--fail", "-o", target, url]),
        "curl -o; sync": lambda r: procs.run(
            ["bash", "-c", 'curl -sS --fail -o "$2" "$1" && sync "$2"', "-", url, target]),
        "curl|tee|sha256sum; sync": lambda r: procs.run(curl_hashing_and_syncing(url, target)),
        "aria2c": lambda r: procs.run(aria2c("-d", out, "-o", "big.bin", url)),
        "dd conv=fsync": lambda r: procs.run(
            ["dd", "if=/dev/zero", f"of={target}", "bs=1M", f"count={size >> 20}", "conv=fsync", "status=none"]),
        "curl -o /dev/null": received_and_dropped,
        "openssl sha256": lambda r: procs.run(
            ["openssl", "dgst", "-sha256", "-out", "/dev/null", os.path.join(files, "big.bin")]),
    }
    with ctx.profiled(fetchd.pid, "single"):
        mib_s, cpu = throughput_rounds(ctx, tools, size, fetchd.pid, "single", target)
    fetchd.stop()
    origin.stop()
    note = "fetchd: SHA-256 + fsync"
    cores = os.cpu_count() or 1
    # Per round: the least wall time of the work's parts on the cores, as MiB/s.
    cpu_bound = [size / (1 << 20) / max(hashing, (network + nginx + hashing + disk) / cores)
                 for network, nginx, hashing, disk in zip(cpu["curl -o /dev/null"], nginx_cpu,
                                                          cpu["openssl sha256"], cpu["dd conv=fsync"])]
    return [
        Row(label, "throughput", "MiB/s", mib_s["fetchd"], "curl -o", mib_s["curl -o"],
            "ratio >= 0.95", note),
        Row(label, "throughput", "MiB/s", mib_s["fetchd"], "curl -o + fsync", mib_s["curl -o; sync"], note=note),
        Row(label, "throughput", "MiB/s", mib_s["fetchd"], "curl + sha256sum + fsync",
            mib_s["curl|tee|sha256sum; sync"], note=note),
        Row(label, "throughput", "MiB/s", mib_s["fetchd"], "aria2c", mib_s["aria2c"], note=note),
        Row(label, "throughput", "MiB/s", mib_s["fetchd"], "dd conv=fsync (the disk)", mib_s["dd conv=fsync"],
            "ratio >= 0.8", note),
        Row(label, "throughput", "MiB/s", mib_s["fetchd"],
            f"(curl -o /dev/null + nginx + sha256 + dd CPU) / {cores} cores", cpu_bound, note=note),
        Row(label, "CPU time (user + sys)", "s", cpu["fetchd"], "curl -o", cpu["curl -o"], note=note),
    ]
