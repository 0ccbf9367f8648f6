#!/usr/bin/env python3
"""How soon after its earliestBeginDate does a job start? (target: p99 ≤ 100 ms)

    python3 Benchmarks/start_latency.py [--fetchd .build/release/fetchd] [--jobs 50] [--spread 5]

Submits `--jobs` jobs whose dates are spread over `--spread` seconds, starting two seconds from
now, and reads each job's start from fetchd's own `transfer started` log line (millisecond
timestamps), so the figure is fetchd's scheduling delay alone, not the origin's. Prints the
percentiles of start − date, and how many started early (must be none).
"""
import argparse
import os
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from benchlib.fetchd import Fetchd  # noqa: E402
from benchlib.times import parse_rfc3339, rfc3339  # noqa: E402


class TinyOrigin(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


def logged_starts(log_path: str) -> dict[str, int]:
    """Job id → the millisecond its first `transfer started` line was logged."""
    starts = {}
    with open(log_path) as log:
        for line in log:
            fields = line.split()
            if len(fields) > 3 and fields[2:4] == ["transfer", "started"]:
                job_id = next(f.split("=", 1)[1] for f in fields if f.startswith("download.id="))
                starts.setdefault(job_id, parse_rfc3339(fields[0]))
    return starts


def percentile(values: list[int], p: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fetchd", default=".build/release/fetchd")
    parser.add_argument("--jobs", type=int, default=50)
    parser.add_argument("--spread", type=float, default=5.0)
    args = parser.parse_args()

    origin = ThreadingHTTPServer(("127.0.0.1", 0), TinyOrigin)
    threading.Thread(target=origin.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{origin.server_address[1]}/item"
    with tempfile.TemporaryDirectory() as workdir:
        fetchd = Fetchd(args.fetchd, workdir, FETCHD_MAX_TRANSFERS=args.jobs, FETCHD_MAX_TRANSFERS_PER_HOST=args.jobs)
        try:
            first = int(time.time() * 1000) + 2000
            dates = {}
            for i in range(args.jobs):
                date = first + int(i * args.spread * 1000 / args.jobs)
                job = fetchd.api.submit({"url": f"{url}?n={i}", "destination": f"latency/{i}", "earliestBeginDate": rfc3339(date)})
                dates[job["id"]] = date
            for job_id in dates:
                fetchd.api.wait_terminal(job_id)
            starts = logged_starts(fetchd.log_path)
        finally:
            fetchd.stop()
    origin.shutdown()

    delays = [starts[job_id] - date for job_id, date in dates.items()]
    early = sum(delay < 0 for delay in delays)
    print(f"start latency after earliestBeginDate over {len(delays)} jobs (ms): "
          f"p50 {percentile(delays, 50)}  p90 {percentile(delays, 90)}  p99 {percentile(delays, 99)}  "
          f"max {max(delays)}  started early: {early}")
    print(f"target p99 ≤ 100 ms: {'met' if percentile(delays, 99) <= 100 and early == 0 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
