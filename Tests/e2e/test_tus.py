"""tus uploads end to end, against aiohttp-tus (tus_server.py): the file the server assembles is
the source byte for byte, a crash resumes from the server's offset (or completes, when the server
had the whole file), and a job that ends without completing leaves no resource open on the server."""
import hashlib
import os

import pytest

from e2e_support import preload_library, wait_for
from tus_support import TusServer

MiB = 1024 * 1024


@pytest.fixture
def tus(tmp_path):
    server = TusServer(tmp_path)
    yield server
    server.stop()


def source(fd, path: str, body: bytes):
    file = fd.uploads / path
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_bytes(body)
    return file


def upload(fd, tus, path: str, **fields) -> dict:
    resp = fd.api.post("/uploads", {"url": tus.endpoint, "source": path, "protocol": "tus", **fields})
    assert resp.status == 201, resp
    assert resp.json()["protocol"] == "tus"
    return resp.json()


def wait_upload(fd, job_id: str, state: str, timeout: float = 60) -> dict:
    return wait_for(lambda: (u := fd.api.get(f"/uploads/{job_id}").json())["state"] == state and u,
                    timeout=timeout, message=f"the upload to be {state}")


def patched_bytes(tus) -> int:
    """Bytes of every PATCH the server was sent, whole or cut off."""
    return sum(length for method, _, length, _ in tus.requests() if method == "PATCH")


def terminations(tus) -> list[int]:
    """The statuses the server answered DELETEs with (logged once each was handled)."""
    return [status for method, _, _, status in tus.requests() if method == "DELETE"]


def test_a_tus_upload_assembles_the_source_on_the_server(fetchd, tus):
    fd = fetchd(env={"FETCHD_TUS_CHUNK_SIZE": "1MiB"})
    body = os.urandom(3 * MiB + 5)
    source(fd, "backups/db.dump", body)
    job = upload(fd, tus, "backups/db.dump")
    done = wait_upload(fd, job["id"], "completed")
    assert (tus.uploads / "db.dump").read_bytes() == body
    assert done["sha256"] == hashlib.sha256(body).hexdigest() and done["bytesSent"] == len(body)
    # What the server takes, one creation, then the file in chunks of 1 MiB, each at the offset
    # the last one reached (aiohttp-tus offers no checksums: none sent).
    requests = tus.requests()
    assert [(m, s) for m, _, _, s in requests[:2]] == [("OPTIONS", 204), ("POST", 201)]
    assert [(m, n, s) for m, _, n, s in requests[2:]] == [("PATCH", MiB, 204)] * 3 + [("PATCH", 5, 204)]
    resource = requests[2][1]
    assert done["reply"]["status"] == 204 and done["reply"]["location"].endswith(resource)
    assert tus.open_resources() == []


def test_a_tus_upload_killed_mid_file_resumes_from_the_servers_offset(fetchd, tus):
    fd = fetchd(env={"FETCHD_TUS_CHUNK_SIZE": "4MiB"})
    body = os.urandom(64 * MiB)
    source(fd, "video.mp4", body)
    job = upload(fd, tus, "video.mp4", maxBytesPerSecond=16 * MiB)
    wait_for(lambda: fd.api.get(f"/uploads/{job['id']}").json()["bytesSent"] >= 0.4 * len(body), timeout=30,
             message="40 % of the file to be sent")
    fd.kill()
    fd.start()
    done = wait_upload(fd, job["id"], "completed")
    assert (tus.uploads / "video.mp4").read_bytes() == body
    assert done["sha256"] == hashlib.sha256(body).hexdigest()
    # After the restart the server was asked for its offset, and only the rest went.
    methods = [m for m, _, _, _ in tus.requests()]
    assert methods.count("POST") == 1 and "HEAD" in methods
    assert patched_bytes(tus) <= 1.1 * len(body)


# rename(2) to a name under HOLD_RENAME_UNDER renames, then never returns: it makes the file
# HOLD_RENAME_REACHED and waits, so that fetchd can be killed once a tus upload's witness is in the
# staging directory and before its completion is committed.
HOLD_RENAME = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int rename(const char *from, const char *to) {
    static int (*real)(const char *, const char *);
    if (!real) real = (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
    int done = real(from, to);
    const char *held = getenv("HOLD_RENAME_UNDER");
    if (held && strncmp(to, held, strlen(held)) == 0) {
        close(open(getenv("HOLD_RENAME_REACHED"), O_WRONLY | O_CREAT, 0600));
        for (;;) pause();
    }
    return done;
}
"""


def test_killed_after_the_server_took_the_whole_file_the_upload_completes_without_sending_it_again(
        fetchd, tus, receiver, tmp_path):
    reached = tmp_path / "witness-reached"
    fd = fetchd(env={"FETCHD_TUS_CHUNK_SIZE": "1MiB", "LD_PRELOAD": str(preload_library(tmp_path, "hold_rename", HOLD_RENAME)),
                     "HOLD_RENAME_REACHED": str(reached)}, start=False)
    fd.extra_env["HOLD_RENAME_UNDER"] = str(fd.partial_path("any").parent) + "/"
    fd.start()
    body = os.urandom(3 * MiB + 5)
    file = source(fd, "exports/orders.csv", body)
    job = upload(fd, tus, "exports/orders.csv", deleteSource=True, webhookURL=receiver.url)
    wait_for(reached.exists, timeout=30, message="the server to take the whole file")
    # aiohttp-tus has the file and has removed the finished upload's resource; the completion is
    # not committed when fetchd is killed.
    assert (tus.uploads / "orders.csv").read_bytes() == body and tus.open_resources() == []
    assert fd.api.get(f"/uploads/{job['id']}").json()["state"] == "running"
    fd.kill()
    del fd.extra_env["LD_PRELOAD"]
    fd.start()

    done = wait_upload(fd, job["id"], "completed")
    assert done["sha256"] == hashlib.sha256(body).hexdigest() and done["reply"]["status"] == 204
    assert (tus.uploads / "orders.csv").read_bytes() == body
    # After the restart: the offset asked, the resource gone, and nothing created or sent again.
    requests = [(m, s) for m, _, _, s in tus.requests()]
    assert requests.count(("POST", 201)) == 1 and requests[-1] == ("HEAD", 404)
    assert patched_bytes(tus) == len(body)
    assert all(d.verified for d in receiver.wait_event("upload.completed", job["id"]))
    wait_for(lambda: not file.exists(), timeout=20, message="the source to be removed")
    assert not fd.partial_path(job["id"]).exists()


def test_a_source_appended_to_mid_upload_fails_and_the_resource_is_terminated(fetchd, tus):
    fd = fetchd(env={"FETCHD_TUS_CHUNK_SIZE": "1MiB"})
    file = source(fd, "app.log", os.urandom(16 * MiB))
    job = upload(fd, tus, "app.log", maxBytesPerSecond=4 * MiB)
    wait_for(lambda: fd.api.get(f"/uploads/{job['id']}").json()["bytesSent"] >= 2 * MiB, timeout=30,
             message="the upload to be under way")
    with open(file, "ab") as f:
        f.write(b"one more line\n")
    failed = wait_upload(fd, job["id"], "failed")
    assert failed["error"]["code"] == "source_changed"
    wait_for(lambda: terminations(tus) == [204], timeout=20, message="the resource to be terminated")
    assert tus.open_resources() == []
    assert not (tus.uploads / "app.log").exists()


def test_cancel_terminates_the_resource(fetchd, tus):
    fd = fetchd(env={"FETCHD_TUS_CHUNK_SIZE": "1MiB"})
    source(fd, "big.bin", os.urandom(16 * MiB))
    job = upload(fd, tus, "big.bin", maxBytesPerSecond=2 * MiB)
    wait_for(lambda: fd.api.get(f"/uploads/{job['id']}").json()["bytesSent"] > 0, timeout=30,
             message="the upload to be under way")
    assert fd.api.delete(f"/uploads/{job['id']}").status == 200
    wait_upload(fd, job["id"], "cancelled")
    wait_for(lambda: terminations(tus) == [204], timeout=20, message="the resource to be terminated")
    assert tus.open_resources() == []


def test_a_paused_upload_goes_on_with_its_resource(fetchd, tus):
    fd = fetchd(env={"FETCHD_TUS_CHUNK_SIZE": "1MiB"})
    body = os.urandom(8 * MiB)
    source(fd, "photos.tar", body)
    job = upload(fd, tus, "photos.tar", maxBytesPerSecond=2 * MiB)
    wait_for(lambda: fd.api.get(f"/uploads/{job['id']}").json()["bytesSent"] >= 2 * MiB, timeout=30,
             message="the upload to be under way")
    assert fd.api.post(f"/uploads/{job['id']}/pause").status == 200
    wait_upload(fd, job["id"], "paused")
    assert fd.api.request("PATCH", f"/uploads/{job['id']}", {"maxBytesPerSecond": None}).status == 200
    assert fd.api.post(f"/uploads/{job['id']}/resume").status == 200
    wait_upload(fd, job["id"], "completed")
    assert (tus.uploads / "photos.tar").read_bytes() == body
    assert [m for m, _, _, _ in tus.requests()].count("POST") == 1


def test_a_server_with_the_checksum_extension_gets_each_chunks_checksum(fetchd, tmp_path):
    tus = TusServer(tmp_path, ("--checksum", "--refuse-first-checksum"))
    try:
        fd = fetchd(env={"FETCHD_TUS_CHUNK_SIZE": "1MiB"})
        body = os.urandom(2 * MiB + 1)
        source(fd, "ledger.db", body)
        done = wait_upload(fd, upload(fd, tus, "ledger.db")["id"], "completed")
        assert (tus.uploads / "ledger.db").read_bytes() == body and done["sha256"] == hashlib.sha256(body).hexdigest()
        # The first chunk was refused as damaged (460): after the offset was asked again it went again.
        patches = [(length, status) for method, _, length, status in tus.requests() if method == "PATCH"]
        assert patches == [(MiB, 460), (MiB, 204), (MiB, 204), (1, 204)]
    finally:
        tus.stop()

