"""Let no one in where they don't belong: bearer tokens, SSRF checked on the address
actually connected to (every hop), destination confinement against symlinks planted after
submit, the queue cap, and secrets kept out of logs.

The live SSRF tests here use loopback in every spelling a URL can take; test_ssrf_ranges.py
covers every other blocked range live, inside a network namespace of its own."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time

import pytest

from e2e_support import Origin, holds_for, sha256_hex, wait_for

TOKENS = ["token-alpha-7f3a9c", "token-beta-51d2e8"]


# ----- bearer tokens

ENDPOINTS = [
    ("POST", "/downloads"), ("GET", "/downloads"), ("GET", "/downloads/{id}"), ("DELETE", "/downloads/{id}"),
    ("POST", "/downloads/{id}/pause"), ("POST", "/downloads/{id}/resume"), ("GET", "/downloads/{id}/attempts"),
    ("GET", "/downloads/{id}/events"), ("GET", "/sessions/default"), ("GET", "/metrics"),
]


@pytest.fixture(scope="module")
def guarded(fetchd_bin, tmp_path_factory):
    from e2e_support import FetchdFactory
    factory = FetchdFactory(fetchd_bin, tmp_path_factory.mktemp("guarded"))
    fd = factory(env={"FETCHD_API_TOKENS": ",".join(TOKENS)})
    fd.api.token = TOKENS[0]
    yield fd
    factory.close()


def call(fd, method, path, job_id, token):
    """One request with exactly this token (None: no Authorization header at all)."""
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    body = {"url": "http://127.0.0.1:9/x", "destination": f"auth/{time.monotonic_ns()}",
            "earliestBeginDate": "2099-01-01T00:00:00Z"} if method == "POST" and path == "/downloads" else None
    default, fd.api.token = fd.api.token, None
    try:
        return fd.api.request(method, path.replace("{id}", job_id), body, headers=headers)
    finally:
        fd.api.token = default


@pytest.mark.parametrize("method,path", ENDPOINTS)
@pytest.mark.parametrize("token", [None, "wrong-token", "token-alpha-7f3a9c-but-longer", ""])
def test_every_endpoint_refuses_a_missing_or_wrong_token(guarded, method, path, token):
    job = guarded.api.submit({"url": "http://127.0.0.1:9/x", "destination": f"auth/{time.monotonic_ns()}",
                              "earliestBeginDate": "2099-01-01T00:00:00Z"})
    resp = call(guarded, method, path, job["id"], token)
    assert resp.status == 401
    assert resp.content_type == "application/problem+json"
    assert resp.header("WWW-Authenticate").startswith("Bearer")


@pytest.mark.parametrize("method,path", ENDPOINTS)
@pytest.mark.parametrize("token", TOKENS)
def test_every_endpoint_accepts_each_configured_token(guarded, method, path, token):
    job = guarded.api.submit({"url": "http://127.0.0.1:9/x", "destination": f"auth/{time.monotonic_ns()}",
                              "earliestBeginDate": "2099-01-01T00:00:00Z"})
    if path.endswith("/events"):
        guarded.api.delete(f"/downloads/{job['id']}")  # a finished job's stream ends at once
    resp = call(guarded, method, path, job["id"], token)
    assert resp.status in (200, 201), resp


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_health_endpoints_need_no_token(guarded, path):
    assert guarded.api.get(path, headers={"Authorization": ""}).status == 200


def test_tokens_from_a_file_are_reloaded_on_sighup(fetchd, tmp_path):
    tokens = tmp_path / "tokens"
    tokens.write_text("# one per line\nfirst-file-token\n")
    fd = fetchd(env={"FETCHD_API_TOKENS_FILE": str(tokens)})
    assert fd.api.get("/downloads", headers={"Authorization": "Bearer first-file-token"}).status == 200

    tokens.write_text("second-file-token\n")
    fd.proc.send_signal(signal.SIGHUP)

    wait_for(lambda: fd.api.get("/downloads", headers={"Authorization": "Bearer second-file-token"}).status == 200)
    assert fd.api.get("/downloads", headers={"Authorization": "Bearer first-file-token"}).status == 401


def test_fetchd_refuses_a_public_listener_without_tokens(fetchd):
    fd = fetchd(env={"FETCHD_LISTEN": "0.0.0.0:0"}, start=False)
    with pytest.raises(AssertionError, match="exited with 2"):
        fd.start()
    assert "--insecure" in fd.log_text()


# ----- SSRF


class Listener:
    """A loopback TCP listener that records whether anything ever connected."""

    def __init__(self, host: str = "127.0.0.1"):
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, 0))
        self.sock.listen(16)
        self.sock.settimeout(0.05)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self):
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
                self.connections += 1
                conn.close()
            except (socket.timeout, OSError):
                continue

    def close(self):
        self._stop.set()
        self._thread.join()
        self.sock.close()


@pytest.fixture
def listener():
    ipv4 = Listener("127.0.0.1")
    yield ipv4
    ipv4.close()


SPELLINGS = ["127.0.0.1", "2130706433", "0x7f.1", "127.1", "0177.0.0.1", "[::ffff:127.0.0.1]", "localhost", "0.0.0.0"]


@pytest.mark.parametrize("host", SPELLINGS)
def test_a_download_to_loopback_in_any_spelling_is_blocked_before_any_connection(fetchd, listener, host):
    fd = fetchd(env={"FETCHD_ALLOW_PRIVATE_NETWORKS": "false"})
    job = fd.api.submit({"url": f"http://{host}:{listener.port}/secret", "destination": "ssrf.bin"})

    failed = fd.api.wait_state(job["id"], "failed")

    assert failed["error"]["code"] == "blocked_address", failed
    assert failed["attempts"] == 1
    assert listener.connections == 0
    assert not fd.dest("ssrf.bin").exists()


def test_ipv6_loopback_is_blocked(fetchd):
    six = Listener("::1")
    try:
        fd = fetchd(env={"FETCHD_ALLOW_PRIVATE_NETWORKS": "false"})
        job = fd.api.submit({"url": f"http://[::1]:{six.port}/secret", "destination": "ssrf6.bin"})
        assert fd.api.wait_state(job["id"], "failed")["error"]["code"] == "blocked_address"
        assert six.connections == 0
    finally:
        six.close()


@pytest.mark.parametrize("host", ["2130706433", "0x7f.1", "127.1", "localhost"])
def test_a_webhook_to_loopback_in_any_spelling_is_never_delivered(fetchd, origin, listener, host):
    fd = fetchd(env={"FETCHD_ALLOW_PRIVATE_NETWORKS": "false", "FETCHD_ALLOW_NETWORKS": "127.0.0.2/32"})
    public_origin = Origin("127.0.0.2")
    public_origin.start()
    try:
        public_origin.add("/file", b"allowed origin")
        job = fd.api.submit({"url": public_origin.url("/file"), "destination": "hooked.bin",
                             "webhookURL": f"http://{host}:{listener.port}/hooks"})
        fd.api.wait_state(job["id"], "completed")
        wait_for(lambda: "webhook delivery failed" in fd.log_text(), message="the delivery to be refused")
        assert "blockedAddress" in fd.log_text() and "retry=false" in fd.log_text()
        assert holds_for(lambda: listener.connections == 0, 0.5)
    finally:
        public_origin.stop()


@pytest.mark.parametrize("literal", ["http://127.0.0.1/hooks", "http://[::1]/hooks", "http://169.254.169.254/latest"])
def test_a_webhook_url_with_a_literal_blocked_address_is_refused_at_submit(fetchd, literal):
    fd = fetchd(env={"FETCHD_ALLOW_PRIVATE_NETWORKS": "false"})
    resp = fd.api.post("/downloads", {"url": "http://example.invalid/x", "destination": "x", "webhookURL": literal})
    assert resp.status == 400
    assert resp.json()["errors"][0]["field"] == "webhookURL"


def test_a_redirect_to_a_blocked_address_is_stopped_at_the_hop(fetchd, listener):
    allowed = Origin("127.0.0.2")
    allowed.start()
    try:
        allowed.add("/jump", status=302, headers={"Location": f"http://127.0.0.1:{listener.port}/secret"})
        fd = fetchd(env={"FETCHD_ALLOW_PRIVATE_NETWORKS": "false", "FETCHD_ALLOW_NETWORKS": "127.0.0.2/32"})
        job = fd.api.submit({"url": allowed.url("/jump"), "destination": "jump.bin"})

        failed = fd.api.wait_state(job["id"], "failed")

        assert failed["error"]["code"] == "blocked_address"
        assert len(allowed.requests_for("/jump")) == 1  # the allowed hop was fetched...
        assert listener.connections == 0  # ...the blocked one never connected
    finally:
        allowed.stop()


def test_proxy_variables_in_the_environment_are_ignored(fetchd, origin, listener):
    origin.add("/direct", b"direct")
    proxy = f"http://127.0.0.1:{listener.port}"
    fd = fetchd(env={"http_proxy": proxy, "HTTP_PROXY": proxy, "https_proxy": proxy, "ALL_PROXY": proxy})
    job = fd.api.submit({"url": origin.url("/direct"), "destination": "direct.bin"})
    assert fd.api.wait_state(job["id"], "completed")["sha256"] == sha256_hex(b"direct")
    assert listener.connections == 0


# ----- destinations


HOSTILE_DESTINATIONS = [
    "/etc/passwd", "../escape", "a/../../escape", "a/../b", "./a", "a/./b", "a//b", "dir//", "../", "",
    "a\u0000b", "a\nb", "a\rb", "tab\there", "\u202egnp.exe", "zero\u200bwidth", "..", ".",
    "a\\..\\..\\escape", "x/\u2028y", ".fetchd-123.tmp",
    "a" * 256, "/".join(["d"] * 600), "\x7f", "\u0085next-line",
]


@pytest.mark.parametrize("destination", HOSTILE_DESTINATIONS)
def test_hostile_destinations_are_rejected(shared_fetchd, destination):
    resp = shared_fetchd.api.post("/downloads", {"url": "http://example.invalid/x", "destination": destination})
    assert resp.status == 400, destination
    assert resp.json()["errors"][0]["field"] == "destination"


def test_a_destination_through_a_symlink_out_of_the_root_is_rejected_at_submit(fetchd, tmp_path):
    fd = fetchd()
    outside = tmp_path / "outside"
    outside.mkdir()
    (fd.root / "link").symlink_to(outside)
    resp = fd.api.post("/downloads", {"url": "http://example.invalid/x", "destination": "link/file.bin"})
    assert resp.status == 400
    assert resp.json()["errors"][0]["field"] == "destination"


def test_a_symlink_planted_after_submit_cannot_redirect_the_write(fetchd, origin, tmp_path):
    fd = fetchd()
    outside = tmp_path / "outside"
    outside.mkdir()
    origin.add("/slow", os.urandom(300_000), rate=300_000)
    (fd.root / "sub").mkdir()
    job = fd.api.submit({"url": origin.url("/slow"), "destination": "sub/file.bin"})
    fd.api.wait_state(job["id"], "running")

    (fd.root / "sub").rmdir()
    (fd.root / "sub").symlink_to(outside)

    failed = fd.api.wait_state(job["id"], "failed")
    assert failed["error"]["code"] == "invalid_destination"
    assert list(outside.iterdir()) == []


# ----- limits


def test_the_queue_cap_answers_429_with_retry_after(fetchd):
    fd = fetchd(env={"FETCHD_MAX_QUEUED": "3"})
    for i in range(3):
        fd.api.submit({"url": "http://127.0.0.1:9/x", "destination": f"q/{i}", "earliestBeginDate": "2099-01-01T00:00:00Z"})
    resp = fd.api.post("/downloads", {"url": "http://127.0.0.1:9/x", "destination": "q/over",
                                      "earliestBeginDate": "2099-01-01T00:00:00Z"})
    assert resp.status == 429
    assert resp.content_type == "application/problem+json"
    assert int(resp.header("Retry-After")) > 0


def test_secrets_tokens_and_origin_header_values_never_reach_the_logs(fetchd, origin, receiver):
    secret_header = "hdr-value-do-not-log-91c2"
    url_secret = "query-secret-55e1"
    fd = fetchd(env={"FETCHD_API_TOKENS": TOKENS[0], "FETCHD_WEBHOOK_URL": receiver.url})
    fd.api.token = TOKENS[0]
    origin.add("/private", b"private bytes")
    ok = fd.api.submit({"url": origin.url("/private") + f"?key={url_secret}", "destination": "private.bin",
                        "headers": {"Authorization": f"Bearer {secret_header}", "X-Api-Key": secret_header}})
    fd.api.wait_state(ok["id"], "completed")
    receiver.wait_event("download.completed", ok["id"])
    assert origin.requests_for("/private")[0].headers["x-api-key"] == secret_header  # the header did go out
    bad = fd.api.submit({"url": origin.url("/absent"), "destination": "absent.bin", "headers": {"X-Api-Key": secret_header}})
    fd.api.wait_state(bad["id"], "failed")
    fd.api.get("/downloads", headers={"Authorization": "Bearer not-a-token-but-logged?"})
    body = fd.api.get(f"/downloads/{ok['id']}").body.decode()
    fd.stop()

    logs = fd.log_text(max_lines=100_000)
    from e2e_support import WEBHOOK_SECRET
    for needle in (secret_header, TOKENS[0], WEBHOOK_SECRET, WEBHOOK_SECRET[6:], url_secret, "not-a-token"):
        assert needle not in logs, f"{needle!r} appears in the logs"
    assert secret_header not in body
    for delivery in receiver.events():
        assert secret_header.encode() not in delivery.body
