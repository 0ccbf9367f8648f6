"""Process lifecycle: health endpoints, SIGTERM, restarts that keep scheduled work."""

from __future__ import annotations

import math
import os
import signal
import socket
import time

import pytest

from e2e_support import parse_rfc3339, rfc3339, sha256_hex, wait_for


def test_healthz_and_readyz_are_200(fetchd):
    fd = fetchd()
    assert fd.api.get("/healthz").status == 200
    assert fd.api.get("/readyz").status == 200


# How soon fetchd exits depends on the machine's load, so no test asserts it. With an hour's
# FETCHD_SHUTDOWN_TIMEOUT, waiting it out instead of exiting at once would show as a hang,
# which the minute allowed to stop() turns into a failure.
PROMPT_EXIT_GUARD = 60


def test_sigterm_exits_0_at_once_when_idle(fetchd):
    fd = fetchd(env={"FETCHD_SHUTDOWN_TIMEOUT": "1h"})
    assert fd.stop(signal.SIGTERM, timeout=PROMPT_EXIT_GUARD) == 0


def test_sigterm_during_a_transfer_exits_0_at_once_and_the_job_resumes(fetchd, origin):
    fd = fetchd(env={"FETCHD_SHUTDOWN_TIMEOUT": "1h"})
    body = os.urandom(1_000_000)
    url = origin.add("/term.bin", body, rate=100_000)
    job = fd.api.submit({"url": url, "destination": "term.bin"})
    wait_for(lambda: fd.api.job(job["id"])["bytesReceived"] > 0, timeout=15, message="bytes to arrive")

    assert fd.stop(signal.SIGTERM, timeout=PROMPT_EXIT_GUARD) == 0

    origin.resources["/term.bin"].rate = None
    fd.start()
    done = fd.api.wait_state(job["id"], "completed", timeout=30)
    assert fd.dest("term.bin").read_bytes() == body
    assert done["sha256"] == sha256_hex(body)
    # The transfer was stopped, not waited for: the next start resumed it.
    resumed = origin.requests_for("/term.bin")[-1]
    assert resumed.headers.get("range", "bytes=0-") != "bytes=0-"


def test_sigterm_waits_for_an_unfinished_request_no_longer_than_the_shutdown_timeout(fetchd, origin):
    """FETCHD_SHUTDOWN_TIMEOUT bounds the drain: a request whose body never completes is waited
    for until then and no longer, and the transfer stopped meanwhile resumes on the next start."""
    timeout = 2.0
    fd = fetchd(env={"FETCHD_SHUTDOWN_TIMEOUT": f"{timeout:g}s"})
    body = os.urandom(1_000_000)
    url = origin.add("/drain.bin", body, rate=100_000)
    job = fd.api.submit({"url": url, "destination": "drain.bin"})
    # Headers and the start of a body, then nothing: in flight until the server gives up on it.
    stalled = socket.create_connection((fd.host, fd.port))
    stalled.sendall(b"POST /downloads HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    b"Content-Length: 100\r\n\r\n{\"url\": ")
    wait_for(lambda: fd.api.job(job["id"])["bytesReceived"] > 0, timeout=15, message="bytes to arrive")

    started = time.monotonic()
    assert fd.stop(signal.SIGTERM, timeout=PROMPT_EXIT_GUARD) == 0
    elapsed = time.monotonic() - started
    stalled.close()
    assert elapsed >= timeout - 0.5, f"exit after {elapsed:.2f} s: the unfinished request was not waited for"
    # The shutdown timeout, not the request (whose body never completes) or its 30 s body
    # timeout, ended the wait; how soon after it fetchd exited depends on the load.
    assert "HTTP shutdown timed out" in fd.log_text(), "the drain did not end at FETCHD_SHUTDOWN_TIMEOUT"

    origin.resources["/drain.bin"].rate = None
    fd.start()
    done = fd.api.wait_state(job["id"], "completed", timeout=30)
    assert done["sha256"] == sha256_hex(body)
    assert fd.dest("drain.bin").read_bytes() == body


def test_sigint_exits_0(fetchd):
    fd = fetchd()
    assert fd.stop(signal.SIGINT, timeout=5) == 0


@pytest.mark.parametrize("sig,exit_code", [(signal.SIGTERM, 0), (signal.SIGKILL, -signal.SIGKILL)],
                         ids=["sigterm", "sigkill"])
def test_earliest_begin_date_survives_a_restart_and_no_request_comes_before_it(fetchd, origin, sig, exit_code):
    fd = fetchd()
    body = os.urandom(20_000)
    url = origin.add("/scheduled.bin", body)
    begin = math.ceil(time.time()) + 3
    job = fd.api.submit({"url": url, "destination": "scheduled.bin", "earliestBeginDate": rfc3339(begin)})
    assert job["state"] == "queued"
    assert job["waitingFor"] == "earliestBeginDate"
    assert parse_rfc3339(job["earliestBeginDate"]) == begin

    assert fd.stop(sig) == exit_code
    fd.start()
    # The date survived the restart (however long the restart took on a loaded machine).
    assert parse_rfc3339(fd.api.job(job["id"])["earliestBeginDate"]) == begin

    done = fd.api.wait_state(job["id"], "completed", timeout=20)

    requests = origin.requests_for("/scheduled.bin")
    assert requests, "the origin never saw the download"
    early = [r.time - begin for r in requests if r.time < begin]
    assert not early, f"origin saw requests before earliestBeginDate (seconds early: {early})"
    assert parse_rfc3339(done["startedAt"]) >= begin
    assert fd.dest("scheduled.bin").read_bytes() == body
