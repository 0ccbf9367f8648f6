#!/usr/bin/env python3
"""Does SIGTERM drain within FETCHD_SHUTDOWN_TIMEOUT, and does the next start resume?

    python3 Benchmarks/shutdown.py [--fetchd .build/release/fetchd] [--timeouts 2,10] [--transfers 50]

For each timeout, twice — with and without a stalled request — fetchd gets `--transfers` jobs
from a local nginx throttled to 64 KiB/s per connection, all running at once, plus in-flight
HTTP work: 10 event streams on running jobs and 4 clients reading `GET /downloads` back to back;
"stalled" adds a POST that sent its headers and half its body and then nothing (the one thing
that makes fetchd wait out the whole timeout). Then SIGTERM, and:
- the time to exit and the exit code: must be 0 within the timeout plus `--margin` seconds;
- the database after exit: every job `queued` with its bytes kept, and its partial file there;
- the next start: every job resumes from its partial data (the `transfer started` log line has a
  non-zero `resume.offset`) and completes with the file's SHA-256.
Exits 1 if any of these fails.
"""
import argparse
import hashlib
import http.client
import os
import socket
import sqlite3
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from benchlib import procs, sqlite_files  # noqa: E402
from benchlib.fetchd import Fetchd  # noqa: E402
from benchlib.origin import Origin, make_file  # noqa: E402
from benchlib.probe import connections_to  # noqa: E402
from benchlib.standalone import log, scratch  # noqa: E402
from benchlib.table import fmt, markdown  # noqa: E402

RATE = 64 << 10
SIZE = 1 << 20            # 16 s per transfer at RATE: all still running when SIGTERM comes
STREAMS, READERS = 10, 4


class Traffic:
    """The in-flight HTTP work: event streams, back-to-back list reads, optionally a stalled POST.
    Each thread runs until fetchd closes its connection; outcomes are counted by kind."""

    def __init__(self, port: int, stream_ids: list[str], stalled: bool):
        self.port = port
        self.outcomes: dict[str, int] = {}
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._stream, args=(i,), daemon=True) for i in stream_ids]
        self.threads += [threading.Thread(target=self._reader, daemon=True) for _ in range(READERS)]
        if stalled:
            self.threads.append(threading.Thread(target=self._stalled, daemon=True))
        for thread in self.threads:
            thread.start()

    def count(self, outcome: str):
        with self.lock:
            self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1

    def _stream(self, job_id: str):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            conn.request("GET", f"/downloads/{job_id}/events")
            resp = conn.getresponse()
            resp.read()  # until fetchd ends the chunked stream
            self.count("event stream ended cleanly")
        except (OSError, http.client.HTTPException) as error:
            self.count(f"event stream: {type(error).__name__}")

    def _reader(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        while True:
            try:
                conn.request("GET", "/downloads?limit=100")
                resp = conn.getresponse()
                resp.read()
                if resp.status != 200:
                    self.count(f"list read {resp.status}")
                if resp.getheader("Connection", "").lower() == "close":
                    self.count("list reader told Connection: close")
                    return
            except (OSError, http.client.HTTPException) as error:
                self.count(f"list reader: {type(error).__name__}")
                return

    def _stalled(self):
        body = b'{"url": "http://127.0.0.1:1/x", "destination": "stalled"}'
        with socket.create_connection(("127.0.0.1", self.port)) as sock:
            sock.sendall(b"POST /downloads HTTP/1.1\r\nHost: fetchd\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n" % len(body) + body[: len(body) // 2])
            sock.settimeout(120)
            try:
                reply = sock.recv(4096)
                self.count("stalled POST answered" if reply else "stalled POST closed")
            except OSError as error:
                self.count(f"stalled POST: {type(error).__name__}")

    def join(self):
        for thread in self.threads:
            thread.join(30)


def all_running(fetchd: Fetchd, count: int) -> bool:
    running = fetchd.api.get(f"/downloads?state=running&limit={count}")["items"]
    return len(running) == count and all(job["bytesReceived"] > 0 for job in running)


def saved_jobs(data_dir: str) -> dict[str, tuple[str, int]]:
    """id → (state, bytes_received) as fetchd left them in its database."""
    db = sqlite3.connect(f"file:{sqlite_files.path(data_dir)}?mode=ro", uri=True)
    try:
        return {row[0]: (row[1], row[2]) for row in db.execute("SELECT id, state, bytes_received FROM downloads")}
    finally:
        db.close()


def resume_offsets(fetchd: Fetchd) -> dict[str, int]:
    """id → resume.offset of each `transfer started` line logged since the last start."""
    offsets = {}
    with open(fetchd.log_path) as f:
        f.seek(fetchd.log_offset)
        for line in f:
            if " transfer started " in line:
                fields = dict(field.split("=", 1) for field in line.split() if "=" in field)
                offsets.setdefault(fields["download.id"], int(fields["resume.offset"]))
    return offsets


def run_once(args, workdir: str, origin: Origin, timeout: float, stalled: bool, digest: str) -> dict:
    name = f"t{timeout:g}{'-stalled' if stalled else ''}"
    fetchd = Fetchd(args.fetchd, os.path.join(workdir, name), FETCHD_SHUTDOWN_TIMEOUT=f"{timeout:g}s",
                    FETCHD_MAX_TRANSFERS=args.transfers, FETCHD_MAX_TRANSFERS_PER_HOST=args.transfers)
    jobs = fetchd.api.submit_many([{"url": origin.url("slow.bin", slow=True), "destination": f"{name}/{i}"}
                                   for i in range(args.transfers)])
    ids = [job["id"] for job in jobs]
    procs.wait_until(lambda: all_running(fetchd, len(ids)), 60, 0.1, f"{len(ids)} transfers to run")
    traffic = Traffic(fetchd.port, ids[:STREAMS], stalled)
    time.sleep(0.5)  # the streams and the stalled request are open, the readers mid-stream
    started = time.perf_counter()
    code = procs.stop(fetchd.proc, timeout=timeout + 30)
    exit_s = time.perf_counter() - started
    traffic.join()
    saved = saved_jobs(fetchd.data_dir)
    kept = sum(1 for i in ids if saved[i][0] == "queued" and saved[i][1] > 0
               and os.path.getsize(os.path.join(fetchd.data_dir, "partial", i)) > 0)

    fetchd.start()
    procs.wait_until(lambda: fetchd.api.session_counts("default")["completed"] == len(ids), 120, 0.5,
                     "the interrupted jobs to complete")
    offsets = resume_offsets(fetchd)
    resumed = sum(1 for i in ids if offsets.get(i, 0) > 0)
    intact = sum(1 for i in ids if fetchd.api.get(f"/downloads/{i}")["sha256"] == digest)
    fetchd.stop()
    result = {"timeout_s": timeout, "stalled": stalled, "exit_s": exit_s, "exit_code": code, "jobs": len(ids),
              "kept": kept, "resumed": resumed, "intact": intact, "traffic": traffic.outcomes}
    result["ok"] = (code == 0 and exit_s <= timeout + args.margin and kept == resumed == intact == len(ids))
    log(f"{name}: exit {code} after {exit_s:.2f} s; kept {kept}, resumed {resumed}, intact {intact}; {traffic.outcomes}")
    return result


def report(results: list[dict], margin: float) -> bool:
    lines = [["FETCHD_SHUTDOWN_TIMEOUT", "in flight", "SIGTERM to exit", "exit code", "queued with data kept",
              "resumed from offset > 0", "completed, right SHA-256", f"≤ timeout + {margin:g} s, all kept"]]
    for r in results:
        what = f"{r['jobs']} transfers, {STREAMS} streams, {READERS} readers" + (", stalled POST" if r["stalled"] else "")
        lines.append([f"{r['timeout_s']:g} s", what, f"{fmt(r['exit_s'])} s", str(r["exit_code"]),
                      f"{r['kept']}/{r['jobs']}", f"{r['resumed']}/{r['jobs']}", f"{r['intact']}/{r['jobs']}",
                      "yes" if r["ok"] else "**NO**"])
    print(markdown(lines))
    for r in results:
        print(f"{r['timeout_s']:g} s{' stalled' if r['stalled'] else ''}: " +
              ", ".join(f"{k} {n}" for k, n in sorted(r["traffic"].items())))
    return all(r["ok"] for r in results)


def main() -> int:
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fetchd", default=os.environ.get("FETCHD_BIN", os.path.join(repo, ".build/release/fetchd")))
    parser.add_argument("--timeouts", default="2,10", help="FETCHD_SHUTDOWN_TIMEOUT values, seconds, comma-separated")
    parser.add_argument("--transfers", type=int, default=50)
    parser.add_argument("--margin", type=float, default=1.0, help="seconds allowed past the timeout")
    args = parser.parse_args()
    args.fetchd = os.path.abspath(args.fetchd)

    results = []
    with scratch("fetchd-shutdown-") as workdir:
        files = os.path.join(workdir, "files")
        make_file(os.path.join(files, "slow.bin"), SIZE)
        with open(os.path.join(files, "slow.bin"), "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        origin = Origin(os.path.join(workdir, "origin"), files, limit_rate=str(RATE))
        for timeout in (float(t) for t in args.timeouts.split(",")):
            for stalled in (False, True):
                results.append(run_once(args, workdir, origin, timeout, stalled, digest))
                procs.wait_until(lambda: connections_to(origin.port) == 0, 30, 0.1, "the origin's connections to close")
    return 0 if report(results, args.margin) else 1


if __name__ == "__main__":
    sys.exit(main())
