"""Uploads end to end: fetchd sends a file from its upload root to a real nginx that takes PUT
(its WebDAV module), and the file on nginx's disk is the source, byte for byte."""
import hashlib
import os
import time
from pathlib import Path

import pytest

from e2e_support import preload_library, wait_for
from nginx_support import LoopbackNginx

class DavServer(LoopbackNginx):
    """nginx taking PUT under /in/ into `root`; /moved/report.csv answers 307 to /in/moved/, /refuses
    403, and /receipt a JSON body."""

    LOCATIONS = """
        location /in/ { dav_methods PUT; create_full_put_path on; }
        location = /moved/report.csv { return 307 /in/moved/report.csv; }
        location = /refuses { return 403; }
        location = /receipt { default_type application/json; return 200 '{"receipt":"r-42"}'; }"""

    def __init__(self, workdir: Path):
        super().__init__(workdir, "dav", "$request_method $uri $status $request_length", self.LOCATIONS)
        (self.root / "in").mkdir()

    def requests(self) -> list[list[str]]:
        return self.log_lines()


@pytest.fixture
def dav(tmp_path):
    server = DavServer(tmp_path)
    yield server
    server.stop()


def source(fd, path: str, body: bytes) -> Path:
    file = fd.uploads / path
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_bytes(body)
    return file


def test_an_upload_puts_the_source_on_the_server_with_its_digest(fetchd, dav, receiver):
    fd = fetchd()
    body = os.urandom(3 * 1024 * 1024 + 17)
    source(fd, "exports/2026-12.bin", body)
    resp = fd.api.post("/uploads", {"url": dav.url("/in/2026-12.bin"), "source": "exports/2026-12.bin",
                                    "webhookURL": receiver.url})
    assert resp.status == 201, resp
    upload = resp.json()
    assert upload["kind"] == "upload" and upload["bytesTotal"] == len(body)
    assert resp.headers["Location"] == f"/uploads/{upload['id']}"

    done = wait_for(lambda: (u := fd.api.get(f"/uploads/{upload['id']}").json())["state"] == "completed" and u,
                    timeout=20, message="the upload to complete")
    assert (dav.root / "in" / "2026-12.bin").read_bytes() == body
    assert done["sha256"] == hashlib.sha256(body).hexdigest()
    assert done["bytesSent"] == len(body) and done["reply"]["status"] == 201
    assert [r[:3] for r in dav.requests()] == [["PUT", "/in/2026-12.bin", "201"]]
    # Announced as an upload, signed, with the Upload as its data.
    [delivery] = receiver.wait_event("upload.completed", upload["id"])
    assert delivery.verified and delivery.payload["data"]["kind"] == "upload"
    assert delivery.payload["data"]["sha256"] == hashlib.sha256(body).hexdigest()


def test_a_64_mib_put_lands_byte_exact_and_the_reply_is_kept(fetchd, dav):
    fd = fetchd()
    body = os.urandom(64 * 1024 * 1024)
    source(fd, "backup.tar", body)
    upload = fd.api.post("/uploads", {"url": dav.url("/in/backup.tar"), "source": "backup.tar"}).json()
    done = wait_for(lambda: (u := fd.api.get(f"/uploads/{upload['id']}").json())["state"] == "completed" and u,
                    timeout=60, message="the upload to complete")
    assert (dav.root / "in" / "backup.tar").read_bytes() == body
    assert done["sha256"] == hashlib.sha256(body).hexdigest()
    assert done["reply"]["status"] == 201 and done["reply"]["location"].endswith("/in/backup.tar")
    assert [r[:3] for r in dav.requests()] == [["PUT", "/in/backup.tar", "201"]]


def test_a_reply_destination_keeps_the_servers_answer_as_a_file(fetchd, dav):
    fd = fetchd()
    source(fd, "report.csv", b"id,total\n1,42\n")
    upload = fd.api.post("/uploads", {"url": dav.url("/receipt"), "source": "report.csv",
                                      "replyDestination": "receipts/report.json"}).json()
    assert upload["replyDestination"] == "receipts/report.json"
    done = wait_for(lambda: (u := fd.api.get(f"/uploads/{upload['id']}").json())["state"] == "completed" and u,
                    timeout=20, message="the upload to complete")
    assert (fd.root / "receipts" / "report.json").read_bytes() == b'{"receipt":"r-42"}'
    assert done["reply"]["status"] == 200 and done["reply"]["body"] is None
    # A reply destination that holds a file already is refused, as a download's would be.
    resp = fd.api.post("/uploads", {"url": dav.url("/receipt"), "source": "report.csv",
                                    "replyDestination": "receipts/report.json"})
    assert resp.status == 409


def test_a_307_is_followed_with_the_body_again(fetchd, dav):
    fd = fetchd()
    body = b"id,total\n1,42\n"
    source(fd, "report.csv", body)
    upload = fd.api.post("/uploads", {"url": dav.url("/moved/report.csv"), "source": "report.csv",
                                      "contentType": "text/csv"}).json()
    done = wait_for(lambda: (u := fd.api.get(f"/uploads/{upload['id']}").json())["state"] == "completed" and u,
                    timeout=20, message="the upload to complete")
    assert (dav.root / "in" / "moved" / "report.csv").read_bytes() == body
    assert done["sha256"] == hashlib.sha256(body).hexdigest()
    assert [r[:3] for r in dav.requests()] == [["PUT", "/moved/report.csv", "307"], ["PUT", "/in/moved/report.csv", "201"]]


def test_a_refusal_fails_the_upload_with_the_servers_answer(fetchd, dav):
    fd = fetchd()
    source(fd, "a.bin", b"x" * 100)
    upload = fd.api.post("/uploads", {"url": dav.url("/refuses"), "source": "a.bin"}).json()
    failed = wait_for(lambda: (u := fd.api.get(f"/uploads/{upload['id']}").json())["state"] == "failed" and u,
                      timeout=20, message="the upload to fail")
    assert failed["error"]["code"] == "http_status" and failed["httpStatus"] == 403
    assert failed["reply"]["status"] == 403


# unlinkat(2) of the name HOLD_UNLINK_OF never returns: it makes the file HOLD_UNLINK_REACHED and
# waits, so that fetchd can be killed between an upload's committed completion and its source's removal.
HOLD_UNLINK = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int unlinkat(int dir, const char *name, int flags) {
    static int (*real)(int, const char *, int);
    if (!real) real = (int (*)(int, const char *, int))dlsym(RTLD_NEXT, "unlinkat");
    const char *held = getenv("HOLD_UNLINK_OF");
    if (held && strcmp(name, held) == 0) {
        close(open(getenv("HOLD_UNLINK_REACHED"), O_WRONLY | O_CREAT, 0600));
        for (;;) pause();
    }
    return real(dir, name, flags);
}
"""


def test_delete_source_left_undone_by_a_kill_is_done_at_the_next_start(fetchd, dav, receiver, tmp_path):
    reached = tmp_path / "removal-reached"
    fd = fetchd(env={"LD_PRELOAD": str(preload_library(tmp_path, "hold_unlink", HOLD_UNLINK)),
                     "HOLD_UNLINK_OF": "sent-once.csv", "HOLD_UNLINK_REACHED": str(reached)})
    body = os.urandom(100_000)
    file = source(fd, "exports/sent-once.csv", body)
    upload = fd.api.post("/uploads", {"url": dav.url("/in/sent-once.csv"), "source": "exports/sent-once.csv",
                                      "deleteSource": True, "webhookURL": receiver.url}).json()
    wait_for(reached.exists, timeout=20, message="the source's removal to begin")
    # Committed, announced, and the source still there when fetchd is killed.
    assert fd.api.get(f"/uploads/{upload['id']}").json()["state"] == "completed" and file.exists()
    fd.kill()
    del fd.extra_env["LD_PRELOAD"]
    fd.start()

    wait_for(lambda: not file.exists(), timeout=20, message="the source to be removed")
    done = fd.api.get(f"/uploads/{upload['id']}").json()
    assert done["state"] == "completed" and done["sha256"] == hashlib.sha256(body).hexdigest()
    # Sent once: the start removed the source of an upload it did not send again.
    assert (dav.root / "in" / "sent-once.csv").read_bytes() == body
    assert [r[:3] for r in dav.requests()] == [["PUT", "/in/sent-once.csv", "201"]]
    assert all(d.verified for d in receiver.wait_event("upload.completed", upload["id"]))
    assert not fd.partial_path(upload["id"]).exists()


def test_a_source_changed_after_submit_is_not_sent(fetchd, dav):
    fd = fetchd()
    file = source(fd, "grows.log", b"first line\n")
    upload = fd.api.post("/uploads", {"url": dav.url("/in/grows.log"), "source": "grows.log",
                                      "earliestBeginDate": "2099-01-01T00:00:00Z"}).json()
    with open(file, "ab") as f:
        f.write(b"second line\n")
    assert fd.api.request("PATCH", f"/uploads/{upload['id']}", {"earliestBeginDate": None}).status == 200
    failed = wait_for(lambda: (u := fd.api.get(f"/uploads/{upload['id']}").json())["state"] == "failed" and u,
                      timeout=20, message="the upload to fail")
    assert failed["error"]["code"] == "source_changed"
    assert not (dav.root / "in" / "grows.log").exists() and dav.requests() == []


def test_a_source_that_does_not_match_its_checksum_is_not_sent(fetchd, dav):
    fd = fetchd()
    body = b"ledger 2026-12\n" * 1000
    source(fd, "ledger.txt", body)
    wrong = fd.api.post("/uploads", {"url": dav.url("/in/ledger.txt"), "source": "ledger.txt",
                                     "checksum": "sha256:" + "0" * 64}).json()
    failed = wait_for(lambda: (u := fd.api.get(f"/uploads/{wrong['id']}").json())["state"] == "failed" and u,
                      timeout=20, message="the upload to fail")
    assert failed["error"]["code"] == "checksum_mismatch" and dav.requests() == []
    right = fd.api.post("/uploads", {"url": dav.url("/in/ledger.txt"), "source": "ledger.txt",
                                     "checksum": "md5:" + hashlib.md5(body).hexdigest()}).json()
    wait_for(lambda: fd.api.get(f"/uploads/{right['id']}").json()["state"] == "completed", timeout=20,
             message="the upload to complete")
    assert (dav.root / "in" / "ledger.txt").read_bytes() == body


def test_uploads_share_their_own_bandwidth_cap(fetchd, dav):
    # A correctness bound, not a speed target: under the cap the bytes cannot go sooner than size / cap.
    fd = fetchd(env={"FETCHD_MAX_UPLOAD_BANDWIDTH": "1MiB"})
    bodies = {f"capped{i}.bin": os.urandom(1024 * 1024) for i in range(3)}
    for name, body in bodies.items():
        source(fd, name, body)
    started = time.monotonic()
    jobs = {name: fd.api.post("/uploads", {"url": dav.url(f"/in/{name}"), "source": name}).json() for name in bodies}
    for name, job in jobs.items():
        wait_for(lambda: fd.api.get(f"/uploads/{job['id']}").json()["state"] == "completed", timeout=30,
                 message="the uploads to complete")
    elapsed = time.monotonic() - started
    for name, body in bodies.items():
        assert (dav.root / "in" / name).read_bytes() == body
    # 3 MiB at 1 MiB/s; the first refill may let a tenth of a second through at once.
    assert elapsed >= 3 * 0.9, f"3 MiB under a 1 MiB/s upload cap went in {elapsed:.2f} s"


def test_a_source_outside_the_upload_root_is_refused(fetchd):
    fd = fetchd()
    fd.uploads.mkdir(parents=True, exist_ok=True)
    os.symlink("/etc/passwd", fd.uploads / "passwd")
    resp = fd.api.post("/uploads", {"url": "http://127.0.0.1:9/x", "source": "passwd"})
    assert resp.status == 400 and resp.json()["errors"] == [{"field": "source", "message": "is a symbolic link"}]
    resp = fd.api.post("/uploads", {"url": "http://127.0.0.1:9/x", "source": "../x"})
    assert resp.status == 400
