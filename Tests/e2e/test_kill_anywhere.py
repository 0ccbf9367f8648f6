"""kill -9 at any instant: every kind of transfer runs at once — downloads to files (one over
four connections), into objects (one over three), from FTP and SFTP; uploads by PUT, to s3://,
by tus, to FTP and SFTP — while fetchd is killed 40 times at instants 10–400 ms apart (a fixed
seed, so the same schedule every run). Each job must then complete with the right bytes where
they belong, its digest in the API, a signed completion webhook, and no multipart upload or tus
resource left open."""

from __future__ import annotations

import os
import random
import secrets
import time
from typing import Callable

import pytest

from e2e_support import sha256_hex, wait_for
from file_servers import Files, Sshd, Vsftpd
from test_uploads import DavServer
from tus_support import TusServer

if os.geteuid() != 0:
    pytest.skip("the file servers log in system accounts: run as root", allow_module_level=True)

MiB = 1 << 20
PASSWORD = "pw-" + secrets.token_hex(8)
KILLS = 40
SEED = 7


@pytest.fixture
def servers(tmp_path):
    """The file servers (vsftpd, sshd), nginx taking PUT and a tus server, stopped however the test ends."""
    files = Files()
    started = []
    try:
        started.append(ftp := Vsftpd(tmp_path / "vsftpd", files, PASSWORD))
        started.append(sftp := Sshd(tmp_path / "sshd", PASSWORD))
        started.append(dav := DavServer(tmp_path / "dav"))
        started.append(tus := TusServer(tmp_path / "tus"))
        yield files, ftp, sftp, dav, tus
    finally:
        for server in started:
            server.stop()
        files.remove()


def test_every_kind_of_job_ends_right_through_40_kills_at_random_instants(fetchd, origin, s3, receiver, servers):
    files, ftp, sftp, dav, tus = servers
    fd = fetchd(env={**s3.env(), "FETCHD_S3_PART_SIZE": "5MiB", "FETCHD_ALLOW_PRIVATE_NETWORKS": "true",
                     "FETCHD_SSH_KNOWN_HOSTS": str(sftp.known_hosts), "FETCHD_TUS_CHUNK_SIZE": "1MiB",
                     "FETCHD_RETRY_MAX_DELAY": "1s"})
    hook = {"webhookURL": receiver.url}
    # Each job: where its bytes must end up, read back after the kills, and the bytes.
    downloads: dict[str, tuple[Callable[[], bytes], bytes]] = {}
    uploads: dict[str, tuple[Callable[[], bytes], bytes]] = {}

    for i, extra in enumerate([{"connections": 4}, {}, {}]):
        data = os.urandom(6 * MiB + i)
        job = fd.api.submit({"url": origin.add(f"/d{i}.bin", data, rate=2 * MiB), "destination": f"d{i}.bin", **hook, **extra})
        downloads[job["id"]] = (lambda name=f"d{i}.bin": fd.dest(name).read_bytes(), data)
    for i, extra in enumerate([{"connections": 3}, {}, {}]):
        data = os.urandom(12 * MiB + i)
        job = fd.api.submit({"url": origin.add(f"/o{i}.bin", data, rate=3 * MiB), "destination": s3.url(f"o{i}.bin"),
                             **hook, **extra})
        downloads[job["id"]] = (lambda key=f"o{i}.bin": s3.get_object_bytes(key), data)
    remote_files = [lambda n: ftp.url(n, password=PASSWORD), lambda n: sftp.url(files.dir / n, password=PASSWORD)]
    for i, url_of in enumerate(remote_files * 2):
        data = os.urandom(5 * MiB + i)
        files.put(f"r{i}.bin", data)
        job = fd.api.submit({"url": url_of(f"r{i}.bin"), "destination": f"r{i}.bin", "maxBytesPerSecond": 2 * MiB, **hook})
        downloads[job["id"]] = (lambda name=f"r{i}.bin": fd.dest(name).read_bytes(), data)

    def incoming(name: str) -> bytes:
        return (files.incoming / name).read_bytes()
    # Each upload target: its URL for a name, the job's other fields, where the bytes land, the size.
    targets = [(lambda n: dav.url(f"/in/{n}"), {}, lambda n: (dav.root / "in" / n).read_bytes(), 5 * MiB),
               (lambda n: s3.url(f"up/{n}"), {}, lambda n: s3.get_object_bytes(f"up/{n}"), 12 * MiB),
               (lambda n: tus.endpoint, {"protocol": "tus"}, lambda n: (tus.uploads / n).read_bytes(), 5 * MiB),
               (lambda n: ftp.url(f"incoming/{n}", password=PASSWORD), {}, incoming, 5 * MiB),
               (lambda n: sftp.url(files.incoming / n, password=PASSWORD), {}, incoming, 5 * MiB)]
    fd.uploads.mkdir(parents=True, exist_ok=True)
    for i, (url_of, extra, read_back, size) in enumerate(targets * 2):
        name, data = f"u{i}.bin", os.urandom(size + i)
        (fd.uploads / name).write_bytes(data)
        response = fd.api.post("/uploads", {"url": url_of(name), "source": name, "maxBytesPerSecond": 2 * MiB, **hook, **extra})
        assert response.status == 201, response
        uploads[response.json()["id"]] = (lambda name=name, read_back=read_back: read_back(name), data)

    schedule = random.Random(SEED)
    for _ in range(KILLS):
        time.sleep(schedule.uniform(0.01, 0.4))
        fd.kill()
        fd.start()

    def state(job_id: str) -> dict:
        return fd.api.get(f"/{'uploads' if job_id in uploads else 'downloads'}/{job_id}").json()
    jobs = {**downloads, **uploads}
    wait_for(lambda: all(state(j)["state"] in ("completed", "failed", "cancelled") for j in jobs), timeout=180, interval=0.2,
             message="every job to end")
    wrong = []
    for job_id, (read_back, data) in jobs.items():
        ended = state(job_id)
        if ended["state"] != "completed" or ended["sha256"] != sha256_hex(data) or read_back() != data:
            wrong.append((ended["kind"], ended.get("destination") or ended.get("url"), ended["state"], ended.get("error")))
    assert wrong == []
    for job_id in jobs:
        receiver.wait_event("upload.completed" if job_id in uploads else "download.completed", job_id, timeout=30)
    assert [d for d in receiver.deliveries if not d.verified] == []
    assert s3.list_multipart_uploads() == []
    assert tus.open_resources() == []
