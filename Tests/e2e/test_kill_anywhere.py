"""kill -9 at any instant: every kind of transfer runs at once — downloads to files (one over
four connections), into objects (one over three), from FTP and SFTP; uploads by PUT, to s3://,
by tus, to FTP and SFTP, half of them with `deleteSource`; watches of a file and of an object,
whose origin changes halfway — while fetchd is killed 40 times at instants 10–400 ms apart (a
fixed seed, so the same schedule every run): one node on SQLite, and a random node of three on
PostgreSQL, whose jobs the others take over. Each job must then complete with the right bytes
where they belong, its digest in the API, a signed completion webhook, no multipart upload or tus
resource left open, and no source left that `deleteSource` removes; each watch must hold the
origin's last bytes, and a reader of its destination never see anything else."""

from __future__ import annotations

import os
import random
import secrets
import threading
import time
from pathlib import Path
from typing import Callable

import pytest

from e2e_support import Api, Fetchd, sha256_hex, wait_for
from file_servers import Files, Sshd, Vsftpd
from test_cluster import Cluster, database_schema, needs_postgres
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


def environment(s3, sftp) -> dict[str, str]:
    return {**s3.env(), "FETCHD_S3_PART_SIZE": "5MiB", "FETCHD_ALLOW_PRIVATE_NETWORKS": "true",
            "FETCHD_SSH_KNOWN_HOSTS": str(sftp.known_hosts), "FETCHD_TUS_CHUNK_SIZE": "1MiB", "FETCHD_RETRY_MAX_DELAY": "1s",
            "FETCHD_WATCH_MIN_INTERVAL": "1s"}


def test_every_kind_of_job_ends_right_through_40_kills_at_random_instants(fetchd, origin, s3, receiver, servers):
    fd = fetchd(env=environment(s3, servers[2]))
    jobs = submit_every_kind(lambda: fd.api, fd.root, fd.uploads, origin, s3, receiver, servers)
    watches = Watches(fd.api, fd.root, origin, s3)
    kill_at_random([fd], halfway=watches.change_origin)
    assert_every_job_ended_right(fd.api, jobs, s3, receiver, servers)
    watches.assert_current(fd.api)


@needs_postgres
def test_every_kind_of_job_ends_right_on_three_nodes_killed_at_random(tmp_path, origin, s3, receiver, servers):
    with database_schema() as url:
        # Per host as on one node: the jobs share two hosts (the origin, loopback's servers).
        cluster = Cluster(tmp_path, url, env={**environment(s3, servers[2]), "FETCHD_MAX_TRANSFERS_PER_HOST": "16"})
        try:
            nodes = cluster.nodes
            pick = random.Random(SEED + 1)
            jobs = submit_every_kind(lambda: pick.choice(nodes).api, cluster.root, nodes[0].uploads, origin, s3, receiver, servers)
            watches = Watches(nodes[1].api, cluster.root, origin, s3)
            kill_at_random(nodes, halfway=watches.change_origin)
            assert_every_job_ended_right(nodes[0].api, jobs, s3, receiver, servers)
            watches.assert_current(nodes[2].api)
        finally:
            cluster.close()


class Job:
    def __init__(self, kind: str, read_back: Callable[[], bytes], data: bytes, removed_source: Path | None = None):
        self.kind, self.read_back, self.data = kind, read_back, data
        # An upload's source that `deleteSource` must have removed by the end.
        self.removed_source = removed_source


def submit_every_kind(api: Callable[[], Api], root: Path, sources: Path, origin, s3, receiver, servers) -> dict[str, Job]:
    """Submits every kind of job, each through the node `api` gives; each job by its id, with
    how to read back what it transferred."""
    files, ftp, sftp, dav, tus = servers
    hook = {"webhookURL": receiver.url}
    jobs: dict[str, Job] = {}

    def download(body: dict, read_back: Callable[[], bytes], data: bytes):
        jobs[api().submit({**body, **hook})["id"]] = Job("downloads", read_back, data)

    for i, extra in enumerate([{"connections": 4}, {}, {}]):
        data = os.urandom(6 * MiB + i)
        download({"url": origin.add(f"/d{i}.bin", data, rate=2 * MiB), "destination": f"d{i}.bin", **extra},
                 lambda name=f"d{i}.bin": (root / name).read_bytes(), data)
    for i, extra in enumerate([{"connections": 3}, {}, {}]):
        data = os.urandom(12 * MiB + i)
        download({"url": origin.add(f"/o{i}.bin", data, rate=3 * MiB), "destination": s3.url(f"o{i}.bin"), **extra},
                 lambda key=f"o{i}.bin": s3.get_object_bytes(key), data)
    remote_files = [lambda n: ftp.url(n, password=PASSWORD), lambda n: sftp.url(files.dir / n, password=PASSWORD)]
    for i, url_of in enumerate(remote_files * 2):
        data = os.urandom(5 * MiB + i)
        files.put(f"r{i}.bin", data)
        download({"url": url_of(f"r{i}.bin"), "destination": f"r{i}.bin", "maxBytesPerSecond": 2 * MiB},
                 lambda name=f"r{i}.bin": (root / name).read_bytes(), data)

    def incoming(name: str) -> bytes:
        return (files.incoming / name).read_bytes()
    # Each upload target: its URL for a name, the job's other fields, where the bytes land, the size.
    targets = [(lambda n: dav.url(f"/in/{n}"), {}, lambda n: (dav.root / "in" / n).read_bytes(), 5 * MiB),
               (lambda n: s3.url(f"up/{n}"), {}, lambda n: s3.get_object_bytes(f"up/{n}"), 12 * MiB),
               (lambda n: tus.endpoint, {"protocol": "tus"}, lambda n: (tus.uploads / n).read_bytes(), 5 * MiB),
               (lambda n: ftp.url(f"incoming/{n}", password=PASSWORD), {}, incoming, 5 * MiB),
               (lambda n: sftp.url(files.incoming / n, password=PASSWORD), {}, incoming, 5 * MiB)]
    sources.mkdir(parents=True, exist_ok=True)
    for i, (url_of, extra, read_back, size) in enumerate(targets * 2):
        name, data = f"u{i}.bin", os.urandom(size + i)
        (sources / name).write_bytes(data)
        # The second round removes its sources once sent.
        removing = i >= len(targets)
        response = api().post("/uploads", {"url": url_of(name), "source": name, "maxBytesPerSecond": 2 * MiB, "deleteSource": removing,
                                           **hook, **extra})
        assert response.status == 201, response
        jobs[response.json()["id"]] = Job("uploads", lambda name=name, read_back=read_back: read_back(name), data,
                                          removed_source=sources / name if removing else None)
    return jobs


def kill_at_random(nodes: list[Fetchd], halfway: Callable[[], None]):
    """Kills a node and starts it again, KILLS times at instants 10–400 ms apart, `halfway` called
    after half of them."""
    schedule = random.Random(SEED)
    for kill in range(KILLS):
        if kill == KILLS // 2:
            halfway()
        time.sleep(schedule.uniform(0.01, 0.4))
        victim = schedule.choice(nodes)
        victim.kill()
        victim.start()


def assert_every_job_ended_right(api: Api, jobs: dict[str, Job], s3, receiver, servers):
    tus = servers[4]

    def state(job_id: str) -> dict:
        return api.get(f"/{jobs[job_id].kind}/{job_id}").json()
    wait_for(lambda: all(state(j)["state"] in ("completed", "failed", "cancelled") for j in jobs), timeout=180, interval=0.2,
             message="every job to end")
    wrong = []
    for job_id, job in jobs.items():
        ended = state(job_id)
        if ended["state"] != "completed" or ended["sha256"] != sha256_hex(job.data) or job.read_back() != job.data:
            wrong.append((ended["kind"], ended.get("destination") or ended.get("url"), ended["state"], ended.get("error")))
    assert wrong == []
    for job_id, job in jobs.items():
        receiver.wait_event("upload.completed" if job.kind == "uploads" else "download.completed", job_id, timeout=30)
    assert [d for d in receiver.deliveries if not d.verified] == []
    assert s3.list_multipart_uploads() == []
    assert tus.open_resources() == []
    wait_for(lambda: [j.removed_source for j in jobs.values() if j.removed_source and j.removed_source.exists()] == [],
             message="the sources sent with deleteSource to be removed")


class Watches:
    """A watch of a file and one of an object, checked every second, and a reader that opens their
    destinations again and again until `assert_current`, noting any bytes the origin never sent."""

    def __init__(self, api: Api, root: Path, origin, s3):
        self.origin = origin
        self.versions: dict[str, list[bytes]] = {}
        self.read_back: dict[str, Callable[[], bytes | None]] = {}
        self.ids: dict[str, str] = {}
        self.unsent: list[tuple[str, int]] = []
        destinations = {"w.bin": ("watched/w.bin", lambda: _bytes_or_none(root / "watched" / "w.bin")),
                        "wo.bin": (s3.url("watched/wo.bin"), lambda: s3.get_object_bytes("watched/wo.bin")
                                   if s3.object_exists("watched/wo.bin") else None)}
        for name, (destination, read_back) in destinations.items():
            self.versions[name] = [os.urandom(MiB)]
            origin.add("/" + name, self.versions[name][0])
            response = api.post("/watches", {"url": origin.url("/" + name), "destination": destination, "interval": "1s"})
            assert response.status == 201, response
            self.ids[name], self.read_back[name] = response.json()["id"], read_back
        self.stop = threading.Event()
        self.reader = threading.Thread(target=self._read)
        self.reader.start()

    def change_origin(self) -> None:
        for name, versions in self.versions.items():
            versions.append(os.urandom(MiB + 1))
            self.origin.add("/" + name, versions[-1])

    def _read(self) -> None:
        while not self.stop.is_set():
            for name, read_back in self.read_back.items():
                seen = read_back()
                if seen is not None and seen not in self.versions[name]:
                    self.unsent.append((name, len(seen)))
            self.stop.wait(0.05)

    def assert_current(self, api: Api) -> None:
        def current(name: str) -> bool:
            watch = api.get(f"/watches/{self.ids[name]}").json()
            return watch["state"] == "active" and watch["sha256"] == sha256_hex(self.versions[name][-1])
        try:
            wait_for(lambda: all(current(name) for name in self.ids), timeout=60, interval=0.2,
                     message=lambda: [api.get(f"/watches/{w}").json() for w in self.ids.values()])
        finally:
            self.stop.set()
            self.reader.join()
        assert self.unsent == []
        assert all(self.read_back[name]() == versions[-1] for name, versions in self.versions.items())


def _bytes_or_none(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
