"""Scheduling like a background session: dates, priority, discretionary jobs,
per-host limits without head-of-line blocking, fairness between sessions, disk-space
admission, session.finished, and idempotent submission under concurrency."""

from __future__ import annotations

import os
import subprocess
import threading
import time

import pytest

from e2e_support import Origin, parse_rfc3339, rfc3339, sha256_hex, small_volume, wait_for


def submit(fd, url: str, destination: str, **extra) -> dict:
    return fd.api.submit({"url": url, "destination": destination, **extra})


def start_order(origin, paths) -> list[str]:
    """Paths in the order their first request reached the origin."""
    firsts = {}
    for path in paths:
        requests = origin.requests_for(path)
        if requests:
            firsts[path] = requests[0].time
    return sorted(firsts, key=firsts.get)


def test_jobs_never_start_before_their_date_and_start_by_themselves_after_it(fetchd, origin):
    """Nothing polls: only the scheduler's timer for the next date can start these jobs, so that
    they all start proves it fires. How late after its date each one starts depends on the
    machine's load and is not asserted (Benchmarks measure latency)."""
    fd = fetchd(env={"FETCHD_MAX_TRANSFERS": "64", "FETCHD_MAX_TRANSFERS_PER_HOST": "64"})
    base = time.time() + 1.5
    dates = {}
    for i in range(50):
        path = f"/dated{i}"
        origin.add(path, b"x" * 1000)
        dates[path] = parse_rfc3339(rfc3339(base + i * 0.05))  # what fetchd will see, to the millisecond
        job = submit(fd, origin.url(path), f"dated/{i}", earliestBeginDate=rfc3339(dates[path]))
        assert job["waitingFor"] == "earliestBeginDate"

    wait_for(lambda: all(origin.requests_for(p) for p in dates), timeout=30, message="every dated job to start")

    for path, date in dates.items():
        started = origin.requests_for(path)[0].time
        assert started >= date, f"{path} started {date - started:.3f}s early"


def blocked_single_slot(fetchd, origin, **env):
    """fetchd with one slot, held by a throttled transfer; returns (fd, blocker job)."""
    fd = fetchd(env={"FETCHD_MAX_TRANSFERS": "1", **env})
    origin.add("/blocker", os.urandom(200_000), rate=200_000)
    blocker = submit(fd, origin.url("/blocker"), "blocker.bin")
    fd.api.wait_state(blocker["id"], "running")
    return fd, blocker


def test_with_the_slot_busy_higher_priority_runs_first_and_discretionary_last(fetchd, origin):
    fd, blocker = blocked_single_slot(fetchd, origin)
    for path in ("/lazy", "/low", "/high"):
        origin.add(path, b"payload " + path.encode())
    lazy = submit(fd, origin.url("/lazy"), "lazy.bin", discretionary=True, priority=1.0)
    low = submit(fd, origin.url("/low"), "low.bin", priority=0.1)
    high = submit(fd, origin.url("/high"), "high.bin", priority=0.9)
    assert fd.api.job(low["id"])["waitingFor"] == "slot"

    for job in (lazy, low, high):
        fd.api.wait_state(job["id"], "completed")

    assert start_order(origin, ["/lazy", "/low", "/high"]) == ["/high", "/low", "/lazy"]


def test_a_discretionary_job_outside_its_window_waits_and_says_so(fetchd, origin):
    hour = time.gmtime().tm_hour
    closed = f"{(hour + 2) % 24:02d}:00-{(hour + 3) % 24:02d}:00"
    fd = fetchd(env={"FETCHD_DISCRETIONARY_WINDOW": closed})
    origin.add("/later", b"later")
    job = submit(fd, origin.url("/later"), "later.bin", discretionary=True)

    assert wait_for(lambda: fd.api.job(job["id"])["waitingFor"] == "discretionary")
    assert not origin.requests_for("/later")


def test_per_host_limit_holds_and_another_host_is_not_blocked(fetchd):
    host_a, host_b = Origin(), Origin()
    host_a.start()
    host_b.start()
    try:
        fd = fetchd(env={"FETCHD_MAX_TRANSFERS_PER_HOST": "2", "FETCHD_MAX_TRANSFERS": "16"})
        a_jobs = []
        for i in range(6):
            host_a.add(f"/a{i}", os.urandom(150_000), rate=150_000)
            a_jobs.append(submit(fd, host_a.url(f"/a{i}"), f"a/{i}")["id"])
        waiting = wait_for(lambda: [j for j in a_jobs if fd.api.job(j)["waitingFor"] == "hostLimit"])
        assert len(waiting) == 4
        host_b.add("/b", b"from host b")
        b_job = submit(fd, host_b.url("/b"), "b.bin")

        fd.api.wait_state(b_job["id"], "completed")
        assert sum(fd.api.job(j)["state"] == "completed" for j in a_jobs) <= 2  # B did not queue behind A
        for job_id in a_jobs:
            fd.api.wait_state(job_id, "completed", timeout=30)
        assert host_a.peak_concurrent == 2
    finally:
        host_a.stop()
        host_b.stop()


def test_a_session_with_a_thousand_jobs_does_not_starve_one_with_a_single_job(fetchd, origin):
    fd = fetchd(env={"FETCHD_MAX_TRANSFERS": "4", "FETCHD_MAX_TRANSFERS_PER_HOST": "4"})
    # Four slow jobs hold every slot while the queue fills, so all of it waits for the same moment.
    for i in range(4):
        origin.add(f"/hold{i}", os.urandom(100_000), rate=2_000)  # held until the rate is lifted
        fd.api.wait_state(submit(fd, origin.url(f"/hold{i}"), f"hold/{i}", session="s0")["id"], "running")
    origin.add("/item", b"small item")
    for i in range(1000):
        submit(fd, origin.url("/item") + f"?n={i}", f"s1/{i}", session="s1")
    origin.add("/lonely", b"lonely")
    lonely = submit(fd, origin.url("/lonely"), "s2/lonely", session="s2")
    for i in range(4):
        origin.resources[f"/hold{i}"].rate = None

    fd.api.wait_state(lonely["id"], "completed", timeout=60)

    after_holders = [r.path for r in origin.requests if not r.path.startswith("/hold")]
    assert "/lonely" in after_holders[:8], after_holders[:8]


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_a_job_that_would_not_fit_waits_for_disk_space_and_runs_once_it_fits(fetchd, origin):
    fd = fetchd(start=False)
    with small_volume(fd, "4m") as volume:
        fd.start()
        data = os.urandom(6_000_000)
        origin.add("/large", data)
        job = submit(fd, origin.url("/large"), "large.bin", expectedBytesToReceive=len(data))

        assert wait_for(lambda: fd.api.job(job["id"])["waitingFor"] == "diskSpace")
        assert not origin.requests_for("/large")

        subprocess.run(["mount", "-o", "remount,size=16m", str(volume)], check=True)
        assert fd.api.wait_state(job["id"], "completed")["sha256"] == sha256_hex(data)
        fd.stop()


def test_session_finished_arrives_once_after_the_last_jobs_event_and_again_for_new_work(fetchd, origin, receiver):
    fd = fetchd()
    # One batch, so that the session holds all three before the first completes (submitted one
    # by one, the first two may finish, and the session with them, before the third arrives).
    items = []
    for i in range(3):
        origin.add(f"/s{i}", os.urandom(20_000))
        items.append({"url": origin.url(f"/s{i}"), "destination": f"batch/{i}", "session": "batch",
                      "webhookURL": receiver.url})
    response = fd.api.post("/downloads/batch", {"items": items})
    assert response.status == 200, response
    ids = [item["download"]["id"] for item in response.json()["items"]]
    finished = wait_for(lambda: receiver.events("session.finished") or None)
    for job_id in ids:
        receiver.wait_event("download.completed", job_id)
    assert holds_for_one(receiver)

    deliveries = receiver.events()
    last_job_event = max(i for i, d in enumerate(deliveries) if d.type == "download.completed")
    assert deliveries.index(finished[0]) > last_job_event
    assert finished[0].data == {"session": "batch", "counts": {
        "queued": 0, "running": 0, "paused": 0, "completed": 3, "failed": 0, "cancelled": 0}}
    assert fd.api.get("/sessions/batch").json()["finished"] is True

    origin.add("/s3", b"more")
    more = submit(fd, origin.url("/s3"), "batch/3", session="batch", webhookURL=receiver.url)
    receiver.wait_event("download.completed", more["id"])
    wait_for(lambda: len(receiver.events("session.finished")) == 2)
    assert receiver.events("session.finished")[1].data["counts"]["completed"] == 4


def holds_for_one(receiver) -> bool:
    """No second session.finished shows up for the same finish."""
    from e2e_support import holds_for
    return holds_for(lambda: len(receiver.events("session.finished")) == 1, 0.5)


def test_concurrent_submissions_with_one_idempotency_key_make_one_job(fetchd, origin):
    fd = fetchd()
    origin.add("/once", b"once")
    body = {"url": origin.url("/once"), "destination": "once.bin"}
    results = []

    def post():
        resp = fd.api.post("/downloads", body, headers={"Idempotency-Key": "same-key"})
        results.append((resp.status, resp.json().get("id")))

    threads = [threading.Thread(target=post) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert {status for status, _ in results} == {201}
    assert len({job_id for _, job_id in results}) == 1
    assert len(fd.api.list_all()) == 1
