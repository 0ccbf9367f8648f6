"""fetchd with its state in PostgreSQL (FETCHD_DATABASE_URL). `make test` starts a throwaway
server (scripts/postgres/test-server.sh) and passes its URL as FETCHD_TEST_DATABASE_URL; each
test gets a schema of its own in it."""

from __future__ import annotations

import os
import subprocess
import uuid

import pytest

from e2e_support import sha256_hex

SERVER = os.environ.get("FETCHD_TEST_DATABASE_URL")
pytestmark = pytest.mark.skipif(not SERVER, reason="FETCHD_TEST_DATABASE_URL is not set (make test sets it)")


def psql(url: str, sql: str) -> str:
    run = subprocess.run(["psql", "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", url, "-c", sql],
                         capture_output=True, timeout=30)
    assert run.returncode == 0, run.stderr.decode()
    return run.stdout.decode().strip()


@pytest.fixture
def database_url():
    """A URL whose tables live in a fresh schema, dropped afterwards."""
    schema = "fetchd_e2e_" + uuid.uuid4().hex
    psql(SERVER, f"CREATE SCHEMA {schema}")
    separator = "&" if "?" in SERVER else "?"
    yield f"{SERVER}{separator}options=-csearch_path%3D{schema}"
    psql(SERVER, f"DROP SCHEMA {schema} CASCADE")


def test_a_job_completes_with_its_state_in_postgresql(fetchd, origin, receiver, database_url):
    fd = fetchd(env={"FETCHD_DATABASE_URL": database_url, "FETCHD_NODE_NAME": "node-1"})
    body = os.urandom(300_000)
    url = origin.add("/pg/file.bin", body)
    job = fd.api.submit({"url": url, "destination": "pg/file.bin", "webhookURL": receiver.url})

    done = fd.api.wait_state(job["id"], "completed")

    assert fd.dest("pg/file.bin").read_bytes() == body
    assert done["sha256"] == sha256_hex(body)
    delivery = receiver.wait_event("download.completed", job["id"])[0]
    assert delivery.verified, delivery.verify_error
    # The job is in PostgreSQL, and no SQLite database was made.
    assert psql(database_url, f"SELECT state FROM downloads WHERE id = '{job['id']}'") == "completed"
    assert not (fd.data_dir / "fetchd.sqlite").exists()


def test_the_queue_survives_a_restart_in_postgresql(fetchd, origin, database_url):
    fd = fetchd(env={"FETCHD_DATABASE_URL": database_url})
    url = origin.add("/pg/later.bin", b"later")
    job = fd.api.submit({"url": url, "destination": "later.bin", "earliestBeginDate": "2999-01-01T00:00:00Z"})
    assert fd.stop() == 0
    fd.start()
    assert fd.api.get(f"/downloads/{job['id']}").json()["state"] == "queued"
