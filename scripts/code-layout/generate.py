#!/usr/bin/env python3
"""Writes Sources/fetchd/fetchd.order: the functions the quick bench runs in fetchd, the most
called first, as the linker's section names. Release builds put those of fetchd's own modules
together in that order (Package.swift, `codeLayout`; the dependencies' code has no section per
function, so their names match nothing), so the pages of code a running fetchd touches are few.

    sudo python3 scripts/code-layout/generate.py        (or: make code-layout)

Counts every call exactly, in the optimized build itself: one uprobe on the first instruction of
each of the release binary's functions (tracefs, so root), the bench's quick scenarios run, then
each probe's hit count read back. Sampling (perf) misses the small functions that run rarely, and
each one missed keeps a 64 KiB window of code resident; an instrumented build (-profile-generate)
inlines differently, so most of its names are not the optimized build's. Registering ~16,000
probes takes half a minute and removing them about twelve minutes (the kernel waits for a grace
period for each); the whole run about eighteen.
"""
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ORDER = ROOT / "Sources/fetchd/fetchd.order"
TRACING = Path("/sys/kernel/tracing")
GROUP = "fetchd_layout"
SCENARIOS = "concurrency,small,sessions,intake,batch,single,https,segmented,cap,queue"


def functions(binary: Path) -> list[tuple[int, str]]:
    """(file offset, name) of each function in the binary's .text."""
    sections = subprocess.run(["readelf", "-S", "--wide", str(binary)], capture_output=True, text=True, check=True).stdout
    text = next(line.split("]", 1)[1].split() for line in sections.splitlines() if "] .text " in line)
    start, offset, size = int(text[2], 16), int(text[3], 16), int(text[4], 16)
    symbols = subprocess.run(["nm", "-S", "--defined-only", str(binary)], capture_output=True, text=True, check=True).stdout
    found = {}
    for line in symbols.splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[2] in "tTwW":
            address, length = int(fields[0], 16), int(fields[1], 16)
            if start <= address < start + size and length > 0:
                found.setdefault(address - start + offset, fields[3])
    return sorted(found.items())


def write_events(lines) -> int:
    """Writes each line to uprobe_events; returns how many the kernel took."""
    taken = 0
    descriptor = os.open(TRACING / "uprobe_events", os.O_WRONLY | os.O_APPEND)
    try:
        for line in lines:
            try:
                os.write(descriptor, f"{line}\n".encode())
                taken += 1
            except OSError:
                pass  # a probe on an instruction the kernel cannot step over
    finally:
        os.close(descriptor)
    return taken


def write_probes(binary: Path, probes: list[tuple[int, str]]) -> int:
    """Registers one probe per function; returns how many the kernel took."""
    return write_events(f"p:{GROUP}/f{number} {binary}:{offset:#x}" for number, (offset, _) in enumerate(probes))


def hits() -> dict[int, int]:
    """Probe number → calls, for the probes that were hit."""
    counted = {}
    for line in (TRACING / "uprobe_profile").read_text().splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[1].startswith("f") and int(fields[2]) > 0:
            counted[int(fields[1][1:])] = int(fields[2])
    return counted


def remove_probes():
    """Every probe of the group in one write (one `-:GROUP/EVENT` each takes seconds)."""
    (TRACING / f"events/{GROUP}/enable").write_text("0")
    write_events([f"-:{GROUP}/"])


def main() -> int:
    if os.geteuid() != 0:
        print("generate.py places uprobes through tracefs: run it as root", file=sys.stderr)
        return 2
    subprocess.run(["swift", "build", "-c", "release", "--product", "fetchd"], cwd=ROOT, check=True)
    built = Path(subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=ROOT, capture_output=True,
                                text=True, check=True).stdout.strip()) / "fetchd"
    with tempfile.TemporaryDirectory() as work:
        # A copy of its own: probes belong to a file, and the build may replace this one meanwhile.
        binary = Path(work) / "fetchd"
        shutil.copy2(built, binary)
        probes = functions(binary)
        print(f"{write_probes(binary, probes)} of {len(probes)} functions probed", file=sys.stderr)
        tracing_on = (TRACING / "tracing_on").read_text().strip()
        try:
            (TRACING / "tracing_on").write_text("0")  # counted without writing each call to the trace
            (TRACING / f"events/{GROUP}/enable").write_text("1")
            subprocess.run([sys.executable, "Benchmarks/run.py", "--quick", "--only", SCENARIOS, "--rounds", "1",
                            "--fetchd", str(binary)], cwd=ROOT, check=True)
            counted = hits()
        finally:
            print("removing the probes (minutes)", file=sys.stderr)
            remove_probes()
            (TRACING / "tracing_on").write_text(tracing_on)
    ran = sorted(counted.items(), key=lambda item: (-item[1], probes[item[0]][1]))
    ORDER.write_text("".join(f".text.{probes[number][1]}\n" for number, _ in ran))
    print(f"{len(ran)} functions ran; {ORDER.relative_to(ROOT)} written", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
