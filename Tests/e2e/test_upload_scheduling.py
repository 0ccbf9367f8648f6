"""Uploads beside downloads: one set of scheduling rules (earliestBeginDate, priorities, the
per-host limit), one session, one event stream, one URL refresh — checked with both kinds of job
at once against nginx (WebDAV PUT, and GET of what it holds) and the test origin."""
import http.client
import json
import os

import pytest

from e2e_support import wait_for
from test_events import EventStream, reached
from test_uploads import DavServer, source

MiB = 1024 * 1024


@pytest.fixture
def dav(tmp_path):
    server = DavServer(tmp_path)
    yield server
    server.stop()


def upload(fd, **fields) -> dict:
    resp = fd.api.post("/uploads", fields)
    assert resp.status == 201, resp
    return resp.json()


def state(fd, kind: str, job_id: str) -> dict:
    return fd.api.get(f"/{kind}s/{job_id}").json()


def test_a_session_of_both_kinds_streams_both_and_finishes_once(fetchd, origin, dav, receiver):
    fd = fetchd(env={"FETCHD_WEBHOOK_URL": receiver.url})
    stream = EventStream(fd)
    try:
        body = os.urandom(2 * MiB)
        source(fd, "out.bin", body)
        sent = upload(fd, url=dav.url("/in/out.bin"), source="out.bin", session="mixed", maxBytesPerSecond=MiB)
        fetched = fd.api.submit({"url": origin.add("/in.bin", body, rate=MiB), "destination": "in.bin", "session": "mixed"})
        wait_for(lambda: reached(stream, sent["id"], "completed") and reached(stream, fetched["id"], "completed"),
                 timeout=30, message="both jobs to complete on the stream")
        kinds = {d["id"]: d["kind"] for _, d in stream.states()}
        assert kinds == {sent["id"]: "upload", fetched["id"]: "download"}
        progress = [json.loads(d) for _, d in stream.of("progress")]
        assert {(p["id"], p["kind"]) for p in progress} == {(sent["id"], "upload"), (fetched["id"], "download")}
        assert all(("bytesSent" in p) == (p["kind"] == "upload") for p in progress)
        [finished] = wait_for(lambda: receiver.events("session.finished"), message="session.finished")
        assert finished.verified and finished.data["session"] == "mixed" and finished.data["counts"]["completed"] == 2
    finally:
        stream.close()
    assert (dav.root / "in" / "out.bin").read_bytes() == body and fd.dest("in.bin").read_bytes() == body
    assert len(receiver.events("session.finished")) == 1


def test_an_expired_upload_url_waits_for_a_new_one(fetchd, dav, receiver):
    fd = fetchd()
    source(fd, "report.csv", b"id,total\n1,42\n")
    job = upload(fd, url=dav.url("/refuses"), source="report.csv", urlRefresh=True, webhookURL=receiver.url)
    [expired] = receiver.wait_event("upload.url_expired", job["id"])
    assert expired.verified and expired.data["kind"] == "upload"
    waiting = state(fd, "upload", job["id"])
    assert waiting["state"] == "queued" and waiting["waitingFor"] == "url"
    assert fd.api.request("PATCH", f"/uploads/{job['id']}", {"url": dav.url("/in/report.csv")}).status == 200
    wait_for(lambda: state(fd, "upload", job["id"])["state"] == "completed", timeout=20, message="the upload to complete")
    assert (dav.root / "in" / "report.csv").read_bytes() == b"id,total\n1,42\n"


def test_begin_dates_priorities_and_the_host_limit_hold_across_kinds(fetchd, dav):
    fd = fetchd(env={"FETCHD_MAX_TRANSFERS_PER_HOST": "1"})
    (dav.root / "in" / "served.bin").write_bytes(os.urandom(MiB))
    source(fd, "slow.bin", os.urandom(2 * MiB))
    for name in ("low.bin", "high.bin", "later.bin"):
        source(fd, name, name.encode())
    slow = upload(fd, url=dav.url("/in/slow.bin"), source="slow.bin", maxBytesPerSecond=MiB)
    wait_for(lambda: state(fd, "upload", slow["id"])["state"] == "running", message="the slow upload to run")
    # The host is busy with an upload: a download from it waits for the host, as an upload does.
    fetched = fd.api.submit({"url": dav.url("/in/served.bin"), "destination": "served.bin", "priority": 0.1})
    low = upload(fd, url=dav.url("/in/low.bin"), source="low.bin", priority=0.2)
    high = upload(fd, url=dav.url("/in/high.bin"), source="high.bin", priority=0.9)
    later = upload(fd, url=dav.url("/in/later.bin"), source="later.bin", priority=1.0,
                   earliestBeginDate="2099-01-01T00:00:00Z")
    assert fd.api.job(fetched["id"])["waitingFor"] == "hostLimit"
    assert state(fd, "upload", low["id"])["waitingFor"] == "hostLimit"
    assert state(fd, "upload", later["id"])["waitingFor"] == "earliestBeginDate"
    fd.api.wait_state(fetched["id"], "completed", timeout=30)
    wait_for(lambda: state(fd, "upload", low["id"])["state"] == "completed", timeout=30, message="the low upload")
    # One at a time on the host, by priority: high, low, then the download.
    order = [r[1] for r in dav.requests()]
    assert order == ["/in/slow.bin", "/in/high.bin", "/in/low.bin", "/in/served.bin"]
    assert state(fd, "upload", later["id"])["state"] == "queued"


def test_an_uploads_own_stream_shows_bytes_sent_and_ends_at_completion(fetchd, dav):
    fd = fetchd()
    body = os.urandom(MiB)
    source(fd, "own.bin", body)
    job = upload(fd, url=dav.url("/in/own.bin"), source="own.bin", maxBytesPerSecond=512 * 1024)
    conn = http.client.HTTPConnection("127.0.0.1", fd.port, timeout=30)
    conn.request("GET", f"/uploads/{job['id']}/events")
    text = conn.getresponse().read().decode()  # the stream ends after the terminal state
    conn.close()
    events = [block for block in text.split("\n\n") if block.startswith("event:")]
    progress = [json.loads(b.split("data: ", 1)[1]) for b in events if b.startswith("event: progress")]
    states = [json.loads(b.split("data: ", 1)[1]) for b in events if b.startswith("event: state")]
    assert progress and all(p["kind"] == "upload" and p["bytesTotal"] == MiB and "bytesReceived" not in p for p in progress)
    assert states[-1]["state"] == "completed" and states[-1]["kind"] == "upload"
    assert fd.api.get(f"/downloads/{job['id']}/events").status == 404

