"""A finished file's name is durable before its completion is committed: when the fsync of its
directory fails (the disk reports EIO), the job stays `running` with its partial data and no
webhook goes out, and it completes once the directory can be synced. The fault is injected into
the real fsync(2) by an LD_PRELOAD library built here with the toolchain's clang."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from e2e_support import holds_for, sha256_hex, wait_for

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
    compiler = shutil.which("clang") or shutil.which("cc")
    if compiler is None:
        pytest.skip("no C compiler to build the fault-injecting library")
    source = tmp_path / "fail_directory_fsync.c"
    source.write_text(SHIM)
    library = tmp_path / "fail_directory_fsync.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-O1", "-o", str(library), str(source), "-ldl"], check=True)
    flag = tmp_path / "directories-fail"
    flag.touch()
    return {"LD_PRELOAD": str(library), "FAIL_DIRECTORY_FSYNC_WHILE": str(flag)}, flag


def test_a_completion_waits_until_its_directory_is_synced(fetchd, origin, receiver, failing_directory_sync):
    env, flag = failing_directory_sync
    data = os.urandom(300_000)
    url = origin.add("/dirsync.bin", data)
    fd = fetchd(env=env)

    job = fd.api.submit({"url": url, "destination": "synced/dirsync.bin", "webhookURL": receiver.url})

    # The body is in and linked into place, but its name is not durable: not completed, no webhook.
    wait_for(lambda: "names not durable" in fd.log_text(), timeout=20)
    assert fd.dest("synced/dirsync.bin").read_bytes() == data
    assert holds_for(lambda: fd.api.get(f"/downloads/{job['id']}").json()["state"] == "running", 1.0)
    assert fd.partial_path(job["id"]).exists()
    assert receiver.events("download.completed", job["id"]) == []

    Path(flag).unlink()  # the disk recovers

    done = fd.api.wait_state(job["id"], "completed")
    assert done["sha256"] == sha256_hex(data)
    assert fd.dest("synced/dirsync.bin").read_bytes() == data
    deliveries = receiver.wait_event("download.completed", job["id"])
    assert all(d.verified for d in deliveries)
    wait_for(lambda: not fd.partial_path(job["id"]).exists())
