"""Pieces several scenarios share."""
import hashlib
import os
import shutil
import time

from benchlib import deletions, procs
from benchlib.fetchd import Fetchd
from benchlib.origin import Origin

FAR_FUTURE = "2099-01-01T00:00:00Z"


def alternating(tools: list, rounds: int):
    """Yields (round, tool) with the order rotated every round, so no tool always goes first."""
    for r in range(rounds):
        shift = r % len(tools)
        for tool in tools[shift:] + tools[:shift]:
            yield r, tool


def with_warm_up(tools: list, rounds: int):
    """Yields (round, tool): round 0 runs each tool once untimed (as hyperfine's --warmup), then
    rounds 1..`rounds` alternate. The first run after a wait met colder caches than the rest, more
    so where the host pages out memory left idle (run.py's `damon_reclaim`; 2026-12-01, small files:
    fetchd 1.12 s, then 0.84 and 0.82 s; the floor's curl 3.55 s, then 0.23 s)."""
    yield from ((0, tool) for tool in tools)
    yield from ((r + 1, tool) for r, tool in alternating(tools, rounds))


def round_label(r: int) -> str:
    """How the progress output names round `r` of `with_warm_up`."""
    return f"round {r}" if r else "warm-up"


def rate_rounds(ctx, tools: dict, label: str, scale: float = 1, unit: str = "req/s") -> tuple[dict, dict]:
    """Runs each of `tools` (name -> fn(round) returning a wrk result) once per round, alternating;
    returns per tool the rates (wrk's requests/s × scale) and the sum of failed requests."""
    rates = {name: [] for name in tools}
    failed = {name: 0 for name in tools}
    for r, name in alternating(list(tools), ctx.rounds):
        result = tools[name](r)
        rates[name].append(result["rps"] * scale)
        failed[name] += result["failed"]
        ctx.log(f"{label} round {r + 1} {name}: {rates[name][-1]:,.0f} {unit}, {result['failed']} failed requests")
    return rates, failed


def empty_dir(path: str) -> str:
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def settle_disk(*paths: str):
    """Writes back what a tool left unwritten (fsync of its files), so it does not slow the next
    tool. Only our own files: a global sync would wait for whatever else the machine writes."""
    for path in paths:
        if os.path.exists(path):
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def wait_for_forgotten_deletions(ctx):
    """Waits until the files the last run removed no longer slow the creation of new ones
    (`benchlib.deletions`); a quick run only says so."""
    deletions.wait(ctx.cache, ctx.log, only_say=ctx.quick)


def aria2c(*args) -> list[str]:
    """aria2c with the options that make it comparable: quiet, no preallocation, overwrite."""
    return ["aria2c", "-q", "--file-allocation=none", "--allow-overwrite=true", "--auto-file-renaming=false",
            "--console-log-level=error", *args]


def curl_hashing_and_syncing(url: str, target: str, *curl_options: str) -> list[str]:
    """fetchd's work done with standard tools: `curl | tee FILE | sha256sum; sync FILE`."""
    return ["bash", "-c", 'set -o pipefail; curl -sS --fail "${@:3}" "$1" | tee "$2" | sha256sum >/dev/null && sync "$2"',
            "-", url, target, *curl_options]


# Free page reporting gives freed memory back to the host 2 s after it is freed, in batches.
FREED_MEMORY_RETURNED_S = 5


def throughput_rounds(ctx, tools: dict, size: int, fetchd_pid: int, label: str, target: str) -> tuple[dict, dict]:
    """Runs each of `tools` (name -> fn(round)) once per round, alternating, each fetching `size`
    bytes; returns MiB/s and CPU seconds per tool (fetchd's own CPU for "fetchd", else the tool's).
    What a tool left at `target`, or at the path its fn returned, is synced and removed after it,
    outside the measured time: removing a 256 MiB file takes 50-200 ms, which no tool should be
    charged for."""
    mib_s = {name: [] for name in tools}
    cpu = {name: [] for name in tools}
    for r, name in alternating(list(tools), ctx.rounds):
        # Each tool starts with the memory the last one freed given back to the host, as memory
        # idle for a few seconds is on a virtual machine with free page reporting: else a tool
        # that follows one which left 512 MiB in the page cache writes into pages still backed,
        # and one that follows a tool which left little pays the host's faults (docs/benchmarks.md).
        time.sleep(FREED_MEMORY_RETURNED_S)
        left = []
        seconds, cpu_seconds = procs.measured(lambda: left.append(tools[name](r)),
                                              fetchd_pid if name == "fetchd" else None)
        mib_s[name].append(size / (1 << 20) / seconds)
        cpu[name].append(cpu_seconds)
        ctx.log(f"{label} round {r + 1} {name}: {mib_s[name][-1]:.0f} MiB/s, {cpu_seconds:.2f} s CPU")
        for path in [target] + [path for path in left if isinstance(path, str)]:
            settle_disk(path)
            if os.path.exists(path):
                os.remove(path)
    return mib_s, cpu


def fetch_once(fetchd, label: str, job: dict) -> str:
    """Submits `job`, waits until it ends, fails unless it completed; returns the file's path
    (`throughput_rounds` removes it)."""
    job = fetchd.api.wait_terminal(fetchd.api.submit(job)["id"])
    if job["state"] != "completed":
        raise RuntimeError(f"{label}: fetchd job ended {job['state']}: {job.get('error')}")
    return os.path.join(fetchd.root, job["destination"])


def start_pair(ctx, name: str, files_root: str, limit_rate="100k", **settings) -> tuple[Origin, Fetchd]:
    origin = Origin(ctx.fresh(name + "-origin"), files_root, limit_rate)
    return origin, Fetchd(ctx.fetchd_bin, ctx.fresh(name + "-fetchd"), **settings)


def sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
