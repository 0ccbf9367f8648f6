"""Starting, measuring and stopping the processes a benchmark needs.

Every process started through `spawn` is remembered and killed (its whole process group) by
`stop_all`, which run.py calls on exit, on Ctrl-C and on errors: a benchmark leaves nothing behind.
"""
import os
import resource
import signal
import subprocess
import time

_started: list[subprocess.Popen] = []
_CLK_TCK = os.sysconf("SC_CLK_TCK")


def spawn(argv, **kwargs) -> subprocess.Popen:
    """Popen in its own process group, remembered for stop_all."""
    kwargs.setdefault("stdin", subprocess.DEVNULL)
    kwargs.setdefault("stdout", subprocess.DEVNULL)
    kwargs.setdefault("stderr", subprocess.DEVNULL)
    proc = subprocess.Popen(argv, start_new_session=True, **kwargs)
    _started.append(proc)
    return proc


def stop(proc: subprocess.Popen, sig=signal.SIGTERM, timeout=15.0) -> int | None:
    """Sends `sig` to the process group, waits, then SIGKILLs; returns the exit code."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
    if proc in _started:
        _started.remove(proc)
    return proc.returncode


def stop_all():
    for proc in list(_started):
        stop(proc, timeout=5.0)


def run(argv, **kwargs) -> float:
    """Runs a command to completion (checked, output discarded); returns its wall time in seconds."""
    kwargs.setdefault("stdout", subprocess.DEVNULL)
    start = time.perf_counter()
    proc = spawn(argv, **kwargs)
    code = proc.wait()
    _started.remove(proc)
    elapsed = time.perf_counter() - start
    if code != 0:
        raise RuntimeError(f"{argv[0]} exited {code}")
    return elapsed


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    """Resident set size in MB (10^6 bytes); `field` "RssAnon" for the private part alone: what the
    process allocated and wrote, without the pages of its binary and libraries mapped from files."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024 / 1e6
    raise RuntimeError(f"no {field} for {pid}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK


def children_cpu() -> float:
    """User + system CPU time of every child process waited for so far (curl, aria2c, pipelines)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measured(fn, pid: int | None = None) -> tuple[float, float]:
    """Runs fn(); returns (wall seconds, CPU seconds): of process `pid` if given, else of the
    children fn waited for."""
    cpu = cpu_seconds(pid) if pid else children_cpu()
    start = time.perf_counter()
    fn()
    wall = time.perf_counter() - start
    return wall, (cpu_seconds(pid) if pid else children_cpu()) - cpu


def wait_idle(pid: int, timeout: float = 120, window: float = 0.5, busy: float = 0.05) -> float:
    """Waits until the process uses under `busy` of a core over `window` seconds; returns the wait."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        cpu = cpu_seconds(pid)
        time.sleep(window)
        if cpu_seconds(pid) - cpu < busy * window:
            break
    return time.perf_counter() - start


def wait_until(predicate, timeout: float, interval=0.02, what="condition"):
    """Polls `predicate` until it returns a truthy value, which is returned."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)
