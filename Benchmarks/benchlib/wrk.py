"""Runs wrk and reads what it prints: requests/s, latency percentiles, failures."""
import os
import re
import signal
import subprocess

from . import procs

LUA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lua")
UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3}


def lua(name: str) -> str:
    return os.path.join(LUA, name)


def _argv(url, connections, threads, duration, script, script_args, latency):
    argv = ["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{duration}s", "--timeout", "10s"]
    if latency:
        argv.append("--latency")
    if script:
        argv += ["-s", script]
    argv.append(url)
    if script_args:
        argv += ["--", *map(str, script_args)]
    return argv


def run(url, connections=64, threads=2, duration=5, script=None, script_args=(), latency=False) -> dict:
    """Returns {"rps", "requests", "failed", "p50_ms", "p99_ms", ...}; failed counts non-2xx, socket
    errors and what the script's done() reports as `bench-failed N`."""
    out = subprocess.run(_argv(url, connections, threads, duration, script, script_args, latency),
                         capture_output=True, text=True, check=True).stdout
    return parse(out)


def start(url, connections=64, threads=2, duration=3600, script=None, script_args=()):
    """Starts wrk in the background (stop it with `finish`)."""
    return procs.spawn(_argv(url, connections, threads, duration, script, script_args, False),
                       stdout=subprocess.PIPE, text=True)


def finish(proc) -> dict:
    proc.send_signal(signal.SIGINT)
    out = proc.communicate(timeout=30)[0]
    procs.stop(proc)
    return parse(out)


def parse(out: str) -> dict:
    result = {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
              "requests": int(re.search(r"(\d+) requests in", out).group(1)),
              "failed": 0, "output": out}
    if m := re.search(r"Non-2xx or 3xx responses: (\d+)", out):
        result["failed"] += int(m.group(1))
    if m := re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out):
        result["failed"] += sum(int(g) for g in m.groups())
    if m := re.search(r"bench-failed (\d+)", out):
        result["failed"] += int(m.group(1))
    for pct, value, unit in re.findall(r"^\s+(\d+)%\s+([\d.]+)(us|ms|s|m)\s*$", out, re.M):
        result[f"p{pct}_ms"] = float(value) * UNITS[unit]
    return result
