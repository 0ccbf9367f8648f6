"""Fixtures for the end-to-end suite: `fetchd` (a factory for processes of the built
binary), `origin` (a real HTTP/1.1 origin), `receiver` (a real Standard Webhooks
receiver) and `s3` (an S3-compatible store: moto behind a proxy the test controls). Run
with `python3 -m pytest -q Tests/e2e` after `swift build`; set FETCHD_BIN to test another
binary."""

from __future__ import annotations

import pytest

from e2e_support import Fetchd, FetchdFactory, Origin, WebhookReceiver, fetchd_binary
from s3_support import S3, S3Server


@pytest.fixture(scope="session")
def fetchd_bin():
    path = fetchd_binary()
    if not path.is_file():
        pytest.fail(f"fetchd binary not found at {path}: run `swift build` first or set FETCHD_BIN",
                    pytrace=False)
    return path


@pytest.fixture
def fetchd(fetchd_bin, tmp_path):
    """Factory: `fetchd(env={...})` starts the binary in a fresh data dir and download root
    and returns a `Fetchd` (base_url, data_dir, root, api, stop(sig), kill(), restart())."""
    factory = FetchdFactory(fetchd_bin, tmp_path)
    yield factory
    factory.close()


@pytest.fixture(scope="module")
def shared_fetchd(fetchd_bin, tmp_path_factory):
    """One fetchd for a whole module of tests that do not interfere with each other. At the
    end it must still be alive (no request may crash it) and stop cleanly on SIGTERM."""
    factory = FetchdFactory(fetchd_bin, tmp_path_factory.mktemp("shared"))
    fd = factory()
    yield fd
    try:
        assert fd.running, f"fetchd died during the module:\n{fd.log_text()}"
        code = fd.stop()
        assert code == 0, f"SIGTERM exit code {code}:\n{fd.log_text()}"
    finally:
        factory.close()


@pytest.fixture
def origin():
    o = Origin()
    o.start()
    yield o
    o.stop()


@pytest.fixture(scope="module")
def shared_origin():
    o = Origin()
    o.start()
    yield o
    o.stop()


@pytest.fixture
def receiver():
    r = WebhookReceiver()
    r.start()
    yield r
    r.stop()


@pytest.fixture(scope="module")
def s3_server(tmp_path_factory):
    """One moto_server (authentication on) and its proxy for a module, stopped however the
    module ends. Tests use `s3`."""
    server = S3Server(tmp_path_factory.mktemp("s3"))
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3(s3_server, request):
    """An `S3` for this test: `env()` (the FETCHD_S3_* variables: endpoint = the proxy),
    a fresh `bucket`, a boto3 `client` to moto directly, `get_object_bytes`, `object_exists`,
    `list_multipart_uploads`, `requests(method, path_prefix)` made through the proxy during
    the test, `down()` / `up()`, `hold_answers(...)` and `lose_a_created_upload(...)`. The
    proxy is up again, and its answers flow, after the test."""
    store = S3(s3_server, request.node.name)
    yield store
    store.release_answers()
    store.up()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """On failure, attach the stderr of every fetchd the test used and, if it used `s3`, the
    requests the S3 proxy carried and the end of moto's log."""
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        seen = set()
        for value in getattr(item, "funcargs", {}).values():
            instances = value.instances if isinstance(value, FetchdFactory) else [value] if isinstance(value, Fetchd) else []
            for fd in instances:
                if id(fd) in seen:
                    continue
                seen.add(id(fd))
                report.sections.append((f"fetchd stderr: {fd.name}", fd.log_text()))
        store = getattr(item, "funcargs", {}).get("s3")
        if isinstance(store, S3):
            report.sections.append(("S3 requests through the proxy", store.describe_requests()))
            report.sections.append(("moto_server log (tail)", store.server.log_text(60)))
