"""Host politeness: a 429 or 503 with Retry-After holds every job of that host:port until the
time it names (`waitingFor: hostBackoff`), across a restart, and not the jobs of another port;
FETCHD_HOST_MIN_INTERVAL spaces the starts of requests to one host:port."""

from __future__ import annotations

from e2e_support import Fault, Origin, wait_for


def attempts_of(fd, job_id):
    return fd.api.get(f"/downloads/{job_id}/attempts").json()["items"]


def test_a_429_with_retry_after_holds_the_whole_host_port_until_then_across_a_restart(fetchd, origin):
    other_port = Origin()
    other_port.start()
    try:
        fd = fetchd()
        busy = fd.api.submit({"url": origin.add("/busy", b"busy", faults=[Fault(status=429, headers={"Retry-After": "4"})]),
                              "destination": "busy.bin"})
        wait_for(lambda: attempts_of(fd, busy["id"]), message="the 429 to be recorded")

        same_host = fd.api.submit({"url": origin.add("/same", b"same"), "destination": "same.bin"})
        elsewhere = fd.api.submit({"url": other_port.add("/else", b"else"), "destination": "else.bin"})

        fd.api.wait_state(elsewhere["id"], "completed")
        held = fd.api.job(same_host["id"])
        assert held["state"] == "queued" and held["waitingFor"] == "hostBackoff", held
        assert origin.requests_for("/same") == []

        # The hold is stored: a restart does not release it.
        assert fd.stop() == 0
        fd.start()
        held = fd.api.job(same_host["id"])
        assert held["state"] == "queued" and held["waitingFor"] == "hostBackoff", held

        fd.api.wait_state(same_host["id"], "completed")
        fd.api.wait_state(busy["id"], "completed")
        first_429 = origin.requests_for("/busy")[0].time
        assert origin.requests_for("/same")[0].time - first_429 >= 4.0
    finally:
        other_port.stop()


def test_starts_to_one_host_are_spaced_by_the_minimum_interval(fetchd, origin):
    fd = fetchd(env={"FETCHD_HOST_MIN_INTERVAL": "500ms"})
    jobs = [fd.api.submit({"url": origin.add(f"/spaced{i}", b"x" * 100), "destination": f"spaced{i}.bin"}) for i in range(4)]
    for job in jobs:
        fd.api.wait_state(job["id"], "completed")
    starts = sorted(r.time for i in range(4) for r in origin.requests_for(f"/spaced{i}"))
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert all(gap >= 0.45 for gap in gaps), gaps
