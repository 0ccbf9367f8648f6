#!/usr/bin/env python3
"""The small-files round with its POSTs and its transfers timed apart.

    python3 Benchmarks/small_phases.py [--fetchd .build/release/fetchd] [--rounds 6] [--files 2000]

Two kinds of round, in turn, each on a fresh fetchd with 16 slots fetching `--files` files of
16 KiB from nginx on loopback, submitted by the small-files scenario's wrk script (16
connections, a POST a job, each job with a webhook):
- mixed, as the scenario runs it: fetchd's CPU from the first POST to the last
  `download.completed` webhook;
- split, the same POSTs with an `earliestBeginDate` `--delay` seconds ahead, so that no transfer
  starts before the last POST: fetchd's CPU for the POSTs, then for the transfers, from just
  before the jobs fall due (their promotion included) to the last webhook.
Prints every round and then the medians: split's sum against mixed says whether the intake and the
transfers make each other dearer, and the transfers' share what a file costs after its POST.
`--record FILE` also samples the split rounds' transfers with `perf record -g --call-graph dwarf`
into FILE-<round> (read them with `perf report -i FILE-<round> --no-children`).
"""
import argparse
import datetime
import os
import signal
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from benchlib import procs, wrk  # noqa: E402
from benchlib.fetchd import Fetchd  # noqa: E402
from benchlib.origin import Origin, make_small_files  # noqa: E402
from benchlib.standalone import file_creation_scratch  # noqa: E402
from benchlib.webhooks import SIGNING_SECRET, WebhookReceiver  # noqa: E402

SIZE, PARALLEL = 16 << 10, 16
# The split's transfers are measured from this long before the jobs fall due: the CPU of an
# idle fetchd in that margin is noise, and no job may start before it.
MARGIN = 0.2


def main() -> int:
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fetchd", default=os.path.join(repo, ".build/release/fetchd"))
    parser.add_argument("--rounds", type=int, default=6, help="rounds of each kind (default 6)")
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--delay", type=float, default=2.5, help="seconds from the first POST to the jobs' earliestBeginDate")
    parser.add_argument("--record", metavar="FILE", help="also sample the split rounds' transfers with perf into FILE-<round>")
    parser.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "fetchd-bench-files"))
    args = parser.parse_args()
    files = os.path.join(args.cache, "small")
    make_small_files(files, args.files, SIZE)
    rounds = {"mixed": [], "split": []}
    with file_creation_scratch("fetchd-small-phases-", args.cache) as work:
        origin = Origin(os.path.join(work, "origin"), files)
        receiver = WebhookReceiver()
        try:
            for number in range(args.rounds):
                # In turn, and each kind first every other round, so neither gains from the hour.
                for kind in (["mixed", "split"] if number % 2 == 0 else ["split", "mixed"]):
                    fetchd = Fetchd(args.fetchd, os.path.join(work, f"{kind}-{number}"), FETCHD_MAX_TRANSFERS=PARALLEL,
                                    FETCHD_MAX_TRANSFERS_PER_HOST=PARALLEL, FETCHD_WEBHOOK_SECRET=SIGNING_SECRET)
                    try:
                        if kind == "split":
                            record = args.record and f"{args.record}-{number}"
                            posts, transfers = split(fetchd, origin, receiver, f"{kind}{number}", args, record)
                        else:
                            posts, transfers = mixed(fetchd, origin, receiver, f"{kind}{number}", args)
                    finally:
                        fetchd.stop()
                    rounds[kind].append((posts, transfers))
                    shown = f"POSTs {posts:.3f} s, transfers {transfers:.3f} s, " if kind == "split" else ""
                    print(f"round {number} {kind}: {shown}CPU {posts + transfers:.3f} s", flush=True)
        finally:
            receiver.stop()
            origin.stop()
    median = lambda kind, pick: statistics.median(pick(r) for r in rounds[kind])  # noqa: E731
    split_posts, split_transfers = median("split", lambda r: r[0]), median("split", lambda r: r[1])
    print(f"medians of {args.rounds}: mixed {median('mixed', sum):.3f} s of CPU; split {median('split', sum):.3f} s: "
          f"POSTs {split_posts:.3f} s ({split_posts / args.files * 1e6:.0f} µs each), "
          f"transfers {split_transfers:.3f} s ({split_transfers / args.files * 1e6:.0f} µs a file)")
    return 0


def post(fetchd, origin, receiver, session, files, begin=None):
    script_args = [origin.url("f"), files, session, receiver.url] + ([begin] if begin else [])
    return wrk.start(fetchd.base + "/downloads", PARALLEL, threads=1, script=wrk.lua("post_small_files.lua"),
                     script_args=script_args)


def mixed(fetchd, origin, receiver, session, args):
    """(0, CPU from the first POST to the last webhook)."""
    before = receiver.counts().get("download.completed", 0)
    cpu = procs.cpu_seconds(fetchd.pid)
    client = post(fetchd, origin, receiver, session, args.files)
    receiver.wait_for("download.completed", before + args.files, 600)
    wrk.finish(client)
    return 0.0, procs.cpu_seconds(fetchd.pid) - cpu


def split(fetchd, origin, receiver, session, args, record=None):
    """(CPU for the POSTs, CPU for the transfers after them); `record`: a perf file for the transfers."""
    before = receiver.counts().get("download.completed", 0)
    started = time.monotonic()
    due = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=args.delay)
    cpu = procs.cpu_seconds(fetchd.pid)
    client = post(fetchd, origin, receiver, session, args.files, due.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z")
    procs.wait_until(lambda: sum(fetchd.api.session_counts(session).values()) >= args.files, 600, 0.005, "the POSTs")
    posts = procs.cpu_seconds(fetchd.pid) - cpu
    wrk.finish(client)
    transfers_from = started + args.delay - MARGIN
    if time.monotonic() > transfers_from:
        raise RuntimeError(f"the POSTs took longer than --delay {args.delay} s less {MARGIN} s: give a longer one")
    time.sleep(transfers_from - time.monotonic())
    if fetchd.api.session_counts(session).get("queued", 0) != args.files:
        raise RuntimeError("a job started before its earliestBeginDate")
    # Sampling slows fetchd: the CPU figures of a recorded round are not comparable to the others.
    recorder = record and procs.spawn(["perf", "record", "-F", "1999", "-g", "--call-graph", "dwarf,16384",
                                       "-p", str(fetchd.pid), "-o", record])
    cpu = procs.cpu_seconds(fetchd.pid)
    receiver.wait_for("download.completed", before + args.files, 600)
    transfers = procs.cpu_seconds(fetchd.pid) - cpu
    if recorder:
        recorder.send_signal(signal.SIGINT)
        recorder.wait(120)
    return posts, transfers


if __name__ == "__main__":
    sys.exit(main())
