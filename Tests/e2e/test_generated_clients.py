"""Clients generated from openapi.yaml by tools nobody here wrote, with their default
configurations, drive the real fetchd: swift-openapi-generator (URLSession transport, the
package in Tests/clients/swift) and openapi-python-client. Generation must not skip any part
of the spec, and every response must decode."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from e2e_support import REPO_ROOT, wait_for

SPEC = REPO_ROOT / "openapi.yaml"
SWIFT_PACKAGE = REPO_ROOT / "Tests" / "clients" / "swift"


def swift_client_build_dir() -> Path:
    """Outside the clone by default (the generator takes minutes to build cold; a new clone on
    the same machine reuses it); FETCHD_SWIFT_CLIENT_BUILD moves it (`make test` passes it)."""
    configured = os.environ.get("FETCHD_SWIFT_CLIENT_BUILD")
    if configured:
        return Path(configured).resolve()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "fetchd" / "swift-client-build"


def serve_jobs(origin) -> tuple[str, str, str]:
    """The small file, the slow one (long enough to pause) and a 404, on the origin."""
    small = origin.add("/small.bin", os.urandom(50_000))
    slow = origin.add("/slow.bin", os.urandom(2_000_000), rate=100_000)
    return small, slow, origin.url("/missing.bin")


def build_swift_client() -> Path:
    """Builds the client package (the build plugin generates the client from openapi.yaml);
    the build folder is kept outside the clone, so a later run rebuilds only what changed."""
    scratch = swift_client_build_dir()
    build = subprocess.run(
        ["swift", "build", "--package-path", str(SWIFT_PACKAGE), "--scratch-path", str(scratch),
         "--product", "FetchdClientCheck"],
        capture_output=True, text=True, timeout=1200)
    assert build.returncode == 0, f"building the Swift client failed:\n{build.stdout[-6000:]}\n{build.stderr[-3000:]}"
    return scratch / "debug" / "FetchdClientCheck"


def swift_generator(scratch: Path) -> Path:
    """The generator executable the build plugin runs (SwiftPM names host tools `-tool`)."""
    for name in ("swift-openapi-generator-tool", "swift-openapi-generator"):
        path = scratch / "debug" / name
        if path.is_file():
            return path
    pytest.fail(f"no swift-openapi-generator under {scratch}/debug")


def test_swift_openapi_generator_skips_nothing(tmp_path):
    build_swift_client()
    config = SWIFT_PACKAGE / "Sources" / "FetchdClientCheck" / "openapi-generator-config.yaml"
    run = subprocess.run(
        [str(swift_generator(swift_client_build_dir())), "generate", str(SPEC), "--config", str(config),
         "--output-directory", str(tmp_path)],
        capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    diagnostics = [line for line in (run.stdout + run.stderr).splitlines() if "warning" in line.lower() or "error" in line.lower()]
    assert not diagnostics, "\n".join(diagnostics)
    schemas = (tmp_path / "Types+Components+Schemas.swift").read_text()
    assert "_empty" not in schemas, "an enum got a case for null"
    assert "value1: Components.Schemas.SessionName" not in schemas, "a $ref was wrapped in allOf"


def test_swift_client_drives_fetchd(fetchd, origin):
    binary = build_swift_client()
    fd = fetchd()
    run = subprocess.run([str(binary), fd.base_url, *serve_jobs(origin)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"stdout:\n{run.stdout}\nstderr:\n{run.stderr}"
    assert run.stdout.strip().endswith("all calls decoded")
    assert fd.dest("swift/small.bin").stat().st_size == 50_000


@pytest.fixture(scope="module")
def python_client(tmp_path_factory):
    """The package openapi-python-client generates, imported from a temporary folder."""
    out = tmp_path_factory.mktemp("python-client")
    run = subprocess.run(
        [sys.executable, "-m", "openapi_python_client", "generate", "--path", str(SPEC), "--meta", "none",
         "--output-path", str(out / "fetchd_client")],
        capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "warning" not in (run.stdout + run.stderr).lower(), run.stdout + run.stderr
    sys.path.insert(0, str(out))
    try:
        yield importlib.import_module("fetchd_client")
    finally:
        sys.path.remove(str(out))
        for name in [n for n in sys.modules if n == "fetchd_client" or n.startswith("fetchd_client.")]:
            del sys.modules[name]


def test_python_client_generates_every_schema(python_client):
    models = importlib.import_module("fetchd_client.models")
    for name in ("Download", "DownloadError", "DownloadRequest", "DownloadList", "Attempt", "Problem", "SessionSummary",
                 "DownloadCompletedEvent", "DownloadFailedEvent", "DownloadCancelledEvent", "SessionFinishedEvent"):
        assert hasattr(models, name), f"{name} was not generated"
    assert not [n for n in dir(models) if n.startswith("WaitingFor")], "waitingFor became a family of enums"


def test_python_client_drives_fetchd(python_client, fetchd, origin):
    from fetchd_client.api.downloads import (cancel_download, create_download, get_download, list_download_attempts,
                                             list_downloads, pause_download, resume_download)
    from fetchd_client.api.sessions import get_session
    from fetchd_client.models import Download, DownloadErrorCodeType0, DownloadRequest, Problem, State

    fd = fetchd()
    client = python_client.Client(base_url=fd.base_url)
    small_url, slow_url, missing_url = serve_jobs(origin)

    def create(url: str, destination: str) -> Download:
        job = create_download.sync(client=client, body=DownloadRequest(url=url, destination=destination, session="py"))
        assert isinstance(job, Download), job
        return job

    def wait_state(job_id: str, state: State) -> Download:
        return wait_for(lambda: (lambda j: j if j.state == state else None)(get_download.sync(job_id, client=client)),
                        message=f"{job_id} to be {state}")

    small = create(small_url, "py/small.bin")
    assert small.overwrite is False and small.session == "py"
    done = wait_state(small.id, State.COMPLETED)
    assert done.error is None and done.finished_at >= done.created_at

    failed = wait_state(create(missing_url, "py/missing.bin").id, State.FAILED)
    assert failed.error.code == DownloadErrorCodeType0.HTTP_STATUS and failed.http_status == 404
    attempts = list_download_attempts.sync(failed.id, client=client).items
    assert attempts[-1].error.code == DownloadErrorCodeType0.HTTP_STATUS

    slow = create(slow_url, "py/slow.bin")
    wait_state(slow.id, State.RUNNING)
    assert pause_download.sync(slow.id, client=client).state == State.PAUSED
    assert resume_download.sync(slow.id, client=client).state in (State.QUEUED, State.RUNNING)
    cancelled = cancel_download.sync(slow.id, client=client)
    assert cancelled.state == State.CANCELLED and cancelled.waiting_for is None

    ids, cursor = [], None
    while True:
        page = list_downloads.sync(client=client, session="py", limit=1, **({"cursor": cursor} if cursor else {}))
        ids += [job.id for job in page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert ids == [slow.id, failed.id, small.id]

    summary = get_session.sync("py", client=client)
    assert (summary.counts.completed, summary.counts.failed, summary.counts.cancelled, summary.finished) == (1, 1, 1, True)

    problem = create_download.sync(client=client, body=DownloadRequest(url=small_url, destination="../outside"))
    assert isinstance(problem, Problem) and problem.status == 400 and problem.errors[0].field == "destination"
