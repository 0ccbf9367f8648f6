"""GET /events: one stream of every job's state changes (and progress), ?session= narrowing,
Last-Event-ID replay from the persisted log, and `reset` when the log cannot continue."""

from __future__ import annotations

import json
import os
import socket
import threading
import time

from e2e_support import wait_for


class EventStream:
    """Reads a text/event-stream in a thread and keeps every event as (event, id, data)."""

    def __init__(self, fd, query: str = "", last_event_id: str | None = None):
        self.events: list[tuple[str, str | None, str]] = []
        self.status_line = b""
        self._sock = socket.create_connection((fd.host, fd.port), timeout=30)
        headers = f"GET /events{query} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
        if last_event_id is not None:
            headers += f"Last-Event-ID: {last_event_id}\r\n"
        self._sock.sendall((headers + "\r\n").encode())
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self):
        buffer = b""
        head_done = False
        try:
            while True:
                chunk = self._sock.recv(65536)
                if not chunk:
                    return
                buffer += chunk
                if not head_done:
                    if b"\r\n\r\n" not in buffer:
                        continue
                    head, buffer = buffer.split(b"\r\n\r\n", 1)
                    self.status_line = head.split(b"\r\n")[0]
                    head_done = True
                # Chunked framing: the chunk-size lines are dropped by splitting on blank SSE separators
                # after removing them.
                while b"\r\n" in buffer:
                    size_line, rest = buffer.split(b"\r\n", 1)
                    size = int(size_line.split(b";")[0] or b"0", 16)
                    if len(rest) < size + 2:
                        break
                    self._parse(rest[:size])
                    buffer = rest[size + 2:]
        except OSError:
            return

    _pending = b""

    def _parse(self, data: bytes):
        self._pending += data
        while b"\n\n" in self._pending:
            block, self._pending = self._pending.split(b"\n\n", 1)
            event, event_id, lines = "message", None, []
            for line in block.decode().split("\n"):
                if line.startswith(":") or not line:
                    continue
                name, _, value = line.partition(": ")
                if name == "event":
                    event = value
                elif name == "id":
                    event_id = value
                elif name == "data":
                    lines.append(value)
            if lines or event != "message":
                with self._lock:
                    self.events.append((event, event_id, "\n".join(lines)))

    def states(self) -> list[tuple[int, dict]]:
        with self._lock:
            return [(int(i), json.loads(d)) for e, i, d in self.events if e == "state"]

    def of(self, kind: str) -> list[tuple[str | None, str]]:
        with self._lock:
            return [(i, d) for e, i, d in self.events if e == kind]

    def close(self):
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()


def reached(stream: EventStream, job_id: str, state: str) -> bool:
    return any(d["id"] == job_id and d["state"] == state for _, d in stream.states())


def test_one_stream_follows_every_session_and_session_narrows_it(fetchd, origin):
    fd = fetchd()
    everything = EventStream(fd)
    only_a = EventStream(fd, "?session=a")
    try:
        wait_for(lambda: everything.status_line and only_a.status_line, message="both streams open")
        assert b" 200 " in everything.status_line
        a = fd.api.submit({"url": origin.add("/a.bin", os.urandom(5000)), "destination": "a.bin", "session": "a"})
        b = fd.api.submit({"url": origin.add("/b.bin", os.urandom(5000)), "destination": "b.bin", "session": "b"})
        fd.api.wait_state(a["id"], "completed")
        fd.api.wait_state(b["id"], "completed")
        wait_for(lambda: reached(everything, a["id"], "completed") and reached(everything, b["id"], "completed"),
                 message="both jobs completed on the global stream")
        wait_for(lambda: reached(only_a, a["id"], "completed"), message="job a completed on the session stream")

        seen = everything.states()
        ids = [i for i, _ in seen]
        assert ids == sorted(ids) and len(set(ids)) == len(ids), "one increasing global sequence"
        assert [d["state"] for _, d in seen if d["id"] == a["id"]] == ["queued", "running", "completed"]
        assert {d["session"] for _, d in only_a.states()} == {"a"}
        assert [d["state"] for _, d in only_a.states()] == ["queued", "running", "completed"]
    finally:
        everything.close()
        only_a.close()


def test_last_event_id_replays_what_was_missed_and_a_bad_one_resets(fetchd, origin):
    fd = fetchd()
    first = fd.api.submit({"url": origin.add("/1.bin", b"1" * 1000), "destination": "1.bin"})
    fd.api.wait_state(first["id"], "completed")
    live = EventStream(fd)
    try:
        second = fd.api.submit({"url": origin.add("/2.bin", b"2" * 1000), "destination": "2.bin"})
        fd.api.wait_state(second["id"], "completed")
        wait_for(lambda: reached(live, second["id"], "completed"), message="the second job on the stream")
        states = live.states()
        resume_after = states[0][0]  # seen the second job's first event only
    finally:
        live.close()

    replay = EventStream(fd, last_event_id=str(resume_after))
    try:
        wait_for(lambda: reached(replay, second["id"], "completed"), message="the missed events replayed")
        assert replay.states() == states[1:], "exactly the events after Last-Event-ID, with their ids"
        assert replay.of("reset") == []
    finally:
        replay.close()

    for bad in ("not-a-number", "999999999", "-5"):
        stream = EventStream(fd, last_event_id=bad)
        try:
            wait_for(lambda: stream.of("reset"), message=f"reset for Last-Event-ID {bad}")
            assert stream.states() == [], "a reset stream follows from now: no replay"
            third = fd.api.submit({"url": origin.add(f"/3{bad}.bin", b"3"), "destination": f"3{bad}.bin"})
            wait_for(lambda: reached(stream, third["id"], "completed"), message="following after the reset")
        finally:
            stream.close()
    assert fd.api.get("/events?session=bad%20name").status == 400


def test_a_session_action_logs_every_job_as_the_action_left_it(fetchd):
    """Pause and resume of a session log a state event per changed job; replay shows each job as
    it was right after that action, not as it is now."""
    fd = fetchd()
    never = {"url": "http://127.0.0.1:9/never.bin", "earliestBeginDate": "2099-01-01T00:00:00Z"}
    jobs = [fd.api.submit({**never, "destination": f"s/{i}", "session": "s", "priority": 0.25,
                           "metadata": {"n": i, "note": "ünïcode \"quoted\""},
                           "headers": {"X-Token": f"t{i}"}}) for i in range(3)]
    fd.api.submit({**never, "destination": "t/0", "session": "t"})
    live = EventStream(fd)

    def visible(job_id: str) -> dict:
        job = fd.api.job(job_id)
        job.pop("waitingFor")  # worked out when asked, not logged
        return job

    try:
        wait_for(lambda: live.status_line, message="the stream open")
        assert fd.api.post("/sessions/s/pause").json() == {"session": "s", "matched": 3, "changed": 3}
        paused = {j["id"]: visible(j["id"]) for j in jobs}
        assert {j["state"] for j in paused.values()} == {"paused"}
        r = fd.api.request("PATCH", f"/downloads/{jobs[0]['id']}", {"priority": 0.75, "metadata": {"n": 9}},
                           content_type="application/merge-patch+json")
        assert r.status == 200, r
        assert fd.api.post("/sessions/s/resume").json() == {"session": "s", "matched": 3, "changed": 3}
        queued = {j["id"]: visible(j["id"]) for j in jobs}
        wait_for(lambda: len(live.states()) >= 6, message="six state events on the live stream")
    finally:
        live.close()

    seen = live.states()
    expected = [paused[j["id"]] for j in sorted(jobs, key=lambda j: j["id"])] + \
               [queued[j["id"]] for j in sorted(jobs, key=lambda j: j["id"])]
    got = [{k: v for k, v in d.items() if k != "waitingFor"} for _, d in seen]
    assert sorted(got[:3], key=lambda d: d["id"]) == expected[:3], "each job as the pause left it"
    assert sorted(got[3:], key=lambda d: d["id"]) == expected[3:], "each job as the resume left it"
    assert paused[jobs[0]["id"]]["priority"] == 0.25 and queued[jobs[0]["id"]]["priority"] == 0.75

    replay = EventStream(fd, last_event_id=str(seen[0][0] - 1))
    try:
        wait_for(lambda: len(replay.states()) >= 6, message="the session's events replayed")
        assert replay.states() == seen, "replay gives the same events, with the same ids"
    finally:
        replay.close()


def test_progress_events_name_the_job_and_its_rate(fetchd, origin):
    fd = fetchd()
    stream = EventStream(fd)
    try:
        body = os.urandom(600_000)
        job = fd.api.submit({"url": origin.add("/slow.bin", body, rate=200_000), "destination": "slow.bin"})
        wait_for(lambda: len(stream.of("progress")) >= 2, timeout=20, message="two progress events")
        fd.api.wait_state(job["id"], "completed")
        progress = [json.loads(d) for _, d in stream.of("progress")]
        assert {p["id"] for p in progress} == {job["id"]}
        assert all(set(p) == {"id", "kind", "bytesReceived", "bytesExpected", "bytesPerSecond"} and p["kind"] == "download"
                   for p in progress)
        assert [p["bytesReceived"] for p in progress] == sorted(p["bytesReceived"] for p in progress)
        assert progress[-1]["bytesPerSecond"] > 0 and progress[-1]["bytesExpected"] == len(body)
    finally:
        stream.close()
