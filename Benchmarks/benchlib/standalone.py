"""For the benchmarks that are scripts of their own (churn.py, shutdown.py, …): a scratch directory
and the guarantee that every process they started is stopped, on errors, Ctrl-C and SIGTERM too."""
import contextlib
import shutil
import signal
import sys
import tempfile
import time

from . import deletions, procs


@contextlib.contextmanager
def scratch(prefix: str):
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    workdir = tempfile.mkdtemp(prefix=prefix)
    try:
        yield workdir
    finally:
        procs.stop_all()
        shutil.rmtree(workdir, ignore_errors=True)


@contextlib.contextmanager
def file_creation_scratch(prefix: str, cache: str):
    """`scratch` for a script that times the creation of many files: it starts once the disk has
    forgotten the files removed before, and notes its own removal (`benchlib.deletions`)."""
    deletions.wait(cache, log)
    try:
        with scratch(prefix) as workdir:
            yield workdir
    finally:
        deletions.note(cache)


def log(message: str):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)
