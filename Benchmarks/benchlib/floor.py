"""The durable floor (`floor/floor.c`): only the durable work a service keeping fetchd's promises
owes each small file, in C, on one thread, without HTTP. Built here and run by the small-files
scenario and `durable_floor.py`, which also measures what a hand-off between threads costs here
(`floor/wakeup.c`)."""
import json
import os
import shutil
import subprocess

from . import procs

SOURCES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "floor")


def build(work: str, program: str = "floor", libraries: tuple[str, ...] = ("-lsqlite3", "-lcrypto")) -> str:
    """Compiles `floor/<program>.c` into `work`; returns the binary's path."""
    binary = os.path.join(work, program)
    # The Swift toolchain brings clang where a machine has no cc.
    compiler = shutil.which("cc") or shutil.which("clang")
    if compiler is None:
        raise RuntimeError("the durable floor needs a C compiler (cc or clang) on PATH")
    procs.run([compiler, "-O2", "-o", binary, os.path.join(SOURCES, program + ".c"), *libraries])
    return binary


def handoff_cost(work: str) -> dict:
    """The CPU time, in µs, of one hand-off between two threads that sleep until woken: with the
    threads on two CPUs (`across_cpus_us`) and on one (`same_cpu_us`)."""
    binary = build(work, "wakeup", ("-lpthread",))
    return json.loads(subprocess.run([binary], check=True, capture_output=True, text=True).stdout)


def run(binary: str, out: str, files: int, mode: str = "all") -> tuple[float, float]:
    """Runs the floor for `files` files under `out` in `mode` (all, nosync, db, files); returns its
    wall and CPU seconds as it measured them."""
    result = json.loads(subprocess.run([binary, out, str(files), mode], check=True,
                                       capture_output=True, text=True).stdout)
    return result["wall_s"], result["cpu_s"]
