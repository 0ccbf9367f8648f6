"""The download path end to end: submit → origin → file at its destination → webhook."""

from __future__ import annotations

import os
import re

from e2e_support import expected_signature, holds_for, parse_rfc3339, sha256_hex, wait_for


def test_submit_returns_201_with_location_and_a_queued_download(fetchd, origin):
    fd = fetchd()
    url = origin.add("/small.bin", os.urandom(1000))
    resp = fd.api.post("/downloads", {"url": url, "destination": "small.bin"})
    assert resp.status == 201, resp
    job = resp.json()
    assert resp.header("Location") == f"/downloads/{job['id']}"
    assert re.fullmatch(r"[A-Za-z0-9_-]+", job["id"]), job["id"]
    assert job["url"] == url
    assert job["destination"] == "small.bin"
    assert job["session"] == "default"
    assert job["priority"] == 0.5
    assert job["discretionary"] is False
    assert job["state"] in {"queued", "running", "completed"}
    assert fd.api.get(resp.header("Location")).json()["id"] == job["id"]


def test_submitted_job_completes_with_correct_bytes_and_sha256(fetchd, origin):
    fd = fetchd()
    body = os.urandom(300_000)
    url = origin.add("/data/file.bin", body)
    job = fd.api.submit({"url": url, "destination": "nested/dir/file.bin"})

    done = fd.api.wait_state(job["id"], "completed")

    assert fd.dest("nested/dir/file.bin").read_bytes() == body
    assert done["sha256"] == sha256_hex(body)
    assert done["bytesReceived"] == len(body)
    assert done["bytesExpected"] == len(body)
    assert done["httpStatus"] == 200
    assert done["error"] is None
    assert done["finishedAt"] is not None and done["startedAt"] is not None
    # The partial file is the crash-safety proof until the completion is committed, so it goes
    # right after the commit that a reader may already see.
    wait_for(lambda: not fd.partial_path(job["id"]).exists(), timeout=5, message="partial file removed after completion")


def test_completed_webhook_is_signed_per_standard_webhooks(fetchd, origin, receiver):
    fd = fetchd()
    body = os.urandom(5000)
    url = origin.add("/signed.bin", body)
    job = fd.api.submit({"url": url, "destination": "signed.bin", "webhookURL": receiver.url})

    deliveries = receiver.wait_event("download.completed", job["id"])

    d = deliveries[0]
    assert d.verified, d.verify_error
    assert d.headers.get("content-type", "").startswith("application/json")
    # The same signature, computed without the reference library, is among those sent.
    sent = d.headers["webhook-signature"].split(" ")
    assert expected_signature(d.webhook_id, d.headers["webhook-timestamp"], d.body) in sent
    assert abs(int(d.headers["webhook-timestamp"]) - d.time) < 60
    assert d.payload["type"] == "download.completed"
    parse_rfc3339(d.payload["timestamp"])
    assert d.data["id"] == job["id"]
    assert d.data["state"] == "completed"
    assert d.data["sha256"] == sha256_hex(body)
    # The file is at its destination by the time the event is sent.
    assert fd.dest("signed.bin").read_bytes() == body


def test_origin_404_fails_with_http_status_and_leaves_nothing(fetchd, origin, receiver):
    fd = fetchd()
    url = origin.add("/missing.bin", status=404)
    job = fd.api.submit({"url": url, "destination": "missing.bin", "webhookURL": receiver.url})

    failed = fd.api.wait_state(job["id"], "failed")

    assert failed["httpStatus"] == 404
    assert failed["error"]["code"] == "http_status"
    assert isinstance(failed["error"].get("message"), str)
    assert not fd.dest("missing.bin").exists()
    assert not fd.partial_path(job["id"]).exists()
    assert len(origin.requests_for("/missing.bin")) == 1, "a 404 is permanent: no retry"
    d = receiver.wait_event("download.failed", job["id"])[0]
    assert d.verified, d.verify_error
    assert d.data["state"] == "failed" and d.data["httpStatus"] == 404


def test_cancel_running_job_removes_partial_data_and_sends_cancelled_webhook(fetchd, origin, receiver):
    fd = fetchd()
    url = origin.add("/slow.bin", os.urandom(2_000_000), rate=100_000)  # ~20 s at full length
    job = fd.api.submit({"url": url, "destination": "slow.bin", "webhookURL": receiver.url})
    running = wait_for(lambda: (j := fd.api.job(job["id"]))["state"] == "running" and j["bytesReceived"] > 0 and j,
                       timeout=15, message="the job to be running with bytes received")
    assert running["bytesReceived"] < 2_000_000
    wait_for(lambda: fd.partial_path(job["id"]).exists(), timeout=5,
             message=f"partial file at {fd.partial_path(job['id'])}")

    resp = fd.api.delete(f"/downloads/{job['id']}")

    assert resp.status == 200, resp
    assert resp.json()["state"] == "cancelled"
    assert fd.api.job(job["id"])["state"] == "cancelled"
    wait_for(lambda: not fd.partial_path(job["id"]).exists(), timeout=5, message="partial file to be removed")
    assert not fd.dest("slow.bin").exists()
    d = receiver.wait_event("download.cancelled", job["id"])[0]
    assert d.verified, d.verify_error
    assert d.data["state"] == "cancelled"
    # Cancelled is terminal: it stays cancelled and nothing appears at the destination.
    assert holds_for(lambda: fd.api.job(job["id"])["state"] == "cancelled" and not fd.dest("slow.bin").exists(), 0.5)


def test_cancel_again_is_200_and_still_cancelled(fetchd, origin):
    fd = fetchd()
    url = origin.add("/later.bin", b"x")
    job = fd.api.submit({"url": url, "destination": "later.bin", "earliestBeginDate": "2999-01-01T00:00:00Z"})
    assert fd.api.delete(f"/downloads/{job['id']}").status == 200
    again = fd.api.delete(f"/downloads/{job['id']}")
    assert again.status == 200, again
    assert again.json()["state"] == "cancelled"
    assert origin.requests_for("/later.bin") == []


def test_delete_completed_job_is_409_and_keeps_the_file(fetchd, origin):
    fd = fetchd()
    body = os.urandom(2048)
    url = origin.add("/done.bin", body)
    job = fd.api.submit({"url": url, "destination": "done.bin"})
    fd.api.wait_state(job["id"], "completed")

    resp = fd.api.delete(f"/downloads/{job['id']}")

    assert resp.status == 409, resp
    assert resp.content_type == "application/problem+json"
    assert resp.json()["status"] == 409
    assert fd.api.job(job["id"])["state"] == "completed"
    assert fd.dest("done.bin").read_bytes() == body


def test_delete_failed_job_is_409(fetchd, origin):
    fd = fetchd()
    url = origin.add("/gone.bin", status=410)
    job = fd.api.submit({"url": url, "destination": "gone.bin"})
    fd.api.wait_state(job["id"], "failed")
    resp = fd.api.delete(f"/downloads/{job['id']}")
    assert resp.status == 409, resp
    assert resp.content_type == "application/problem+json"
    assert fd.api.job(job["id"])["state"] == "failed"


def _kill_mid_transfer_and_restart(fd, origin, path: str) -> tuple[dict, bytes]:
    body = os.urandom(1_000_000)
    url = origin.add(path, body, rate=100_000)
    job = fd.api.submit({"url": url, "destination": path.lstrip("/")})
    wait_for(lambda: fd.api.job(job["id"])["bytesReceived"] > 0, timeout=15, message="bytes to arrive")
    assert fd.kill() == -9
    origin.resources[path].rate = None  # let the next attempt go at full speed
    fd.start()
    return fd.api.wait_state(job["id"], "completed", timeout=30), body


def test_sigkill_mid_transfer_then_restart_completes_the_file(fetchd, origin):
    fd = fetchd()
    done, body = _kill_mid_transfer_and_restart(fd, origin, "/crash.bin")
    assert fd.dest("crash.bin").read_bytes() == body
    assert done["sha256"] == sha256_hex(body)
    wait_for(lambda: not fd.partial_path(done["id"]).exists(), timeout=5, message="partial file removed after completion")


def test_restart_after_sigkill_resumes_the_partial_data_with_range_and_if_range(fetchd, origin):
    fd = fetchd()
    done, body = _kill_mid_transfer_and_restart(fd, origin, "/resume.bin")
    assert fd.dest("resume.bin").read_bytes() == body
    requests = origin.requests_for("/resume.bin")
    assert len(requests) >= 2, requests
    after_restart = requests[-1].headers
    assert re.fullmatch(r"bytes=[1-9]\d*-", after_restart.get("range", "")), \
        f"the request after the restart did not resume (no Range): {after_restart}"
    assert after_restart.get("if-range") == origin.resources["/resume.bin"].etag, after_restart


def test_200_concurrent_small_jobs_complete_with_one_completed_event_each(fetchd, origin, receiver):
    fd = fetchd()
    n = 200
    bodies = {}
    for i in range(n):
        bodies[i] = os.urandom(512 + 37 * i)
        origin.add(f"/bulk/{i}.bin", bodies[i])
    ids = {}
    for i in range(n):
        job = fd.api.submit({"url": origin.url(f"/bulk/{i}.bin"), "destination": f"bulk/{i}.bin",
                             "session": "bulk", "webhookURL": receiver.url})
        ids[job["id"]] = i
    assert len(ids) == n, "job ids must be unique"

    def all_completed():
        items = fd.api.list_all("session=bulk&limit=1000")
        failed = [j for j in items if j["state"] in {"failed", "cancelled"}]
        assert not failed, f"{len(failed)} jobs did not complete, e.g. {failed[0]}"
        return items if sum(j["state"] == "completed" for j in items) == n else None

    items = wait_for(all_completed, timeout=60, interval=0.2, message="200 jobs to complete")

    for job in items:
        i = ids[job["id"]]
        assert fd.dest(f"bulk/{i}.bin").read_bytes() == bodies[i], f"wrong bytes for job {i}"
        assert job["sha256"] == sha256_hex(bodies[i])

    def completed_events_by_job():
        by_job: dict[str, list] = {}
        for d in receiver.events("download.completed"):
            by_job.setdefault(d.data.get("id"), []).append(d)
        return by_job if set(by_job) >= set(ids) else None

    by_job = wait_for(completed_events_by_job, timeout=30, interval=0.1,
                      message="a download.completed event for every job")
    assert set(by_job) == set(ids), "events for unknown jobs"
    for job_id, ds in by_job.items():
        assert all(d.verified for d in ds), [d.verify_error for d in ds]
        assert len({d.webhook_id for d in ds}) == 1, f"job {job_id} got several distinct completed events"
        assert sum(200 <= d.answered < 300 for d in ds) == 1, f"job {job_id}'s event was delivered {len(ds)} times"
    assert len({ds[0].webhook_id for ds in by_job.values()}) == n, "webhook-id must differ between events"
