"""12. uploads: the file of scenario 1 (512 MiB, 256 MiB with --quick) sent from disk to a server on
loopback: a plain PUT to nginx (its WebDAV module, `/in/`), fetchd vs `curl -T` to the same
location; and a tus 1.0 upload to aiohttp-tus (Tests/e2e/tus_server.py), fetchd vs tuspy, the
reference Python client, in the same run.

fetchd reads the source through the descriptor it pinned, computes its SHA-256 while sending, and
reports `completed` once the server answered; for tus it creates the resource, commits its URL,
and sends `FETCHD_TUS_CHUNK_SIZE` (8 MiB) PATCHes. tuspy runs at its defaults (one PATCH of the
whole file, which it reads into memory). Per round: the wall time from POST to `completed`
(fetchd, followed on the upload's event stream) or of the client process; out of the timed part,
the file on the server is checked (size and SHA-256) and removed.
"""
import os
import sys
import time
from pathlib import Path

from benchlib import procs
from benchlib.origin import make_file
from benchlib.table import Row
from .common import FREED_MEMORY_RETURNED_S, alternating, sha256_file, start_pair

MIB = 1 << 20
E2E = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "Tests", "e2e")
TUSPY = """
import sys
from tusclient import client
client.TusClient(sys.argv[1]).uploader(sys.argv[2], metadata={"filename": "big.bin"}).upload()
"""


def run(ctx) -> list[Row]:
    if E2E not in sys.path:
        sys.path.insert(0, E2E)
    from tus_support import TusServer  # aiohttp-tus and tuspy (make bench-deps installs them)

    size = (256 if ctx.quick else 512) << 20
    label = f"12 uploads {size >> 20} MiB"
    files = os.path.join(ctx.cache, "single")
    source = os.path.join(files, "big.bin")
    make_file(source, size)
    expected = sha256_file(source)
    origin, fetchd = start_pair(ctx, "uploads", files, FETCHD_UPLOAD_ROOT=files)
    tus = TusServer(Path(ctx.fresh("uploads-tus")))
    try:
        def fetchd_once(fields: dict) -> None:
            job = fetchd.api.wait_terminal(fetchd.api.upload({"source": "big.bin", **fields})["id"], kind="upload")
            if job["state"] != "completed" or job["sha256"] != expected:
                raise RuntimeError(f"uploads: fetchd job ended {job['state']} ({job.get('error')}), sha256 {job.get('sha256')}")

        put = {
            "fetchd": lambda r: fetchd_once({"url": origin.upload_url(f"fetchd-r{r}.bin")}),
            "curl -T": lambda r: procs.run(["curl", "-sS", "--fail", "-T", source, origin.upload_url(f"curl-r{r}.bin")]),
        }
        tus_tools = {
            "fetchd tus": lambda r: fetchd_once({"url": tus.endpoint, "protocol": "tus"}),
            "tuspy": lambda r: procs.run([sys.executable, "-c", TUSPY, tus.endpoint, source]),
        }
        put_mib_s, put_cpu = measure(ctx, fetchd.pid, put, size, "uploads PUT",
                                     lambda name, r: origin.uploaded(f"{'fetchd' if name == 'fetchd' else 'curl'}-r{r}.bin"),
                                     expected)
        tus_mib_s, tus_cpu = measure(ctx, fetchd.pid, tus_tools, size, "uploads tus",
                                     lambda name, r: str(tus.uploads / "big.bin"), expected)
    finally:
        tus.stop()
        fetchd.stop()
        origin.stop()
    note = "fetchd: SHA-256 of what it sent"
    return [
        Row(label, "PUT to nginx", "MiB/s", put_mib_s["fetchd"], "curl -T", put_mib_s["curl -T"], "ratio >= 0.95", note),
        Row(label, "PUT to nginx, CPU time (user + sys)", "s", put_cpu["fetchd"], "curl -T", put_cpu["curl -T"], note=note),
        Row(label, "tus to aiohttp-tus", "MiB/s", tus_mib_s["fetchd tus"], "tuspy", tus_mib_s["tuspy"], "ratio >= 1.0",
            note + ", 8 MiB PATCHes; tuspy: one PATCH"),
        Row(label, "tus, CPU time (user + sys)", "s", tus_cpu["fetchd tus"], "tuspy", tus_cpu["tuspy"], note=note),
    ]


def measure(ctx, fetchd_pid: int, tools: dict, size: int, label: str, landed, expected: str) -> tuple[dict, dict]:
    """Each tool once per round, alternating; the file each left on the server (`landed(name, r)`)
    is checked and removed outside the timed part. As in `throughput_rounds`, each starts once the
    memory the last one freed (the server's copy) is given back to the host."""
    mib_s = {name: [] for name in tools}
    cpu = {name: [] for name in tools}
    for r, name in alternating(list(tools), ctx.rounds):
        time.sleep(FREED_MEMORY_RETURNED_S)
        seconds, cpu_seconds = procs.measured(lambda: tools[name](r), fetchd_pid if name.startswith("fetchd") else None)
        path = landed(name, r)
        if os.path.getsize(path) != size or sha256_file(path) != expected:
            raise RuntimeError(f"{label}: {name} left {path} not the source")
        os.remove(path)
        mib_s[name].append(size / MIB / seconds)
        cpu[name].append(cpu_seconds)
        ctx.log(f"{label} round {r + 1} {name}: {mib_s[name][-1]:.0f} MiB/s, {cpu_seconds:.2f} s CPU")
    return mib_s, cpu
