"""A finished file's name is durable before its completion is committed, at the end of a transfer
and when a start finds it placed: when the fsync of its directory fails (the disk reports EIO),
the job stays `running` with its partial data and no webhook goes out, and it completes once the
directory can be synced. The same fault holds a watch's check, an upload's reply, and a job a
client cancels or pauses meanwhile, placed but not committed while fetchd is killed: the next
start ends each right. The fault is injected into the real fsync(2) by an LD_PRELOAD library
built here with the toolchain's clang."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from e2e_support import holds_for, preload_library, sha256_hex, wait_for
from test_uploads import DavServer, source
from test_watches import create, events, watch_of

# fsync(2) of a directory fails with EIO while the file named by FAIL_DIRECTORY_FSYNC_WHILE exists.
SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    const char *flag = getenv("FAIL_DIRECTORY_FSYNC_WHILE");
    struct stat st;
    if (flag && access(flag, F_OK) == 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        errno = EIO;
        return -1;
    }
    return real(fd);
}
"""


@pytest.fixture
def failing_directory_sync(tmp_path):
    library = preload_library(tmp_path, "fail_directory_fsync", SHIM)
    flag = tmp_path / "directories-fail"
    flag.touch()
    return {"LD_PRELOAD": str(library), "FAIL_DIRECTORY_FSYNC_WHILE": str(flag)}, flag


def held_back(fd, receiver, job_id: str) -> bool:
    """The job is still `running` with its partial data, and no completion went out."""
    return (fd.api.get(f"/downloads/{job_id}").json()["state"] == "running" and fd.partial_path(job_id).exists()
            and receiver.events("download.completed", job_id) == [])


def assert_completed(fd, receiver, job_id: str, destination: str, data: bytes) -> None:
    done = fd.api.wait_state(job_id, "completed")
    assert done["sha256"] == sha256_hex(data)
    assert fd.dest(destination).read_bytes() == data
    assert all(d.verified for d in receiver.wait_event("download.completed", job_id))
    wait_for(lambda: not fd.partial_path(job_id).exists())


def a_held_back_job(fetchd, origin, receiver, failing_directory_sync, destination: str):
    """A fetchd whose directory syncs fail, and a job of it whose file is placed but whose
    completion waits: (fetchd, job, its body, the flag that keeps the syncs failing)."""
    env, flag = failing_directory_sync
    data = os.urandom(300_000)
    url = origin.add("/" + destination, data)
    fd = fetchd(env=env)
    job = fd.api.submit({"url": url, "destination": destination, "webhookURL": receiver.url})
    wait_for(lambda: "names not durable" in fd.log_text(), timeout=20)
    return fd, job, data, flag


def test_a_completion_waits_until_its_directory_is_synced(fetchd, origin, receiver, failing_directory_sync):
    fd, job, data, flag = a_held_back_job(fetchd, origin, receiver, failing_directory_sync, "synced/dirsync.bin")

    # The body is in and linked into place, but its name is not durable.
    assert fd.dest("synced/dirsync.bin").read_bytes() == data
    assert holds_for(lambda: held_back(fd, receiver, job["id"]), 1.0)

    Path(flag).unlink()  # the disk recovers

    assert_completed(fd, receiver, job["id"], "synced/dirsync.bin", data)


def test_a_completion_found_placed_at_start_waits_for_its_directory_too(fetchd, origin, receiver, failing_directory_sync):
    fd, job, data, flag = a_held_back_job(fetchd, origin, receiver, failing_directory_sync, "recovered/file.bin")

    fd.kill()  # the file is placed, its completion not committed
    fd.start()  # and its directory still cannot be synced
    wait_for(lambda: "placed download not made durable" in fd.logs[-1].read_text(errors="replace"), timeout=20)
    assert held_back(fd, receiver, job["id"])

    kill_and_start_with_syncs_working(fd, flag)

    assert_completed(fd, receiver, job["id"], "recovered/file.bin", data)


@pytest.mark.parametrize("killed", [False, True], ids=["running-on", "killed"])
def test_a_job_cancelled_while_its_completion_waits_leaves_no_file(fetchd, origin, receiver, failing_directory_sync, killed):
    fd, job, data, flag = a_held_back_job(fetchd, origin, receiver, failing_directory_sync, "cancelled/file.bin")
    assert fd.api.delete(f"/downloads/{job['id']}").status == 200
    if killed:
        kill_and_start_with_syncs_working(fd, flag)
    else:
        Path(flag).unlink()

    # The refused completion takes its file back out, the partial data goes with the job.
    wait_for(lambda: not fd.partial_path(job["id"]).exists(), message="the partial data to go")
    assert fd.api.job(job["id"])["state"] == "cancelled"
    assert not fd.dest("cancelled/file.bin").exists()
    assert receiver.wait_event("download.cancelled", job["id"]) and receiver.events("download.completed", job["id"]) == []


def test_a_job_paused_while_its_completion_waits_completes_once_resumed(fetchd, origin, receiver, failing_directory_sync):
    fd, job, data, flag = a_held_back_job(fetchd, origin, receiver, failing_directory_sync, "paused/file.bin")
    assert fd.api.post(f"/downloads/{job['id']}/pause").status == 200
    kill_and_start_with_syncs_working(fd, flag)

    # Taken back out at the start, not met as someone else's file once resumed.
    assert fd.api.job(job["id"])["state"] == "paused" and not fd.dest("paused/file.bin").exists()
    assert fd.api.post(f"/downloads/{job['id']}/resume").status == 200
    assert_completed(fd, receiver, job["id"], "paused/file.bin", data)


def kill_and_start_with_syncs_working(fd, flag) -> None:
    fd.kill()  # the file is placed, its completion not committed
    Path(flag).unlink()
    fd.start()


def test_a_watch_check_placed_before_a_kill_is_recovered_through_its_watch(fetchd, origin, receiver, failing_directory_sync):
    env, flag = failing_directory_sync
    fd = fetchd(env={**env, "FETCHD_WEBHOOK_URL": receiver.url})
    data = os.urandom(100_000)
    watch = create(fd, {"url": origin.add("/feed.bin", data), "destination": "held/feed.bin", "interval": "1h"})
    wait_for(lambda: "names not durable" in fd.log_text(), timeout=20)
    kill_and_start_with_syncs_working(fd, flag)

    changed = wait_for(lambda: events(receiver, "watch.changed", watch["id"]), message="watch.changed")
    assert changed[0].verified and changed[0].data["download"]["sha256"] == sha256_hex(data)
    now = watch_of(fd, watch["id"])
    assert now["changes"] == 1 and now["sha256"] == sha256_hex(data) and now["currentCheck"] != watch["currentCheck"]
    assert fd.dest("held/feed.bin").read_bytes() == data
    # The check speaks through its watch only, after a crash as always.
    assert holds_for(lambda: [d.type for d in receiver.deliveries] == ["watch.changed"], 1.0), receiver.deliveries


def test_an_upload_whose_reply_was_placed_before_a_kill_completes(fetchd, tmp_path, receiver, failing_directory_sync):
    env, flag = failing_directory_sync
    dav = DavServer(tmp_path / "dav")
    try:
        fd = fetchd(env=env)
        body = b"id,total\n1,42\n"
        source(fd, "report.csv", body)
        upload = fd.api.post("/uploads", {"url": dav.url("/receipt"), "source": "report.csv", "replyDestination": "receipts/r.json",
                                          "deleteSource": True, "webhookURL": receiver.url}).json()
        wait_for(lambda: "names not durable" in fd.log_text(), timeout=20)
        assert (fd.root / "receipts" / "r.json").exists()
        kill_and_start_with_syncs_working(fd, flag)

        # Sent again (a plain upload cannot go on), its reply placed again, not taken for another's.
        done = wait_for(lambda: (u := fd.api.get(f"/uploads/{upload['id']}").json())["state"] in ("completed", "failed") and u,
                        timeout=30, message="the upload to end")
        assert done["state"] == "completed", done["error"]
        assert done["sha256"] == sha256_hex(body) and done["reply"]["status"] == 200
        assert (fd.root / "receipts" / "r.json").read_bytes() == b'{"receipt":"r-42"}'
        assert not (fd.uploads / "report.csv").exists()
        assert all(d.verified for d in receiver.wait_event("upload.completed", upload["id"]))
    finally:
        dav.stop()
