"""What every scenario gets: the fetchd binary, a scratch directory, the mode, a logger, the profiler."""
import contextlib
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass

from . import procs
from .standalone import log


@dataclass
class Context:
    fetchd_bin: str
    workdir: str          # scratch, removed at the end
    cache: str            # generated origin files, kept between runs
    quick: bool
    rounds: int
    profile_dir: str | None = None

    def fresh(self, name: str) -> str:
        path = os.path.join(self.workdir, name)
        shutil.rmtree(path, ignore_errors=True)
        os.makedirs(path)
        return path

    def log(self, message: str):
        log(message)

    @contextlib.contextmanager
    def profiled(self, pid: int, label: str):
        """With --profile: samples `pid` with perf (call graphs) while the block runs, then writes
        <profile dir>/<label>.txt: the hottest symbols (self time) and the hottest call chains."""
        if not self.profile_dir:
            yield
            return
        os.makedirs(self.profile_dir, exist_ok=True)
        data = os.path.join(self.profile_dir, f"{label}.data")
        perf = procs.spawn(["perf", "record", "-F", "499", "--call-graph", "dwarf,16384", "-p", str(pid), "-o", data])
        time.sleep(0.5)
        try:
            yield
        finally:
            perf.send_signal(signal.SIGINT)
            perf.wait(60)
            procs.stop(perf)
            self._report(data, os.path.join(self.profile_dir, f"{label}.txt"))

    def _report(self, data: str, out: str):
        reports = [("by library", ["--no-children", "--sort", "dso", "-g", "none"]),
                   ("by symbol, self time", ["--no-children", "--sort", "dso,symbol", "-g", "none"]),
                   ("by symbol, including callees", ["--children", "--sort", "symbol", "-g", "none"])]
        with open(out, "w") as f:
            for title, args in reports:
                text = subprocess.run(["perf", "report", "-i", data, "--stdio", "--percent-limit", "1", *args],
                                      capture_output=True, text=True).stdout
                demangled = subprocess.run(["swift", "demangle", "--simplified"], input=text,
                                           capture_output=True, text=True).stdout or text
                f.write(f"## {title}\n{demangled}\n")
        self.log(f"profile written to {out}")
