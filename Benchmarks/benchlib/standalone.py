"""For the benchmarks that are scripts of their own (churn.py, shutdown.py): a scratch directory
and the guarantee that every process they started is stopped, on errors, Ctrl-C and SIGTERM too."""
import contextlib
import shutil
import signal
import sys
import tempfile
import time

from . import procs


@contextlib.contextmanager
def scratch(prefix: str):
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    workdir = tempfile.mkdtemp(prefix=prefix)
    try:
        yield workdir
    finally:
        procs.stop_all()
        shutil.rmtree(workdir, ignore_errors=True)


def log(message: str):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)
