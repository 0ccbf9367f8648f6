"""Storage faults, the database part (API.md, "Storage faults"): the disk under the
database fills up while jobs run and wait. Writes are refused with 503 and Retry-After, reads
keep answering, nothing accepted is lost, and fetchd recovers by itself once space is free."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from e2e_support import sha256_hex, small_volume, wait_for

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs for the database needs root")

CRASH_SIGNS = ("Fatal error", "Stack dump", "Backtrace", "backtrace", "Assertion failed", "Precondition failed",
               "Segmentation fault", "SIGBUS", "SIGSEGV")


def fill(directory: Path) -> Path:
    """Writes `directory/filler` until the file system has not one byte left (ENOSPC on a
    one-byte write); calling it again takes whatever was freed meanwhile."""
    path = directory / "filler"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for size in (1 << 20, 1 << 12, 1):
            block = b"\0" * size
            while True:
                try:
                    os.write(fd, block)
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
                    break
    finally:
        os.close(fd)
    return path


def test_a_full_database_disk_refuses_writes_with_503_keeps_reads_and_loses_nothing(fetchd, origin, receiver):
    # Only the database goes on the small volume; downloads and their staging stay on the roomy
    # disk (staging must share the download root's file system).
    fd = fetchd(env={"FETCHD_MAX_TRANSFERS": "2"}, start=False)
    fd.extra_env["FETCHD_STAGING_DIR"] = str(fd.root / ".fetchd-partial")
    with small_volume(fd, "4m", data_only=True) as volume:
        fd.start()
        api = fd.api

        bodies: dict[str, bytes] = {}  # job id -> what must end up at its destination
        destinations: dict[str, str] = {}

        def accept(path: str, body: bytes, **extra) -> dict:
            job = api.submit({"url": origin.add(path, body, rate=extra.pop("rate", None)),
                              "destination": f"files{path}", **extra})
            bodies[job["id"]], destinations[job["id"]] = body, f"files{path}"
            return job

        # Two transfers held back by a slow origin, with a webhook each (so their settlement is a
        # bigger transaction than any POST), and three jobs queued behind them.
        running = [accept(f"/slow{i}.bin", os.urandom(1_000_000), rate=50_000, webhookURL=receiver.url)
                   for i in range(2)]
        queued = [accept(f"/queued{i}.bin", os.urandom(20_000)) for i in range(3)]
        for job in running:
            wait_for(lambda: api.job(job["id"])["bytesReceived"] > 0, message=f"{job['id']} to receive bytes")
        assert {api.job(j["id"])["state"] for j in queued} == {"queued"}

        # Fill the volume to the last byte. SQLite may still have room in its write-ahead log,
        # so keep submitting (each accepted job must survive too) until one is refused.
        filler = fill(volume)
        refused = None
        for n in range(500):
            resp = api.post("/downloads", {"url": origin.add(f"/late{n}.bin", b"late %d" % n),
                                           "destination": f"files/late{n}.bin"})
            if resp.status == 201:
                bodies[resp.json()["id"]], destinations[resp.json()["id"]] = b"late %d" % n, f"files/late{n}.bin"
                continue
            refused = resp
            break
        assert refused is not None, "the database kept accepting jobs on a full disk"

        # Writes are refused honestly: 503 with Retry-After, a problem document, never 500 or 404.
        assert refused.status == 503, refused
        assert refused.header("Retry-After"), refused
        assert refused.content_type == "application/problem+json", refused
        again = api.post("/downloads", {"url": origin.add("/refused.bin", b"x"), "destination": "files/refused.bin"})
        assert again.status == 503 and again.header("Retry-After"), again

        # Reads keep answering, with every job accepted so far.
        for job_id in bodies:
            assert api.get(f"/downloads/{job_id}").status == 200
            assert api.get(f"/downloads/{job_id}/attempts").status == 200
        assert {item["id"] for item in api.list_all()} == set(bodies)
        assert api.get("/sessions/default").status == 200
        assert api.get("/metrics").status == 200

        # A pause needs a write: refused with 503, or done if the log still had room for it, but
        # never an answer that claims the job does not exist or cannot be paused.
        paused = api.post(f"/downloads/{queued[0]['id']}/pause")
        assert paused.status in (200, 503), paused
        if paused.status == 503:
            assert paused.header("Retry-After"), paused

        # The slow transfers finish now, while the disk is still full: their files are placed,
        # but their settlement cannot be committed, so they are not `completed` yet.
        for i in range(len(running)):
            origin.resources[f"/slow{i}.bin"].rate = None
        for job in running:
            dest = fd.dest(destinations[job["id"]])
            wait_for(lambda: dest.is_file() and dest.stat().st_size == len(bodies[job["id"]]),
                     message=f"{dest} to be placed")
        for job in running:
            still = api.job(job["id"])
            assert still["state"] == "running", f"settled on a full disk: {still}"
        assert fd.running

        # Space comes back: fetchd goes on by itself, no restart.
        filler.unlink()
        after = api.submit({"url": origin.add("/after.bin", b"after the disk was freed"), "destination": "files/after.bin"})
        bodies[after["id"]], destinations[after["id"]] = b"after the disk was freed", "files/after.bin"
        if paused.status == 200:
            assert api.post(f"/downloads/{queued[0]['id']}/resume").status == 200

        for job_id, body in bodies.items():
            done = api.wait_state(job_id, "completed", timeout=15)
            assert done["sha256"] == sha256_hex(body)
            assert fd.dest(destinations[job_id]).read_bytes() == body
        for job in running:
            delivery = receiver.wait_event("download.completed", job["id"])[-1]
            assert delivery.verified and delivery.data["sha256"] == sha256_hex(bodies[job["id"]])

        assert fd.running, "fetchd died"
        log = fd.log_text(max_lines=100_000)
        assert not [sign for sign in CRASH_SIGNS if sign in log], log
        assert fd.stop() == 0
