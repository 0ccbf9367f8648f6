"""Session actions: pause, resume, cancel and retry every job of a session in one request."""

from __future__ import annotations

import os
import time

from e2e_support import holds_for, sha256_hex, wait_for


def later(seconds: float = 3600) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + seconds))


def states(fd, session: str) -> dict[str, str]:
    return {job["id"]: job["state"] for job in fd.api.list_all(f"session={session}")}


def act(fd, session: str, action: str, query: str = "") -> dict:
    resp = fd.api.post(f"/sessions/{session}/{action}" + (f"?{query}" if query else ""))
    assert resp.status == 200, resp
    body = resp.json()
    assert body["session"] == session
    return body


def test_session_actions_change_only_their_session_and_say_how_many(fetchd, origin, receiver):
    fd = fetchd()
    slow_body = os.urandom(2_000_000)
    slow = fd.api.submit({"url": origin.add("/slow.bin", slow_body, rate=200_000), "destination": "s1/slow.bin",
                          "session": "s1", "webhookURL": receiver.url})
    broken_body = os.urandom(5000)
    origin.add("/broken.bin", broken_body, status=404)
    broken = fd.api.submit({"url": origin.url("/broken.bin"), "destination": "s1/broken.bin", "session": "s1"})
    waiting = [fd.api.submit({"url": origin.add(f"/w{i}.bin", b"w"), "destination": f"s1/w{i}.bin", "session": "s1",
                              "earliestBeginDate": later(), "webhookURL": receiver.url}) for i in range(3)]
    others = [fd.api.submit({"url": origin.add(f"/o{i}.bin", b"o"), "destination": f"s2/o{i}.bin", "session": "s2",
                             "earliestBeginDate": later()}) for i in range(2)]
    fd.api.wait_state(broken["id"], "failed")
    wait_for(lambda: fd.api.job(slow["id"])["bytesReceived"] > 0, message="the slow job running")
    s2_before = states(fd, "s2")

    assert act(fd, "s1", "pause") == {"session": "s1", "matched": 5, "changed": 4}
    assert set(states(fd, "s1").values()) == {"paused", "failed"}
    # The running transfer stopped: its bytes stay put.
    fd.api.wait_state(slow["id"], "paused")
    wait_for(lambda: not origin.busy("/slow.bin"), message="the origin's response to end")
    stopped_at = wait_for(lambda: fd.api.job(slow["id"])["bytesReceived"], message="bytes saved")
    assert holds_for(lambda: fd.api.job(slow["id"])["bytesReceived"] == stopped_at, 0.5)
    assert stopped_at < len(slow_body)
    assert act(fd, "s1", "pause") == {"session": "s1", "matched": 5, "changed": 0}

    assert act(fd, "s1", "resume", "state=paused") == {"session": "s1", "matched": 4, "changed": 4}
    assert states(fd, "s1")[waiting[0]["id"]] == "queued"

    origin.resources["/broken.bin"].status = 200
    assert act(fd, "s1", "retry") == {"session": "s1", "matched": 5, "changed": 1}
    assert fd.api.wait_state(broken["id"], "completed")["sha256"] == sha256_hex(broken_body)

    result = act(fd, "s1", "cancel")
    assert result == {"session": "s1", "matched": 5, "changed": 4}, result
    final = states(fd, "s1")
    assert final[broken["id"]] == "completed" and [final[j["id"]] for j in waiting] == ["cancelled"] * 3
    assert final[slow["id"]] == "cancelled"
    for job in waiting + [slow]:
        [event] = receiver.wait_event("download.cancelled", job["id"])
        assert event.verified and event.data["state"] == "cancelled"
    wait_for(lambda: receiver.events("session.finished"), message="session.finished for s1")
    wait_for(lambda: not fd.partial_path(slow["id"]).exists(), message="the cancelled job's partial data removed")

    assert states(fd, "s2") == s2_before == {j["id"]: "queued" for j in others}
    assert act(fd, "empty", "pause") == {"session": "empty", "matched": 0, "changed": 0}


def test_session_actions_refuse_bad_input(fetchd):
    fd = fetchd()
    assert fd.api.post("/sessions/s1/pause?state=sleeping").status == 400
    assert fd.api.post("/sessions/bad%20name/cancel").status == 400
    assert fd.api.post("/sessions/s1/explode").status in (404, 405)
