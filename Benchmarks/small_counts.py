#!/usr/bin/env python3
"""Small files through fetchd, counted per file: what each file costs in CPU time,
context switches and syscalls, figures that stay put on a busy machine where wall times do not.

    python3 Benchmarks/small_counts.py [--fetchd .build/release/fetchd] [--files 2000] [--record perf.data]

fetchd with 16 slots fetches `--files` files of 16 KiB from nginx on loopback, submitted in
`POST /downloads/batch` requests of 500 so the client costs little, until the last
`download.completed` webhook. Prints one JSON line: the time to that webhook, fetchd's CPU
time per file (/proc/<pid>/stat) and, per file, what `perf stat` counted on fetchd's threads.
Run two binaries alternately to compare them; each run starts once the disk has forgotten the
files the last one removed (`benchlib/deletions.py`), which otherwise made the next run's file
creations 0.5 ms or more each. `--record FILE` also samples fetchd with
`perf record -g` into FILE meanwhile (read it with `perf report -i FILE --no-children`).
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from benchlib import procs  # noqa: E402
from benchlib.fetchd import Fetchd  # noqa: E402
from benchlib.origin import Origin, make_small_files  # noqa: E402
from benchlib.standalone import file_creation_scratch  # noqa: E402
from benchlib.webhooks import SIGNING_SECRET, WebhookReceiver  # noqa: E402

EVENTS = ["context-switches", "syscalls:sys_enter_fsync", "syscalls:sys_enter_pwrite64", "syscalls:sys_enter_futex",
          "syscalls:sys_enter_connect"]
SIZE, PARALLEL, BATCH = 16 << 10, 16, 500


def main() -> int:
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fetchd", default=os.path.join(repo, ".build/release/fetchd"))
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--record", metavar="FILE", help="also write a perf record -g profile of fetchd to FILE")
    parser.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "fetchd-bench-files"))
    args = parser.parse_args()
    count = args.files
    files = os.path.join(args.cache, "small")
    make_small_files(files, count, SIZE)
    with file_creation_scratch("fetchd-small-counts-", args.cache) as work:
        origin = Origin(os.path.join(work, "origin"), files)
        receiver = WebhookReceiver()
        fetchd = Fetchd(args.fetchd, os.path.join(work, "fetchd"), FETCHD_MAX_TRANSFERS=PARALLEL,
                        FETCHD_MAX_TRANSFERS_PER_HOST=PARALLEL, FETCHD_WEBHOOK_SECRET=SIGNING_SECRET)
        jobs = [{"url": origin.url(f"f{i}.bin"), "destination": f"s/f{i}.bin", "session": "s", "webhookURL": receiver.url}
                for i in range(count)]
        counts_file = os.path.join(work, "perf-stat.txt")
        perf = procs.spawn(["perf", "stat", "-x,", "-e", ",".join(EVENTS), "-p", str(fetchd.pid), "-o", counts_file])
        recorder = args.record and procs.spawn(["perf", "record", "-F", "999", "-g", "-p", str(fetchd.pid), "-o", args.record])
        time.sleep(0.3)
        cpu_before, started = procs.cpu_seconds(fetchd.pid), time.perf_counter()
        for first in range(0, count, BATCH):
            status, body = fetchd.api.request("POST", "/downloads/batch", {"items": jobs[first:first + BATCH]})
            if status != 200:
                raise RuntimeError(f"batch answered {status}: {str(body)[:300]}")
        receiver.wait_for("download.completed", count, 600)
        seconds, cpu = time.perf_counter() - started, procs.cpu_seconds(fetchd.pid) - cpu_before
        for sampler in filter(None, [perf, recorder]):
            sampler.send_signal(signal.SIGINT)
            sampler.wait(60)
        per_file = {}
        with open(counts_file) as f:
            for line in f:
                fields = line.strip().split(",")
                if len(fields) > 2 and fields[0].replace(".", "").isdigit():
                    per_file[fields[2].split(":")[-1]] = round(float(fields[0]) / count, 2)
        completed = fetchd.api.session_counts("s")["completed"]
        if completed != count:
            raise RuntimeError(f"only {completed} of {count} completed")
        fetchd.stop()
        print(json.dumps({"fetchd": args.fetchd, "files": count, "to_last_webhook_s": round(seconds, 3),
                          "cpu_per_file_ms": round(cpu / count * 1000, 3), "per_file": per_file,
                          "load": round(os.getloadavg()[0], 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
