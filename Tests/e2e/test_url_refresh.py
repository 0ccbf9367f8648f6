"""URL refresh: a job with urlRefresh whose origin refuses an expired link waits for a new URL
(waitingFor: url, signed download.url_expired webhook), goes on from its partial data with Range
once a PATCH brings one, and fails with url_expired when none comes in time."""

from __future__ import annotations

import os

from e2e_support import Fault, sha256_hex


def patch(fd, job_id: str, body: dict):
    return fd.api.request("PATCH", f"/downloads/{job_id}", body, content_type="application/merge-patch+json")


def test_an_expired_link_waits_for_a_new_url_and_resumes_from_its_data(fetchd, origin, receiver):
    fd = fetchd()
    body = os.urandom(300_000)
    signed = origin.add("/signed.bin", body, faults=[Fault(reset_after=100_000), Fault(status=403)])
    fresh = origin.add("/fresh.bin", body, etag=origin.resources["/signed.bin"].etag)
    job = fd.api.submit({"url": signed, "destination": "refresh.bin", "urlRefresh": True, "webhookURL": receiver.url})
    assert job["urlRefresh"] is True

    [expired] = receiver.wait_event("download.url_expired", job["id"])
    assert expired.verified, expired.verify_error
    assert expired.data["state"] == "queued" and expired.data["waitingFor"] == "url"
    waiting = fd.api.job(job["id"])
    assert (waiting["state"], waiting["waitingFor"], waiting["httpStatus"]) == ("queued", "url", 403)
    assert waiting["bytesReceived"] == 100_000 and fd.partial_path(job["id"]).stat().st_size == 100_000

    assert patch(fd, job["id"], {"url": fresh}).status == 200
    done = fd.api.wait_state(job["id"], "completed")
    assert done["sha256"] == sha256_hex(body) and fd.dest("refresh.bin").read_bytes() == body
    [request] = origin.requests_for("/fresh.bin")
    assert request.headers.get("range") == "bytes=100000-"
    assert request.headers.get("if-range") == origin.resources["/fresh.bin"].etag
    assert receiver.wait_event("download.completed", job["id"])[0].verified


def test_without_a_new_url_in_time_the_job_fails_with_url_expired(fetchd, origin, receiver):
    fd = fetchd(env={"FETCHD_URL_REFRESH_TIMEOUT": "1s"})
    url = origin.add("/gone.bin", os.urandom(200_000), faults=[Fault(reset_after=50_000), Fault(status=410)])
    job = fd.api.submit({"url": url, "destination": "gone.bin", "urlRefresh": True, "webhookURL": receiver.url})
    receiver.wait_event("download.url_expired", job["id"])
    failed = fd.api.wait_state(job["id"], "failed")
    assert failed["error"]["code"] == "url_expired", failed
    assert failed["bytesReceived"] == 50_000, "an expired link keeps its data for a retry"
    [event] = receiver.wait_event("download.failed", job["id"])
    assert event.verified and event.data["error"]["code"] == "url_expired"


def test_without_url_refresh_a_403_fails_at_once(fetchd, origin):
    fd = fetchd()
    url = origin.add("/forbidden.bin", b"x", status=403)
    job = fd.api.submit({"url": url, "destination": "forbidden.bin"})
    failed = fd.api.wait_state(job["id"], "failed")
    assert failed["httpStatus"] == 403 and failed["error"]["code"] == "http_status"
    assert fd.api.post("/downloads", {"url": url, "destination": "x.bin", "urlRefresh": "yes"}).status == 400
