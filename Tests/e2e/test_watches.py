"""Watches end to end (API.md, "Watches: keeping a file fresh"): a watch checks its URL with a
conditional GET, against nginx (which answers If-None-Match and If-Modified-Since itself) and
the test origin (which ignores them); a 304 writes nothing and sends nothing, a new file
replaces the destination atomically and sends `watch.changed`, the same bytes again store
nothing (in a file or in object storage), a failing origin sends one `watch.failed`, a check
slower than the interval is let finish and one that cannot reach its origin fails; pause,
resume, check, PATCH and DELETE; one owner per destination; a check missed while fetchd was
down runs once at start; three nodes on PostgreSQL check once per due time.
FETCHD_WATCH_MIN_INTERVAL is lowered so that checks come a second apart."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from e2e_support import holds_for, parse_rfc3339, sha256_hex, wait_for
from file_servers import free_port
from nginx_support import LoopbackNginx
from test_cluster import Cluster, database_schema, needs_postgres

FAST = {"FETCHD_WATCH_MIN_INTERVAL": "200ms"}

class StaticServer(LoopbackNginx):
    """nginx serving the files under `root`, logging each request's method, path and status."""

    def __init__(self, workdir: Path):
        super().__init__(workdir, "nginx", "$request_method $uri $status")

    def put(self, name: str, data: bytes, mtime: float) -> None:
        """Replaces the file at once (a rename), with a modification time of its own."""
        staged = self.root / (name + ".new")
        staged.write_bytes(data)
        os.utime(staged, (mtime, mtime))
        os.replace(staged, self.root / name)

    def url(self, name: str) -> str:
        return super().url("/" + name)

    def statuses(self, name: str) -> list[str]:
        return [fields[2] for fields in self.log_lines() if fields[1] == "/" + name]


@pytest.fixture
def nginx(tmp_path):
    server = StaticServer(tmp_path)
    yield server
    server.stop()


def create(fd, body: dict, expect: int = 201) -> dict:
    response = fd.api.post("/watches", body)
    assert response.status == expect, response.body
    return response.json()


def watch_of(fd, watch_id: str) -> dict:
    response = fd.api.get(f"/watches/{watch_id}")
    assert response.status == 200, response.body
    return response.json()


def checked(fd, watch_id: str, checks: int, timeout: float = 20.0) -> dict:
    """The watch once it has made at least `checks` checks."""
    return wait_for(lambda: (w := watch_of(fd, watch_id))["checks"] >= checks and w, timeout=timeout,
                    message=lambda: f"{checks} checks of {watch_of(fd, watch_id)}")


def events(receiver, type: str, watch_id: str) -> list:
    return [d for d in receiver.events(type) if isinstance(d.data, dict)
            and (d.data.get("watch", d.data) or {}).get("id") == watch_id]


def test_nginx_304_writes_nothing_and_a_new_file_replaces_the_old_at_once(fetchd, nginx, receiver):
    fd = fetchd(env={**FAST, "FETCHD_WEBHOOK_URL": receiver.url})
    first, second = os.urandom(2 * 1024 * 1024), os.urandom(2 * 1024 * 1024 + 5)
    nginx.put("feed.bin", first, time.time() - 3600)
    watch = create(fd, {"url": nginx.url("feed.bin"), "destination": "mirror/feed.bin", "interval": "300ms"})
    assert watch["state"] == "active" and watch["interval"] == "300ms" and watch["schedule"] is None

    # The first check runs when the watch is created and places the file.
    changed = wait_for(lambda: events(receiver, "watch.changed", watch["id"]), message="the first watch.changed")
    assert changed[0].verified
    assert changed[0].data["previousSha256"] is None
    assert changed[0].data["download"]["sha256"] == sha256_hex(first)
    assert changed[0].data["download"]["watch"] == watch["id"]
    placed = fd.dest("mirror/feed.bin")
    assert placed.read_bytes() == first
    inode = placed.stat().st_ino

    # Later checks are answered 304 by nginx: nothing is written, nothing is sent.
    now = checked(fd, watch["id"], 4)
    assert now["changes"] == 1 and now["lastResult"] == "unchanged" and now["sha256"] == sha256_hex(first)
    assert now["etag"] and now["lastModified"]
    assert nginx.statuses("feed.bin").count("304") >= 3
    assert placed.stat().st_ino == inode
    assert len(events(receiver, "watch.changed", watch["id"])) == 1

    # A reader that opens the destination again and again never sees anything but a whole file.
    seen, stop = set(), threading.Event()

    def read():
        while not stop.is_set():
            seen.add(sha256_hex(placed.read_bytes()))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        nginx.put("feed.bin", second, time.time())
        changed = wait_for(lambda: (ds := events(receiver, "watch.changed", watch["id"])) and len(ds) == 2 and ds,
                           message="the second watch.changed")
    finally:
        stop.set()
        reader.join()
    assert seen <= {sha256_hex(first), sha256_hex(second)}
    assert placed.read_bytes() == second
    assert changed[1].data["previousSha256"] == sha256_hex(first)
    assert changed[1].data["download"]["sha256"] == sha256_hex(second)
    assert changed[1].data["watch"]["changes"] == 2
    # Each change is a job of its own in /downloads, in the watch's session.
    checks = [job for job in fd.api.list_all() if job.get("watch") == watch["id"]]
    assert {job["sha256"] for job in checks if job["state"] == "completed"} == {sha256_hex(first), sha256_hex(second)}


def test_an_origin_that_ignores_conditions_and_sends_the_same_bytes_changes_nothing(fetchd, origin, receiver):
    fd = fetchd(env={**FAST, "FETCHD_WEBHOOK_URL": receiver.url})
    body = os.urandom(64 * 1024)
    origin.add("/same.bin", body)
    watch = create(fd, {"url": origin.url("/same.bin"), "destination": "same.bin", "interval": "300ms"})
    now = checked(fd, watch["id"], 4)
    assert now["changes"] == 1 and now["lastResult"] == "unchanged"
    requests = origin.requests_for("/same.bin")
    assert len(requests) >= 4
    # Asked conditionally after the first, and answered with the same bytes each time.
    assert "if-none-match" not in requests[0].headers
    assert all(r.headers.get("if-none-match") == requests[1].headers["if-none-match"] for r in requests[1:])
    assert len(events(receiver, "watch.changed", watch["id"])) == 1
    assert fd.dest("same.bin").read_bytes() == body


@pytest.mark.parametrize("size", [64 * 1024, 6 * 1024 * 1024 + 3], ids=["put-whole", "multipart"])
def test_an_object_the_origin_sends_again_unchanged_is_stored_once(fetchd, origin, s3, receiver, size):
    fd = fetchd(env={**FAST, **s3.env(), "FETCHD_S3_PART_SIZE": "5MiB", "FETCHD_WEBHOOK_URL": receiver.url})
    body = os.urandom(size)
    origin.add("/same.bin", body)
    watch = create(fd, {"url": origin.url("/same.bin"), "destination": s3.url("mirror/same.bin"), "interval": "300ms"})
    now = checked(fd, watch["id"], 4)
    assert now["changes"] == 1 and now["lastResult"] == "unchanged" and now["sha256"] == sha256_hex(body)
    assert len(events(receiver, "watch.changed", watch["id"])) == 1
    assert s3.get_object_bytes("mirror/same.bin") == body
    # Written once: one PutObject, or one CompleteMultipartUpload; the later checks' parts given up.
    key = f"/{s3.bucket}/mirror/same.bin"
    writes = [r for r in s3.requests(path_prefix=key) if r.asks("PUT", None) or r.asks("POST", "uploadId")]
    assert len(writes) == 1, writes
    wait_for(lambda: s3.list_multipart_uploads() == [], message="no upload left open")


def test_a_check_whose_bytes_flow_past_the_next_time_is_let_finish(fetchd, origin, receiver):
    """A file that takes longer to download than the interval: the check goes on past the watch's
    next time while its bytes flow, and the next check comes after it, rather than each check
    failing with `timeout` and the file never placed."""
    fd = fetchd(env={**FAST, "FETCHD_WEBHOOK_URL": receiver.url})
    body = os.urandom(3 * 1024 * 1024)
    origin.add("/slow.bin", body, rate=1024 * 1024)
    watch = create(fd, {"url": origin.url("/slow.bin"), "destination": "slow.bin", "interval": "1s"})
    changed = wait_for(lambda: events(receiver, "watch.changed", watch["id"]), timeout=30, message="watch.changed")
    assert changed[0].data["download"]["sha256"] == sha256_hex(body)
    assert fd.dest("slow.bin").read_bytes() == body
    assert events(receiver, "watch.failed", watch["id"]) == []
    assert watch_of(fd, watch["id"])["changes"] == 1
    assert [job for job in fd.api.list_all() if job.get("watch") == watch["id"] and job["state"] == "failed"] == []


def test_an_origin_that_cannot_be_reached_fails_the_check_at_the_next_time(fetchd):
    """Nothing answers: the check waits the outage out until the watch's next time, then fails
    with `timeout`, and the next check begins."""
    fd = fetchd(env=FAST)
    watch = create(fd, {"url": f"http://127.0.0.1:{free_port()}/gone.bin", "destination": "gone.bin", "interval": "1s"})
    now = checked(fd, watch["id"], 1)
    assert now["lastResult"] == "failed" and now["lastError"]["code"] == "timeout", now
    checked(fd, watch["id"], 2)


def test_checks_always_due_do_not_starve_a_download_of_their_host(fetchd, origin):
    """One slot for the host, and three watches whose checks take longer than their interval, so
    that one of them is always due: a download for the same host still gets its turn, as each
    check goes back to the queue as a new arrival, not ahead of everything that came after it."""
    fd = fetchd(env={**FAST, "FETCHD_MAX_TRANSFERS_PER_HOST": "1"})
    watches = [create(fd, {"url": origin.add(f"/busy{i}.bin", os.urandom(300_000), rate=1024 * 1024),
                           "destination": f"busy/{i}.bin", "interval": "200ms"}) for i in range(3)]
    for watch in watches:
        checked(fd, watch["id"], 2)
    job = fd.api.submit({"url": origin.add("/meanwhile.bin", b"meanwhile\n"), "destination": "meanwhile.bin"})
    fd.api.wait_state(job["id"], "completed", timeout=20)
    assert fd.dest("meanwhile.bin").read_bytes() == b"meanwhile\n"


def test_a_failing_origin_sends_one_watch_failed_then_watch_changed_when_it_recovers(fetchd, origin, receiver):
    fd = fetchd(env={**FAST, "FETCHD_WEBHOOK_URL": receiver.url})
    origin.add("/flaky.bin", status=404)
    watch = create(fd, {"url": origin.url("/flaky.bin"), "destination": "flaky.bin", "interval": "300ms"})
    now = checked(fd, watch["id"], 3)
    assert now["lastResult"] == "failed" and now["lastError"]["code"] == "http_status"
    assert len(events(receiver, "watch.failed", watch["id"])) == 1
    body = b"back again\n"
    origin.add("/flaky.bin", body)
    changed = wait_for(lambda: events(receiver, "watch.changed", watch["id"]), message="watch.changed after recovery")
    assert changed[0].data["download"]["sha256"] == sha256_hex(body)
    assert fd.dest("flaky.bin").read_bytes() == body
    assert len(events(receiver, "watch.failed", watch["id"])) == 1


def test_pause_resume_check_patch_and_delete(fetchd, origin, receiver):
    fd = fetchd(env={**FAST, "FETCHD_WEBHOOK_URL": receiver.url})
    origin.add("/steer.bin", b"steered\n")
    watch = create(fd, {"url": origin.url("/steer.bin"), "destination": "steer.bin", "interval": "1h", "metadata": {"team": "a"}})
    first = checked(fd, watch["id"], 1)
    assert parse_rfc3339(first["nextCheckAt"]) > time.time() + 3000

    response = fd.api.post(f"/watches/{watch['id']}/check")
    assert response.status == 200, response.body
    assert checked(fd, watch["id"], 2)["lastResult"] == "unchanged"
    assert len(origin.requests_for("/steer.bin")) == 2

    paused = fd.api.post(f"/watches/{watch['id']}/pause")
    assert paused.status == 200 and paused.json()["state"] == "paused"
    assert fd.api.job(paused.json()["currentCheck"])["state"] == "paused"
    assert fd.api.post(f"/watches/{watch['id']}/check").status == 409
    resumed = fd.api.post(f"/watches/{watch['id']}/resume")
    assert resumed.status == 200 and resumed.json()["state"] == "active"
    assert fd.api.job(resumed.json()["currentCheck"])["state"] == "queued"

    etag = fd.api.get(f"/watches/{watch['id']}").header("ETag")
    patched = fd.api.request("PATCH", f"/watches/{watch['id']}", {"interval": "2h", "priority": 0.9},
                             headers={"If-Match": etag})
    assert patched.status == 200, patched.body
    assert patched.json()["interval"] == "2h" and patched.json()["priority"] == 0.9
    assert parse_rfc3339(patched.json()["nextCheckAt"]) > time.time() + 1.5 * 3600
    assert fd.api.job(patched.json()["currentCheck"])["priority"] == 0.9
    assert fd.api.request("PATCH", f"/watches/{watch['id']}", {"interval": "3h"}, headers={"If-Match": etag}).status == 412
    assert fd.api.request("PATCH", f"/watches/{watch['id']}", {"destination": "elsewhere.bin"}).status == 400
    assert fd.api.request("PATCH", f"/watches/{watch['id']}", {"interval": "1ms"}).status == 400

    deleted = fd.api.delete(f"/watches/{watch['id']}")
    assert deleted.status == 200
    assert fd.api.get(f"/watches/{watch['id']}").status == 404
    assert fd.api.job(deleted.json()["currentCheck"])["state"] == "cancelled"
    assert fd.dest("steer.bin").read_bytes() == b"steered\n"
    assert [w["id"] for w in fd.api.get("/watches").json()["items"]] == []
    # The cancelled check speaks through its watch, as every check does: no download.cancelled,
    # no session.finished.
    assert holds_for(lambda: [d.type for d in receiver.deliveries] == ["watch.changed"], 1.0), receiver.deliveries


def test_a_patch_reaches_the_waiting_check_whatever_the_field(fetchd, origin):
    """`checksumURL` and `session`, which a job cannot take, reach the check that waits as the
    fields a job can do: it is replaced by one made from the watch as patched, so the next change
    is verified against the new digest file."""
    fd = fetchd()
    v1, v2 = os.urandom(50_000), os.urandom(50_000)
    origin.add("/release.bin", v1)
    old_sums = origin.add("/old/SHA256SUMS", f"{sha256_hex(v1)}  release.bin\n".encode())
    watch = create(fd, {"url": origin.url("/release.bin"), "destination": "release.bin", "interval": "1h",
                        "checksumURL": old_sums, "session": "nightly"})
    first = checked(fd, watch["id"], 1)
    assert first["lastResult"] == "changed", first

    # The release moves on, its digests published somewhere new.
    new_sums = origin.add("/new/SHA256SUMS", f"{sha256_hex(v2)}  release.bin\n".encode())
    patched = fd.api.request("PATCH", f"/watches/{watch['id']}", {"checksumURL": new_sums, "session": "weekly"})
    assert patched.status == 200, patched.body
    check = fd.api.job(patched.json()["currentCheck"])
    assert (check["checksumURL"], check["session"], check["state"]) == (new_sums, "weekly", "queued")
    assert parse_rfc3339(patched.json()["nextCheckAt"]) == parse_rfc3339(first["nextCheckAt"])
    assert fd.api.job(first["currentCheck"])["state"] == "cancelled"
    origin.add("/release.bin", v2)
    assert fd.api.post(f"/watches/{watch['id']}/check").status == 200

    now = checked(fd, watch["id"], 2)
    assert now["lastResult"] == "changed", now
    assert fd.dest("release.bin").read_bytes() == v2


def test_a_patch_leaves_a_check_its_session_paused_paused(fetchd, origin):
    fd = fetchd()
    origin.add("/held.bin", b"one\n")
    watch = create(fd, {"url": origin.url("/held.bin"), "destination": "held.bin", "interval": "1h", "session": "feeds"})
    first = checked(fd, watch["id"], 1)
    assert fd.api.post("/sessions/feeds/pause").status == 200
    assert fd.api.job(first["currentCheck"])["state"] == "paused"

    patched = fd.api.request("PATCH", f"/watches/{watch['id']}", {"headers": {"X-Feed": "2"}})
    assert patched.status == 200, patched.body
    assert fd.api.job(patched.json()["currentCheck"])["state"] == "paused"
    origin.add("/held.bin", b"two\n")
    assert fd.api.post("/sessions/feeds/resume").status == 200
    assert fd.api.post(f"/watches/{watch['id']}/check").status == 200
    assert checked(fd, watch["id"], 2)["lastResult"] == "changed"
    assert fd.dest("held.bin").read_bytes() == b"two\n"
    assert origin.requests_for("/held.bin")[-1].headers.get("x-feed") == "2"


def test_a_patch_starts_a_running_check_again_with_the_new_fields(fetchd, origin):
    fd = fetchd()
    origin.add("/slow-old.bin", os.urandom(4 * 1024 * 1024), rate=256 * 1024)
    body = os.urandom(100_000)
    origin.add("/new.bin", body)
    watch = create(fd, {"url": origin.url("/slow-old.bin"), "destination": "moving.bin", "interval": "1h"})
    wait_for(lambda: fd.api.job(watch["currentCheck"])["state"] == "running" and origin.requests_for("/slow-old.bin"),
             message="the first check to run")

    patched = fd.api.request("PATCH", f"/watches/{watch['id']}", {"url": origin.url("/new.bin")})
    assert patched.status == 200, patched.body
    assert fd.api.wait_state(watch["currentCheck"], "cancelled")
    now = checked(fd, watch["id"], 1)
    assert now["lastResult"] == "changed" and now["sha256"] == sha256_hex(body), now
    assert fd.dest("moving.bin").read_bytes() == body


def test_patches_at_once_leave_the_watch_with_a_check_that_asks_what_it_does(fetchd, origin):
    """Two clients PATCH the url at the same instant, again and again: after each pair the watch
    has one live check, asking for the url the watch says (none left cancelled, none stale)."""
    fd = fetchd()
    urls = [origin.add("/feed-a.xml", b"<a/>\n"), origin.add("/feed-b.xml", b"<b/>\n")]
    watch = create(fd, {"url": urls[0], "destination": "feed.xml", "interval": "1h"})
    checked(fd, watch["id"], 1)
    for _ in range(150):
        together, statuses = threading.Barrier(2), []

        def patch(url: str, interval: str):
            together.wait()
            statuses.append(fd.api.request("PATCH", f"/watches/{watch['id']}", {"url": url, "interval": interval}).status)

        clients = [threading.Thread(target=patch, args=(url, interval)) for url, interval in zip(urls, ["2h", "3h"])]
        for client in clients:
            client.start()
        for client in clients:
            client.join()
        assert statuses == [200, 200]
        now = fd.api.get(f"/watches/{watch['id']}").json()
        check = fd.api.job(now["currentCheck"])
        assert (check["state"], check["url"]) == ("queued", now["url"]), (now, check)


def test_one_owner_per_destination(fetchd, origin):
    fd = fetchd(env=FAST)
    origin.add("/a.bin", b"a")
    origin.add("/slow.bin", os.urandom(256 * 1024), rate=16 * 1024)
    create(fd, {"url": origin.url("/a.bin"), "destination": "owned.bin", "interval": "1h"})
    assert fd.api.post("/watches", {"url": origin.url("/a.bin"), "destination": "owned.bin", "interval": "2h"}).status == 409
    assert fd.api.post("/downloads", {"url": origin.url("/a.bin"), "destination": "owned.bin", "overwrite": True}).status == 409
    live = fd.api.submit({"url": origin.url("/slow.bin"), "destination": "busy.bin"})
    assert fd.api.post("/watches", {"url": origin.url("/a.bin"), "destination": "busy.bin", "interval": "1h"}).status == 409
    fd.api.delete(f"/downloads/{live['id']}")


def test_bad_watches_are_refused_with_the_field(fetchd, origin):
    fd = fetchd(env=FAST)
    url = origin.url("/x")
    cases = [
        ({"url": url, "destination": "x"}, "interval"),
        ({"url": url, "destination": "x", "interval": "1m", "schedule": "* * * * *"}, "schedule"),
        ({"url": url, "destination": "x", "schedule": "61 * * * *"}, "schedule"),
        ({"url": url, "destination": "x", "interval": "soon"}, "interval"),
        ({"url": url, "destination": "../x", "interval": "1m"}, "destination"),
        ({"url": url, "destination": "x", "interval": "1m", "overwrite": True}, "overwrite"),
    ]
    for body, field in cases:
        response = fd.api.post("/watches", body)
        assert response.status == 400, (body, response.body)
        assert field in [e["field"] for e in response.json()["errors"]], (body, response.body)
    assert fd.api.post("/watches", {"url": url, "destination": "x", "interval": "100ms"}).status == 400


def test_a_schedule_checks_at_its_minutes(fetchd, origin):
    fd = fetchd(env=FAST)
    origin.add("/cron.bin", b"cron\n")
    watch = create(fd, {"url": origin.url("/cron.bin"), "destination": "cron.bin", "schedule": "*/5 * * * *"})
    assert watch["schedule"] == "*/5 * * * *" and watch["interval"] is None
    now = checked(fd, watch["id"], 1)
    due = parse_rfc3339(now["nextCheckAt"])
    # A multiple of five minutes spread by at most a tenth of the five: the first such time after
    # the check at creation, which may still lie in the five minutes that check fell in.
    last = parse_rfc3339(now["lastCheckedAt"])
    assert due % 300 < 30, now
    assert due - 300 <= last < due, now


def test_a_check_missed_while_down_runs_once_at_start(fetchd, origin):
    fd = fetchd(env=FAST)
    origin.add("/missed.bin", b"missed\n")
    watch = create(fd, {"url": origin.url("/missed.bin"), "destination": "missed.bin", "interval": "3s"})
    checked(fd, watch["id"], 1)
    fd.kill()
    time.sleep(7)  # fetchd is down across two due times
    before = len(origin.requests_for("/missed.bin"))
    fd.start()
    now = checked(fd, watch["id"], 2)
    # One check for the missed times, and none more until the watch's next time.
    assert len(origin.requests_for("/missed.bin")) == before + 1
    due = parse_rfc3339(now["nextCheckAt"])
    assert due > parse_rfc3339(now["lastCheckedAt"])
    assert holds_for(lambda: len(origin.requests_for("/missed.bin")) == before + 1, due - time.time() - 0.3)


@needs_postgres
def test_three_nodes_on_postgresql_check_once_per_due_time(tmp_path, origin):
    origin.add("/shared.bin", b"shared\n")
    with database_schema() as url:
        nodes = Cluster(tmp_path, url, env=FAST)
        try:
            fd = nodes.nodes[0]
            watch = create(fd, {"url": origin.url("/shared.bin"), "destination": "shared.bin", "interval": "1s"})
            now = checked(fd, watch["id"], 6)
            # Every node's scheduler saw each due time; one of them claimed each check.
            requests = origin.requests_for("/shared.bin")
            assert abs(len(requests) - now["checks"]) <= 1  # a check may be under way as the watch is read
            starts = sorted(r.time for r in requests)
            assert all(later - earlier > 0.5 for earlier, later in zip(starts, starts[1:])), starts
            assert nodes.nodes[2].api.get(f"/watches/{watch['id']}").json()["checks"] >= 6
        finally:
            nodes.close()
