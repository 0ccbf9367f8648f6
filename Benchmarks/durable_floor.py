#!/usr/bin/env python3
"""The floor of a durable small-file queue on this machine, beside curl.

    python3 Benchmarks/durable_floor.py [--files 2000] [--rounds 3]

Builds `floor/floor.c` (C, SQLite, OpenSSL's libcrypto) and runs it alternately with
`curl --parallel --parallel-max 16` fetching the same files of 16 KiB from nginx on loopback. The
floor does, on one thread and without any HTTP, only the durable work a service keeping fetchd's
promises owes each file (see floor.c): the job inserted, claimed and settled in SQLite with its
attempt, webhook event and delivery rows; the file written, hashed, fsynced, linked into place and
its directory synced; an HMAC. Beside it, curl POSTs as many webhooks to a receiver on loopback,
16 at once (`webhooks.post_with_curl`): the least that delivering them costs. The floor runs in
four modes: all of it; without any fsync (`nosync`); the database only (`db`); the files only
(`files`). Each runs once untimed first, then the timed rounds alternate with the order rotating.

curl's whole run is one process fetching and writing every file, with nginx serving it. The
floor's CPU time against curl's says how far below curl's pace a durable queue cannot go: fetchd
must also run the transfers (curl's work), with nginx serving them on the same cores, parse the
POSTs and send the webhooks, so on N cores its wall time is at least (floor CPU + curl CPU + nginx
CPU) / N, even with the client and the webhook receiver costing nothing and every core always busy.
Prints the medians as a table and that bound as a ratio to curl's wall time, then the bound with
curl's CPU for posting the webhooks added, and what one hand-off between two threads costs here
(`floor/wakeup.c`): the floor, on one thread, makes none but its fsyncs' waits; a service whose
parts run on threads of their own pays one at each step a file takes from one to the next.

Files are never deleted between runs, only at the end, and a start within six minutes of that (or
of `make bench`'s end) waits until the disk has forgotten them (`benchlib/deletions.py`): right
after such a removal every tool here took 2-4 × longer to create its files.
"""
import argparse
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from benchlib import floor as durable_floor, procs  # noqa: E402
from benchlib.origin import Origin, make_small_files  # noqa: E402
from benchlib.standalone import file_creation_scratch, log  # noqa: E402
from benchlib.webhooks import WebhookReceiver, post_with_curl  # noqa: E402
from scenarios.common import round_label, with_warm_up  # noqa: E402

SIZE, PARALLEL = 16 << 10, 16
MODES = ["all", "nosync", "db", "files"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "fetchd-bench-files"))
    args = parser.parse_args()
    files = os.path.join(args.cache, "small")
    make_small_files(files, args.files, SIZE)
    wall = {name: [] for name in ["curl", "webhooks"] + MODES}
    cpu = {name: [] for name in wall}
    nginx_cpu = []
    with file_creation_scratch("fetchd-floor-", args.cache) as work:
        origin = Origin(os.path.join(work, "origin"), files)
        receiver = WebhookReceiver()
        floor = durable_floor.build(work)
        handoff = durable_floor.handoff_cost(work)
        for r, name in with_warm_up(list(wall), args.rounds):
            out = os.path.join(work, f"{name}-{r}")
            os.makedirs(out)
            if name == "curl":
                serving = origin.cpu_seconds()
                seconds, cpu_seconds = procs.measured(lambda: procs.run([
                    "curl", "-sS", "--fail", "--parallel", "--parallel-max", str(PARALLEL),
                    "-o", os.path.join(out, "f#1.bin"), origin.url(f"f[0-{args.files - 1}].bin")]))
                if r > 0:
                    nginx_cpu.append(origin.cpu_seconds() - serving)
            elif name == "webhooks":
                seconds, cpu_seconds = post_with_curl(receiver, args.files, out, PARALLEL)
            else:
                seconds, cpu_seconds = durable_floor.run(floor, out, args.files, name)
            if r > 0:
                wall[name].append(seconds)
                cpu[name].append(cpu_seconds)
            log(f"{round_label(r)} {name}: {seconds:.3f} s, {cpu_seconds:.3f} s CPU")
        receiver.stop()
    median = {name: (statistics.median(wall[name]), statistics.median(cpu[name])) for name in wall}
    curl_wall, curl_cpu = median["curl"]
    print(f"\n{args.files} files of 16 KiB, medians of {args.rounds} alternating rounds, nproc {os.cpu_count()}\n")
    print("| run | wall | CPU | CPU per file | CPU / curl's CPU |")
    print("|---|---|---|---|---|")
    for name, (seconds, cpu_seconds) in median.items():
        label = {"curl": "curl --parallel 16 (the whole download)",
                 "webhooks": "curl --parallel 16 posting the webhooks"}.get(name, f"floor, {name}")
        print(f"| {label} | {seconds:.3f} s | {cpu_seconds:.3f} s | {cpu_seconds / args.files * 1e6:.0f} µs | "
              f"{cpu_seconds / curl_cpu:.2f} |")
    nginx = statistics.median(nginx_cpu)
    print(f"| nginx, serving curl's run | | {nginx:.3f} s | {nginx / args.files * 1e6:.0f} µs | {nginx / curl_cpu:.2f} |")
    cores = os.cpu_count() or 1
    least = median["all"][1] + curl_cpu + nginx
    print(f"\nlower bound for a durable queue on {cores} cores: (floor + curl + nginx CPU) / {cores} = {least / cores:.3f} s "
          f"= {least / cores / curl_wall:.2f} × curl's wall time; fetchd's CPU target is <= 1.3 × {least:.3f} s")
    sending = least + median["webhooks"][1]
    print(f"with curl posting the webhooks: (floor + curl + nginx + that CPU) / {cores} = {sending / cores:.3f} s")
    print(f"a hand-off between two sleeping threads (floor/wakeup.c): {handoff['across_cpus_us']:.1f} µs of CPU "
          f"across CPUs, {handoff['same_cpu_us']:.1f} µs on one")
    return 0


if __name__ == "__main__":
    sys.exit(main())
