"""Outages that pass: attempts that cannot reach the origin at all do not use up
FETCHD_MAX_ATTEMPTS and fail the job only after FETCHD_NO_PROGRESS_TIMEOUT without a byte;
answers (5xx) still count. A download root that fills during a transfer sends the job back to
the queue (`waitingFor: diskSpace`) with its partial data, and it completes once space is free."""

from __future__ import annotations

import os
import subprocess

import pytest

from e2e_support import Fault, Origin, sha256_hex, small_volume, wait_for

QUICK_RETRIES = {"FETCHD_MAX_ATTEMPTS": "2", "FETCHD_RETRY_BASE_DELAY": "50ms", "FETCHD_RETRY_MAX_DELAY": "100ms"}


def test_a_refusing_origin_outlasts_the_attempt_budget_and_the_job_completes_when_it_returns(fetchd):
    origin = Origin()
    origin.start()
    url = origin.add("/back.bin", os.urandom(200_000))
    body = origin.resources["/back.bin"].body
    origin.stop()  # the port now refuses connections
    try:
        fd = fetchd(env=QUICK_RETRIES)
        job = fd.api.submit({"url": url, "destination": "back.bin"})

        waiting = wait_for(lambda: (j := fd.api.job(job["id"]))["attempts"] >= 6 and j, timeout=20,
                           message="more attempts than FETCHD_MAX_ATTEMPTS allows")
        assert waiting["state"] in ("queued", "running"), waiting
        assert fd.api.job(job["id"])["state"] != "failed"

        origin.restart()
        done = fd.api.wait_state(job["id"], "completed")
        assert done["sha256"] == sha256_hex(body)
        assert fd.dest("back.bin").read_bytes() == body
    finally:
        origin.stop()


def test_answers_still_count_against_the_attempt_budget(fetchd, origin):
    url = origin.add("/down", b"x", faults=[Fault(status=503) for _ in range(5)])
    fd = fetchd(env=QUICK_RETRIES)
    job = fd.api.submit({"url": url, "destination": "down.bin"})
    failed = fd.api.wait_state(job["id"], "failed")
    assert failed["attempts"] == 2
    assert failed["error"]["code"] == "http_status"


def test_a_refusing_origin_fails_the_job_after_the_no_progress_timeout(fetchd):
    origin = Origin()
    origin.start()
    url = origin.add("/never.bin", b"never")
    origin.stop()
    fd = fetchd(env={**QUICK_RETRIES, "FETCHD_NO_PROGRESS_TIMEOUT": "1s"})
    job = fd.api.submit({"url": url, "destination": "never.bin"})
    failed = fd.api.wait_state(job["id"], "failed")
    assert failed["error"]["code"] == "network"
    assert failed["attempts"] > 2, "outages must not stop at FETCHD_MAX_ATTEMPTS"


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_a_download_root_that_fills_mid_transfer_makes_the_job_wait_and_complete_when_space_is_free(fetchd, origin):
    body = os.urandom(6_000_000)
    url = origin.add("/large.bin", body, rate=3_000_000)
    fd = fetchd(start=False, env={"FETCHD_DISK_RESERVE": "0"})
    with small_volume(fd, "8m", root_only=True) as volume:
        fd.start()
        filler = volume / "filler"
        # Leave about 3 MB free: the transfer fills it half way.
        subprocess.run(["fallocate", "-l", "5M", str(filler)], check=True)
        job = fd.api.submit({"url": url, "destination": "large.bin"})

        waiting = wait_for(lambda: (j := fd.api.job(job["id"]))["waitingFor"] == "diskSpace" and j, timeout=20,
                           message="the job to wait for disk space")
        assert waiting["state"] == "queued"
        assert waiting["bytesReceived"] > 0, "the partial data is kept"
        kept = waiting["bytesReceived"]

        filler.unlink()
        done = fd.api.wait_state(job["id"], "completed", timeout=30)
        assert done["sha256"] == sha256_hex(body)
        assert fd.dest("large.bin").read_bytes() == body
        resumed = [r for r in origin.requests_for("/large.bin") if "Range" in r.headers or "range" in r.headers]
        assert resumed, "the job resumed from its partial data"
        assert done["error"] is None and kept > 0
