"""Jobs a client steers after submit: metadata, retry of a failed job, PATCH with ETag/If-Match,
and a new URL for a running job that goes on from its partial data with If-Range."""

from __future__ import annotations

import json
import os
import time

from e2e_support import Fault, sha256_hex, wait_for
from test_events import EventStream
from test_resilience import read_events

MERGE_PATCH = "application/merge-patch+json"


def patch(fd, job_id: str, body, **kw):
    kw.setdefault("content_type", MERGE_PATCH)
    return fd.api.request("PATCH", f"/downloads/{job_id}", body, **kw)


def later(seconds: float = 3600) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + seconds))


# ----------------------------------------------------------------------------- metadata


def test_metadata_round_trips_through_the_api_and_webhooks(fetchd, origin, receiver):
    fd = fetchd()
    metadata = {"order": 42, "tags": ["a", "b"], "nested": {"ok": True, "ratio": 0.25}, "note": "ünïcode \"quoted\""}
    url = origin.add("/meta.bin", os.urandom(2048))
    job = fd.api.submit({"url": url, "destination": "meta.bin", "metadata": metadata, "webhookURL": receiver.url})
    assert job["metadata"] == metadata
    assert fd.api.job(job["id"])["metadata"] == metadata

    [delivery] = receiver.wait_event("download.completed", job["id"])
    assert delivery.verified, delivery.verify_error
    assert delivery.data["metadata"] == metadata

    plain = fd.api.submit({"url": url, "destination": "plain.bin"})
    assert plain["metadata"] is None


def test_metadata_must_be_an_object_of_at_most_4_kib(fetchd, origin):
    fd = fetchd()
    url = origin.add("/big-meta.bin", b"x")
    at_limit = {"k": "v" * (4096 - len('{"k":""}'))}
    assert len(json.dumps(at_limit, separators=(",", ":"))) == 4096
    assert fd.api.submit({"url": url, "destination": "ok.bin", "metadata": at_limit})["metadata"] == at_limit

    too_big = {"k": "v" * 4096}
    resp = fd.api.post("/downloads", {"url": url, "destination": "big.bin", "metadata": too_big})
    assert resp.status == 400 and resp.json()["errors"][0]["field"] == "metadata", resp
    for not_object in (["a"], "text", 3):
        resp = fd.api.post("/downloads", {"url": url, "destination": "bad.bin", "metadata": not_object})
        assert resp.status == 400 and resp.json()["errors"][0]["field"] == "metadata", resp


# ----------------------------------------------------------------------------- retry


def test_retry_of_a_failed_job_resumes_from_its_partial_data(fetchd, origin, receiver):
    fd = fetchd(env={"FETCHD_MAX_ATTEMPTS": "1"})
    body = os.urandom(300_000)
    url = origin.add("/flaky.bin", body, faults=[Fault(reset_after=100_000)])
    job = fd.api.submit({"url": url, "destination": "flaky.bin", "webhookURL": receiver.url})
    failed = fd.api.wait_state(job["id"], "failed")
    assert failed["error"]["code"] == "network", failed
    assert failed["bytesReceived"] == 100_000, "a resumable failure keeps its partial data"
    [failed_event] = receiver.wait_event("download.failed", job["id"])
    assert failed_event.verified

    resp = fd.api.post(f"/downloads/{job['id']}/retry")
    assert resp.status == 200, resp
    assert resp.json()["state"] == "queued" and resp.json()["error"] is None

    done = fd.api.wait_state(job["id"], "completed")
    assert done["sha256"] == sha256_hex(body)
    assert fd.dest("flaky.bin").read_bytes() == body
    assert done["attempts"] == 2, "attempts keep counting across a retry"
    requests = origin.requests_for("/flaky.bin")
    assert requests[-1].headers.get("range") == "bytes=100000-", requests[-1].headers
    assert requests[-1].headers.get("if-range") == origin.resources["/flaky.bin"].etag
    [completed] = receiver.wait_event("download.completed", job["id"])
    assert completed.verified and completed.time > failed_event.time


def test_retry_starts_over_after_a_permanent_failure_and_is_409_in_other_states(fetchd, origin):
    fd = fetchd()
    body = os.urandom(50_000)
    url = origin.add("/gone.bin", body, faults=[Fault(status=404)])
    job = fd.api.submit({"url": url, "destination": "gone.bin"})
    failed = fd.api.wait_state(job["id"], "failed")
    assert failed["httpStatus"] == 404 and failed["bytesReceived"] == 0

    assert fd.api.post(f"/downloads/{job['id']}/retry").status == 200
    done = fd.api.wait_state(job["id"], "completed")
    assert done["sha256"] == sha256_hex(body)
    assert "range" not in origin.requests_for("/gone.bin")[-1].headers

    for state_job in (done, fd.api.submit({"url": url, "destination": "later.bin", "earliestBeginDate": later()})):
        resp = fd.api.post(f"/downloads/{state_job['id']}/retry")
        assert resp.status == 409 and resp.content_type == "application/problem+json", resp
    assert fd.api.post("/downloads/nope/retry").status == 404


def test_retry_budget_starts_over(fetchd, origin):
    fd = fetchd(env={"FETCHD_MAX_ATTEMPTS": "2"})
    body = os.urandom(1000)
    url = origin.add("/busy.bin", body, faults=[Fault(status=503)] * 3)
    job = fd.api.submit({"url": url, "destination": "busy.bin"})
    assert fd.api.wait_state(job["id"], "failed")["attempts"] == 2
    fd.api.post(f"/downloads/{job['id']}/retry")
    # One more 503, then the body: the second attempt of the new budget succeeds.
    done = fd.api.wait_state(job["id"], "completed")
    assert done["attempts"] == 4 and done["sha256"] == sha256_hex(body)


# ----------------------------------------------------------------------------- PATCH


def test_patch_changes_every_patchable_field_of_a_queued_job(fetchd, origin, receiver):
    fd = fetchd()
    body = os.urandom(10_000)
    old_url = origin.add("/old.bin", b"old")
    new_url = origin.add("/new.bin", body)
    job = fd.api.submit({"url": old_url, "destination": "patched.bin", "earliestBeginDate": later(),
                         "headers": {"X-Old": "1"}, "metadata": {"keep": 1, "drop": 2}})
    assert fd.api.job(job["id"])["waitingFor"] == "earliestBeginDate"

    resp = patch(fd, job["id"], {"priority": 0.9, "discretionary": True, "metadata": {"drop": None, "add": [1]},
                                 "headers": {"X-New": "2"}, "url": new_url, "webhookURL": receiver.url})
    assert resp.status == 200, resp
    changed = resp.json()
    assert (changed["priority"], changed["discretionary"], changed["url"]) == (0.9, True, new_url)
    assert changed["metadata"] == {"keep": 1, "add": [1]}, "metadata merges (RFC 7396)"
    assert changed["webhookURL"] == receiver.url and changed["state"] == "queued"
    assert fd.api.job(job["id"]) | {"waitingFor": None} == changed | {"waitingFor": None}

    # Clearing the date (and discretionary) lets it run now, with the new request.
    resp = patch(fd, job["id"], {"earliestBeginDate": None, "discretionary": None}, content_type="application/json")
    assert resp.status == 200 and resp.json()["earliestBeginDate"] is None and resp.json()["discretionary"] is False, resp
    done = fd.api.wait_state(job["id"], "completed")
    assert fd.dest("patched.bin").read_bytes() == body
    [request] = origin.requests_for("/new.bin")
    assert request.headers.get("x-new") == "2" and "x-old" not in request.headers
    assert origin.requests_for("/old.bin") == []
    [event] = receiver.wait_event("download.completed", job["id"])
    assert event.verified and event.data["metadata"] == {"keep": 1, "add": [1]}

    # A terminal job is a conflict; clearing fields of a live one works.
    assert patch(fd, done["id"], {"priority": 0.1}).status == 409
    live = fd.api.submit({"url": old_url, "destination": "live.bin", "earliestBeginDate": later(),
                          "webhookURL": receiver.url, "metadata": {"a": 1}, "headers": {"X-A": "1"}})
    cleared = patch(fd, live["id"], {"webhookURL": None, "metadata": None, "headers": None, "priority": None}).json()
    assert (cleared["webhookURL"], cleared["metadata"], cleared["priority"]) == (None, None, 0.5)


def test_header_names_read_back_and_their_values_never(fetchd, origin, receiver):
    fd = fetchd()
    values = ("value-5f1e", "value-77c0", "value-c3d9")
    url = origin.add("/named.bin", os.urandom(20_000))
    everything = EventStream(fd)
    try:
        job = fd.api.submit({"url": url, "destination": "named.bin", "earliestBeginDate": later(), "webhookURL": receiver.url,
                             "headers": {"X-Api-Key": values[1], "Authorization": f"Bearer {values[0]}"}})
        assert job["headers"] == ["Authorization", "X-Api-Key"], "names as given, sorted"
        assert fd.api.job(job["id"])["headers"] == ["Authorization", "X-Api-Key"]

        # PATCH replaces them whole: the new names read back, the old ones are gone.
        changed = patch(fd, job["id"], {"headers": {"x-Trace-Id": values[2]}})
        assert changed.status == 200 and changed.json()["headers"] == ["x-Trace-Id"], changed
        assert fd.api.job(job["id"])["headers"] == ["x-Trace-Id"]
        [listed] = fd.api.get("/downloads").json()["items"]
        assert listed["headers"] == ["x-Trace-Id"]

        assert patch(fd, job["id"], {"earliestBeginDate": None}).status == 200
        job_events = read_events(fd, job["id"])
        done = fd.api.wait_state(job["id"], "completed")
        assert origin.requests_for("/named.bin")[0].headers["x-trace-id"] == values[2], "the header did go out"
        [delivery] = receiver.wait_event("download.completed", job["id"])
        assert delivery.data["headers"] == ["x-Trace-Id"]
        wait_for(lambda: any(d["id"] == job["id"] and d["state"] == "completed" for _, d in everything.states()),
                 message="GET /events to show the job complete")
    finally:
        everything.close()

    shown = [json.dumps(job), changed.body.decode(), json.dumps(listed), json.dumps(done), json.dumps(job_events),
             json.dumps(everything.events), delivery.body.decode()]
    for value in values:
        assert not [text for text in shown if value in text], f"{value!r} was shown"


def test_patch_refuses_what_it_cannot_change(fetchd, origin):
    fd = fetchd()
    job = fd.api.submit({"url": origin.add("/r.bin", b"r"), "destination": "r.bin", "earliestBeginDate": later()})
    for body, field in [({"destination": "x.bin"}, "destination"), ({"session": "s"}, "session"),
                        ({"mirrors": "x"}, "mirrors"), ({"maxBytesPerSecond": 100}, "maxBytesPerSecond"),
                        ({"url": None}, "url"), ({"url": "gopher://x/"}, "url"), ({"priority": 2}, "priority"),
                        ({"headers": {"Range": "bytes=0-"}}, "headers"), ({"metadata": {"k": "v" * 5000}}, "metadata")]:
        resp = patch(fd, job["id"], body)
        assert resp.status == 400 and resp.json()["errors"][0]["field"] == field, (body, resp)
    assert patch(fd, job["id"], [1]).status == 400
    assert patch(fd, job["id"], None, raw=b"{", content_type=MERGE_PATCH).status == 400
    assert patch(fd, job["id"], {"priority": 1}, content_type="text/plain").status == 415
    assert patch(fd, "nope", {"priority": 1}).status == 404
    assert fd.api.job(job["id"])["priority"] == 0.5, "a refused patch changes nothing"


def test_etag_changes_with_every_change_and_if_match_guards_a_patch(fetchd, origin):
    fd = fetchd()
    job = fd.api.submit({"url": origin.add("/e.bin", b"e"), "destination": "e.bin", "earliestBeginDate": later()})
    first = fd.api.get(f"/downloads/{job['id']}")
    etag = first.header("ETag")
    assert etag and etag.startswith('"') and fd.api.get(f"/downloads/{job['id']}").header("ETag") == etag

    resp = patch(fd, job["id"], {"priority": 0.7}, headers={"If-Match": etag})
    assert resp.status == 200, resp
    new_etag = resp.header("ETag")
    assert new_etag and new_etag != etag and fd.api.get(f"/downloads/{job['id']}").header("ETag") == new_etag

    stale = patch(fd, job["id"], {"priority": 0.1}, headers={"If-Match": etag})
    assert stale.status == 412 and stale.content_type == "application/problem+json", stale
    assert patch(fd, job["id"], {"priority": 0.1}, headers={"If-Match": f'W/{new_etag}'}).status == 412
    assert patch(fd, job["id"], {"priority": 0.2}, headers={"If-Match": f'"x", {new_etag}'}).status == 200
    assert patch(fd, job["id"], {"priority": 0.3}, headers={"If-Match": "*"}).status == 200
    assert fd.api.job(job["id"])["priority"] == 0.3

    paused = fd.api.post(f"/downloads/{job['id']}/pause")
    assert paused.status == 200
    assert fd.api.get(f"/downloads/{job['id']}").header("ETag") not in (etag, new_etag)


def test_a_new_url_for_a_running_job_resumes_with_if_range(fetchd, origin):
    fd = fetchd()
    body = os.urandom(400_000)
    old_url = origin.add("/expiring.bin", body, rate=100_000)
    new_url = origin.add("/fresh.bin", body, etag=origin.resources["/expiring.bin"].etag)
    job = fd.api.submit({"url": old_url, "destination": "swap.bin"})
    wait_for(lambda: fd.api.job(job["id"])["bytesReceived"] >= 50_000, message="some bytes from the old URL")

    assert patch(fd, job["id"], {"url": new_url}).status == 200
    done = fd.api.wait_state(job["id"], "completed")
    assert done["sha256"] == sha256_hex(body) and fd.dest("swap.bin").read_bytes() == body
    [request] = origin.requests_for("/fresh.bin")
    assert request.headers.get("range", "").startswith("bytes="), request.headers
    assert int(request.headers["range"][6:-1]) >= 50_000
    assert request.headers.get("if-range") == origin.resources["/fresh.bin"].etag
    outcomes = [a["outcome"] for a in fd.api.get(f"/downloads/{job['id']}/attempts").json()["items"]]
    assert outcomes == ["changed", "completed"], outcomes


def test_a_new_url_with_another_file_restarts_from_zero(fetchd, origin):
    fd = fetchd()
    old_body, new_body = os.urandom(400_000), os.urandom(250_000)
    old_url = origin.add("/v1.bin", old_body, rate=100_000)
    new_url = origin.add("/v2.bin", new_body)
    job = fd.api.submit({"url": old_url, "destination": "changed.bin"})
    wait_for(lambda: fd.api.job(job["id"])["bytesReceived"] >= 50_000, message="some bytes of the old file")

    assert patch(fd, job["id"], {"url": new_url}).status == 200
    done = fd.api.wait_state(job["id"], "completed")
    assert done["sha256"] == sha256_hex(new_body)
    assert fd.dest("changed.bin").read_bytes() == new_body, "no bytes of the old file mixed in"
    [request] = origin.requests_for("/v2.bin")
    assert request.headers.get("if-range") == origin.resources["/v1.bin"].etag


def test_a_failed_jobs_partial_data_survives_a_restart_and_goes_when_the_job_is_pruned(fetchd, origin):
    fd = fetchd(env={"FETCHD_MAX_ATTEMPTS": "1", "FETCHD_RETENTION": "2s"})
    url = origin.add("/pruned.bin", os.urandom(200_000), faults=[Fault(reset_after=60_000)])
    job = fd.api.submit({"url": url, "destination": "pruned.bin"})
    fd.api.wait_state(job["id"], "failed")
    partial = fd.partial_path(job["id"])
    assert partial.stat().st_size == 60_000

    fd.restart()
    assert partial.exists(), "a failed job's resumable data is kept across a restart"
    wait_for(lambda: fd.api.get(f"/downloads/{job['id']}").status == 404, timeout=30, message="the job pruned")
    wait_for(lambda: not partial.exists(), timeout=10, message="its partial file removed")
