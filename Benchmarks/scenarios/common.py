"""Pieces several scenarios share."""
import os
import shutil

from benchlib.fetchd import Fetchd
from benchlib.origin import Origin

FAR_FUTURE = "2099-01-01T00:00:00Z"


def alternating(tools: list, rounds: int):
    """Yields (round, tool) with the order rotated every round, so no tool always goes first."""
    for r in range(rounds):
        shift = r % len(tools)
        for tool in tools[shift:] + tools[:shift]:
            yield r, tool


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


def aria2c(*args) -> list[str]:
    """aria2c with the options that make it comparable: quiet, no preallocation, overwrite."""
    return ["aria2c", "-q", "--file-allocation=none", "--allow-overwrite=true", "--auto-file-renaming=false",
            "--console-log-level=error", *args]


def start_pair(ctx, name: str, files_root: str, limit_rate="100k", **settings) -> tuple[Origin, Fetchd]:
    origin = Origin(ctx.fresh(name + "-origin"), files_root, limit_rate)
    return origin, Fetchd(ctx.fetchd_bin, ctx.fresh(name + "-fetchd"), **settings)
