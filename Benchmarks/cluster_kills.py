#!/usr/bin/env python3
"""Kill -9 a random node of three, again and again, during a workload: no job lost, none completed twice.

    python3 Benchmarks/cluster_kills.py [--fetchd .build/release/fetchd] [--cycles 20] [--jobs 900]

Three nodes on one PostgreSQL of its own share a download root; `--jobs` files of 256 KiB are
served by nginx at 128 KiB/s per connection over 30 ports (2 s each), 10 transfers per node. Every
1.5 s a random node is killed with SIGKILL and started again on its data directory, `--cycles`
times. Then it waits for every job and counts: jobs lost (not completed, or completed with a wrong
SHA-256 or file), and jobs completed twice (more than one `completed` state in the event log).
"""
import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cluster as bench  # noqa: E402
from benchlib.origin import make_small_files  # noqa: E402
from benchlib.standalone import log, scratch  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fetchd", default=".build/release/fetchd")
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=900)
    args = parser.parse_args()
    with scratch("fetchd-cluster-kills-") as workdir:
        files = os.path.join(os.environ.get("TMPDIR", "/tmp"), "fetchd-bench-files", "cluster")
        make_small_files(files, 30, 256 * 1024)
        digests = {f"f{i}.bin": hashlib.sha256(open(os.path.join(files, f"f{i}.bin"), "rb").read()).hexdigest()
                   for i in range(30)}
        ports = bench.origin(workdir, files)
        pg = bench.Postgres(workdir)
        try:
            database = pg.schema()
            nodes = bench.cluster(os.path.abspath(args.fetchd), workdir, database, 3, FETCHD_MAX_TRANSFERS=10,
                                  FETCHD_MAX_TRANSFERS_PER_HOST=4)
            work = [{"url": f"http://127.0.0.1:{ports[i % 30]}/slow/f{i % 30}.bin", "destination": f"k/{i}.bin",
                     "session": "bench"} for i in range(args.jobs)]
            ids = {}
            for start in range(0, len(work), 500):
                status, body = nodes[0].api.request("POST", "/downloads/batch", {"items": work[start:start + 500]})
                assert status == 200, body
                for job, item in zip(work[start:start + 500], body["items"]):
                    ids[item["download"]["id"]] = job
            for cycle in range(args.cycles):
                time.sleep(1.5)
                victim = random.choice(nodes)
                victim.kill()
                victim.start()
                log(f"cycle {cycle + 1}: killed and restarted {victim.settings['FETCHD_NODE_NAME']}, "
                    f"{nodes[0].api.session_counts('bench')}")
            deadline = time.time() + 600
            while nodes[0].api.session_counts("bench").get("completed", 0) + \
                    nodes[0].api.session_counts("bench").get("failed", 0) < len(ids) and time.time() < deadline:
                time.sleep(0.5)
            root = nodes[0].settings["FETCHD_DOWNLOAD_ROOT"]
            lost = []
            for job_id, job in ids.items():
                done = nodes[0].api.get(f"/downloads/{job_id}")
                name = job["url"].rsplit("/", 1)[1]
                path = os.path.join(root, job["destination"])
                on_disk = os.path.exists(path) and hashlib.sha256(open(path, "rb").read()).hexdigest()
                if done["state"] != "completed" or done["sha256"] != digests[name] or on_disk != digests[name]:
                    lost.append((job_id, done["state"], done.get("error")))
            twice = subprocess.run(["psql", "-X", "-A", "-t", database, "-c",
                                    "SELECT COUNT(*) FROM (SELECT download_id FROM event_log "
                                    "WHERE convert_from(payload, 'UTF8')::json->>'state' = 'completed' "
                                    "GROUP BY download_id HAVING COUNT(*) > 1) AS t"],
                                   capture_output=True, text=True, check=True).stdout.strip()
            print(json.dumps({"cycles": args.cycles, "jobs": len(ids), "lost": len(lost), "completed_twice": int(twice),
                              "examples": lost[:5]}))
        finally:
            pg.stop()
    return 0 if not lost and twice == "0" else 1


if __name__ == "__main__":
    sys.exit(main())
