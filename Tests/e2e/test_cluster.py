"""Three fetchd nodes on one PostgreSQL (FETCHD_DATABASE_URL) sharing one download root and
one staging directory, as API.md's "Many nodes on PostgreSQL" promises: no job runs twice, the
per-host limit holds for the whole cluster, a node killed with SIGKILL loses nothing (its jobs
resume elsewhere from their partial data), webhooks arrive once per event, and cancel,
Idempotency-Key and GET /events work through any node. `make test` starts the PostgreSQL
server (scripts/postgres/test-server.sh) and passes its URL as FETCHD_TEST_DATABASE_URL."""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest

from e2e_support import Fetchd, Origin, fetchd_binary, sha256_hex, wait_for
from test_events import EventStream, reached
from test_postgres import SERVER, psql
from test_resilience import read_events

needs_postgres = pytest.mark.skipif(not SERVER, reason="FETCHD_TEST_DATABASE_URL is not set (make test sets it)")

PER_HOST = 2


class Cluster:
    """Three nodes, each with its own data directory, one database schema, one download root."""

    def __init__(self, base, database_url: str, count: int = 3, shared_files: bool = True, env: dict[str, str] | None = None):
        """`shared_files` False: each node has its own download root and staging directory (the
        nodes share only the database, as object-storage jobs allow)."""
        self.database_url = database_url
        self.root = base / "shared" / "downloads"
        self.staging = base / "shared" / "partial"
        self.nodes: list[Fetchd] = []
        for n in range(count):
            own = base / f"node{n}"
            fd = Fetchd(fetchd_binary(), own / "data", self.root if shared_files else own / "downloads", {
                "FETCHD_DATABASE_URL": database_url,
                "FETCHD_NODE_NAME": f"node-{n}",
                "FETCHD_STAGING_DIR": str(self.staging if shared_files else own / "partial"),
                "FETCHD_MAX_TRANSFERS_PER_HOST": str(PER_HOST),
                **(env or {}),
            }, name=f"node{n}")
            self.nodes.append(fd)
        for fd in self.nodes:
            fd.start()

    def sql(self, query: str) -> str:
        return psql(self.database_url, query)

    def runner_of(self, job_id: str) -> str | None:
        """The name of the node whose lease a running job runs under."""
        return self.sql(f"SELECT n.name FROM downloads d JOIN nodes n ON n.id = d.lease_owner "
                        f"WHERE d.id = '{job_id}' AND d.state = 'running'") or None

    def node(self, name: str) -> Fetchd:
        return next(fd for fd in self.nodes if fd.extra_env["FETCHD_NODE_NAME"] == name)

    def other_than(self, name: str) -> Fetchd:
        return next(fd for fd in self.nodes if fd.extra_env["FETCHD_NODE_NAME"] != name and fd.running)

    def close(self):
        for fd in self.nodes:
            fd.close()


@contextmanager
def database_schema():
    """The URL of a fresh schema of the test server, dropped afterwards."""
    schema = "fetchd_cluster_" + uuid.uuid4().hex
    psql(SERVER, f"CREATE SCHEMA {schema}")
    separator = "&" if "?" in SERVER else "?"
    try:
        yield f"{SERVER}{separator}options=-csearch_path%3D{schema}"
    finally:
        psql(SERVER, f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture
def cluster(tmp_path):
    with database_schema() as url:
        nodes = Cluster(tmp_path, url)
        yield nodes
        nodes.close()


@pytest.fixture
def origins():
    servers = [Origin() for _ in range(3)]
    for server in servers:
        server.start()
    yield servers
    for server in servers:
        server.stop()


@contextmanager
def private_server():
    """A PostgreSQL server of the test's own (scripts/postgres/test-server.sh in a directory of
    its own), so it can go away and come back without touching the shared one. Yields a function
    that runs the script's commands (`halt`, `resume`) on it, and its URL."""
    script = Path(__file__).resolve().parents[2] / "scripts" / "postgres" / "test-server.sh"
    env = dict(os.environ, FETCHD_TEST_PG_DIR=f"/tmp/fetchd-cluster-pg-{uuid.uuid4().hex}")

    def server(command: str) -> str:
        run = subprocess.run([str(script), command], env=env, capture_output=True, timeout=60)
        assert run.returncode == 0, run.stderr.decode()
        return run.stdout.decode().strip()

    try:
        yield server, server("start")
    finally:
        server("stop")


def gets(origin: Origin, path: str) -> list:
    return [r for r in origin.requests_for(path) if r.method == "GET"]


def test_one_node_on_sqlite_lists_itself(fetchd):
    fd = fetchd(env={"FETCHD_NODE_NAME": "alone"})
    items = fd.api.get("/nodes").json()["items"]
    assert [(n["name"], n["runningTransfers"]) for n in items] == [("alone", 0)]
    assert items[0]["startedAt"] <= items[0]["heartbeatAt"]


@needs_postgres
def test_every_node_lists_the_three(cluster):
    for fd in cluster.nodes:
        names = wait_for(lambda: sorted(n["name"] for n in fd.api.get("/nodes").json()["items"]) or None,
                         message="GET /nodes to answer")
        assert names == ["node-0", "node-1", "node-2"]


@needs_postgres
def test_a_killed_node_loses_nothing_and_no_job_runs_twice(cluster, origins, receiver):
    session = "cluster-kill"
    size = 600_000
    jobs = []  # (origin, path, body, job)
    for n in range(12):
        origin = origins[n % 3]
        body = os.urandom(size)
        path = f"/kill/{n}.bin"
        url = origin.add(path, body, rate=150_000)
        fd = cluster.nodes[n % 3]
        job = fd.api.submit({"url": url, "destination": f"kill/{n}.bin", "session": session, "webhookURL": receiver.url})
        jobs.append((origin, path, body, job))

    # Wait until the busiest node runs jobs with partial data on the shared volume, then kill it.
    def busiest():
        items = cluster.nodes[0].api.get("/nodes").json()["items"]
        best = max(items, key=lambda n: n["runningTransfers"])
        if best["runningTransfers"] == 0:
            return None
        victims = [job["id"] for _, _, _, job in jobs if cluster.runner_of(job["id"]) == best["name"]]
        started = [j for j in victims if has_partial_data(j)]
        return (best["name"], victims) if victims and len(started) == len(victims) else None

    def has_partial_data(job_id: str) -> bool:
        try:
            return (cluster.staging / job_id).stat().st_size > 0
        except FileNotFoundError:  # not made yet, or removed as the job completed
            return False

    name, victims = wait_for(busiest, message="the busiest node to have partial data")
    assert cluster.node(name).kill() == -9

    survivors = [fd for fd in cluster.nodes if fd.running]
    for origin, path, body, job in jobs:
        done = survivors[0].api.wait_state(job["id"], "completed", timeout=60)
        assert done["sha256"] == sha256_hex(body)
        assert (cluster.root / "kill" / path.rsplit("/", 1)[1]).read_bytes() == body

    resumed = []
    for origin, path, body, job in jobs:
        requests = gets(origin, path)
        if job["id"] in victims:
            # Run again elsewhere from its partial data, at most once more.
            assert 1 <= len(requests) <= 2, (path, requests)
            resumed += requests[1:]
        else:
            assert len(requests) == 1, (path, requests)
    assert resumed, "no job of the killed node was taken over"
    for request in resumed:
        ranges = {k.lower(): v for k, v in request.headers.items()}.get("range", "")
        assert ranges.startswith("bytes=") and not ranges.startswith("bytes=0-"), request

    # The per-host limit held for the whole cluster.
    for origin in origins:
        assert origin.peak_concurrent <= PER_HOST, origin.peak_concurrent

    # Every webhook delivery settled, then: one download.completed per job, one session.finished.
    wait_for(lambda: cluster.sql("SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'pending'") == "0", timeout=60,
             message="every webhook delivery to settle")
    for _, _, _, job in jobs:
        completed = receiver.events("download.completed", job["id"])
        assert len({d.webhook_id for d in completed}) == 1, completed
        assert all(d.verified for d in completed)
    finished = [d for d in receiver.events("session.finished") if d.data.get("session") == session]
    assert len({d.webhook_id for d in finished}) == 1, finished


def sending(cluster: Cluster, origin: Origin, name: str, body: bytes) -> tuple[dict, str]:
    """Submits a throttled job for /<name> and waits until it runs and the origin sends it; the
    job and the name of the node running it."""
    job = cluster.nodes[0].api.submit({"url": origin.add(f"/{name}", body, rate=200_000), "destination": name})
    runner = wait_for(lambda: cluster.runner_of(job["id"]), message="the job to run")
    wait_for(lambda: origin.busy(f"/{name}"), message="the origin to be sending")
    return job, runner


@needs_postgres
def test_cancel_through_another_node_stops_the_transfer(cluster, origin):
    job, runner = sending(cluster, origin, "slow.bin", os.urandom(2_000_000))

    other = cluster.other_than(runner)
    assert other.api.delete(f"/downloads/{job['id']}").status == 200

    wait_for(lambda: not origin.busy("/slow.bin"), message="the runner to stop the transfer")
    assert cluster.node(runner).api.job(job["id"])["state"] == "cancelled"
    assert not (cluster.root / "slow.bin").exists()
    wait_for(lambda: not (cluster.staging / job["id"]).exists(), message="the partial file to be removed")
    assert len(gets(origin, "/slow.bin")) == 1


@needs_postgres
def test_pause_and_resume_through_other_nodes(cluster, origin):
    body = os.urandom(1_000_000)
    job, runner = sending(cluster, origin, "paused.bin", body)

    other = cluster.other_than(runner)
    assert other.api.post(f"/downloads/{job['id']}/pause").status == 200
    wait_for(lambda: not origin.busy("/paused.bin"), message="the runner to stop the transfer")
    assert cluster.node(runner).api.job(job["id"])["state"] == "paused"
    kept = (cluster.staging / job["id"]).stat().st_size
    assert kept > 0

    assert cluster.nodes[2].api.post(f"/downloads/{job['id']}/resume").status == 200
    done = cluster.nodes[1].api.wait_state(job["id"], "completed")
    assert done["sha256"] == sha256_hex(body)
    resumed = {k.lower(): v for k, v in gets(origin, "/paused.bin")[-1].headers.items()}
    assert resumed.get("range", "").startswith("bytes=") and resumed["range"] != "bytes=0-"


@needs_postgres
def test_an_idempotency_key_replays_through_another_node(cluster, origin):
    url = origin.add("/once.bin", b"once")
    body = {"url": url, "destination": "once.bin", "earliestBeginDate": "2999-01-01T00:00:00Z"}
    first = cluster.nodes[0].api.post("/downloads", body, headers={"Idempotency-Key": "k-1"})
    again = cluster.nodes[1].api.post("/downloads", body, headers={"Idempotency-Key": "k-1"})
    other = cluster.nodes[2].api.post("/downloads", dict(body, priority=0.9), headers={"Idempotency-Key": "k-1"})

    assert first.status == 201 and again.status == 201
    assert again.json()["id"] == first.json()["id"]
    assert other.status == 422
    assert cluster.sql("SELECT COUNT(*) FROM downloads") == "1"


@needs_postgres
def test_events_follow_a_job_through_another_node(cluster, origin):
    stream = EventStream(cluster.nodes[2])
    try:
        wait_for(lambda: stream.status_line, message="the stream to open")
        url = origin.add("/followed.bin", os.urandom(300_000), rate=200_000)
        job = cluster.nodes[0].api.submit({"url": url, "destination": "followed.bin"})
        runner = wait_for(lambda: cluster.runner_of(job["id"]), message="the job to run")

        # The job's own stream, opened on a node that does not run it, ends with its completion.
        job_events = read_events(cluster.other_than(runner), job["id"])
        assert job_events[-1][0] == "state" and job_events[-1][1]["state"] == "completed"

        wait_for(lambda: reached(stream, job["id"], "completed"), message="GET /events on another node to show the job complete")
        assert [d["state"] for _, d in stream.states() if d["id"] == job["id"]] == ["queued", "running", "completed"]
    finally:
        stream.close()


def progress_until_completed(events: list[tuple[str, dict]], job_id: str) -> list[int]:
    """bytesReceived of the job's progress events before its `completed` state event, in order
    (the per-job stream's progress names no job; the global stream's does)."""
    received = []
    for kind, data in events:
        if data.get("id", job_id) != job_id:
            continue
        if kind == "state" and data["state"] == "completed":
            return received
        if kind == "progress":
            received.append(data["bytesReceived"])
    raise AssertionError(f"the stream never showed {job_id} completed: {events}")


def assert_steady_progress(received: list[int], size: int):
    assert received == sorted(set(received)), f"bytesReceived must only grow: {received}"
    assert len([n for n in received if 0 < n < size]) >= 3, f"several counts while the bytes arrive: {received}"


@needs_postgres
def test_progress_of_a_job_reaches_both_streams_through_every_other_node(cluster, origin):
    size = 3 * 1024 * 1024
    everything = {fd.extra_env["FETCHD_NODE_NAME"]: EventStream(fd) for fd in cluster.nodes}
    try:
        for stream in everything.values():
            wait_for(lambda: stream.status_line, message="the stream to open")
        url = origin.add("/watched.bin", os.urandom(size), rate=512 * 1024)
        job = cluster.nodes[0].api.submit({"url": url, "destination": "watched.bin"})
        runner = wait_for(lambda: cluster.runner_of(job["id"]), message="the job to run")

        job_events = read_events(cluster.other_than(runner), job["id"])
        assert_steady_progress(progress_until_completed(job_events, job["id"]), size)

        for name, stream in everything.items():
            if name == runner:
                continue
            wait_for(lambda: reached(stream, job["id"], "completed"), message=f"GET /events on {name} to show the job complete")
            events = [(kind, json.loads(data)) for kind, _, data in list(stream.events)]
            assert_steady_progress(progress_until_completed(events, job["id"]), size)
    finally:
        for stream in everything.values():
            stream.close()


@needs_postgres
def test_a_database_that_goes_away_and_comes_back(tmp_path, origin):
    with private_server() as (server, url):
        cluster = Cluster(tmp_path, url, count=2)
        try:
            body = os.urandom(1_500_000)
            job = cluster.nodes[0].api.submit({"url": origin.add("/away.bin", body, rate=250_000), "destination": "away.bin"})
            partial = cluster.staging / job["id"]
            wait_for(lambda: partial.exists() and partial.stat().st_size > 0, message="the transfer to write partial data")

            server("halt")
            for fd in cluster.nodes:
                wait_for(lambda: fd.api.get("/readyz").status == 503, message="/readyz to say the database is gone")
            # The node running the job stops its transfer, keeping its partial data.
            wait_for(lambda: not origin.busy("/away.bin"), message="the transfer to stop")
            assert partial.stat().st_size > 0

            server("resume")
            for fd in cluster.nodes:
                wait_for(lambda: fd.api.get("/readyz").status == 200, message="/readyz to recover")
            done = cluster.nodes[1].api.wait_state(job["id"], "completed", timeout=60)
            assert done["sha256"] == sha256_hex(body)
            assert (cluster.root / "away.bin").read_bytes() == body
            later = gets(origin, "/away.bin")[1:]
            assert later, "the job went on after the database came back"
            for request in later:
                ranges = {k.lower(): v for k, v in request.headers.items()}.get("range", "")
                assert ranges.startswith("bytes=") and not ranges.startswith("bytes=0-"), request
            assert origin.peak_concurrent == 1, "the job ran on one node at a time"
        finally:
            cluster.close()


def test_nodes_back_from_a_long_outage_keep_their_own_jobs(tmp_path, origin):
    """The database gone for longer than a node's lease: every heartbeat is stale when it comes
    back, but no node is dead. None takes another's jobs over (the first back would otherwise take
    them all); each goes on with its own."""
    with private_server() as (server, url):
        cluster = Cluster(tmp_path, url, count=2)
        try:
            bodies = [os.urandom(1_500_000 + i) for i in range(4)]
            jobs = [cluster.nodes[i % 2].api.submit({"url": origin.add(f"/long{i}.bin", body, rate=250_000),
                                                     "destination": f"long{i}.bin"}) for i, body in enumerate(bodies)]
            names = sorted(fd.extra_env["FETCHD_NODE_NAME"] for fd in cluster.nodes)
            wait_for(lambda: any(cluster.runner_of(job["id"]) for job in jobs), message="a job to run")

            server("halt")
            time.sleep(4)  # longer than a lease (2.5 s): the outage itself
            server("resume")

            for job, body in zip(jobs, bodies):
                done = cluster.nodes[0].api.wait_state(job["id"], "completed", timeout=60)
                assert done["sha256"] == sha256_hex(body)
            logs = "".join(fd.log_text() for fd in cluster.nodes)
            assert "taken for dead" not in logs and "taking over" not in logs
            assert sorted(n["name"] for n in cluster.nodes[1].api.get("/nodes").json()["items"]) == names
        finally:
            cluster.close()

