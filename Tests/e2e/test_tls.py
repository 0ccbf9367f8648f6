"""HTTPS with certificates the test made: an extra CA bundle, HTTP/2 through ALPN, a client
certificate, and refusals that fail at once with `tls`. The origin is nginx (Debian's
nginx-light) with `ssl http2`; its access log records the protocol of every request."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from e2e_support import sha256_hex
from tls_support import Certificates, HandshakeRefusingOrigin, HTTPSWebhookReceiver, NginxOrigin


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return Certificates.make(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def nginx(tmp_path, certs):
    origin = NginxOrigin(tmp_path, certs).start()
    yield origin
    origin.stop()


def test_with_the_ca_bundle_an_https_download_completes_over_http2(fetchd, nginx, certs):
    body = os.urandom(3 << 20)
    nginx.add("big.bin", body)
    fd = fetchd(env={"FETCHD_CA_BUNDLE": str(certs.ca)})

    job = fd.api.submit({"url": nginx.https_url("big.bin"), "destination": "big.bin"})
    done = fd.api.wait_state(job["id"], "completed")

    assert fd.dest("big.bin").read_bytes() == body
    assert done["sha256"] == sha256_hex(body)
    assert done["attempts"] == 1
    served = [r for r in nginx.requests() if r["uri"] == "/big.bin"]
    assert [(r["status"], r["protocol"]) for r in served] == [("200", "HTTP/2.0")], served


SYSTEM_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None or not SYSTEM_BUNDLE.is_file(),
                    reason="a mount namespace over the system's CA file needs root, unshare and that file")
def test_the_systems_authorities_keep_working_beside_the_bundle(fetchd, tmp_path, certs):
    """FETCHD_CA_BUNDLE adds to the system's trust store, it does not replace it. A public CA
    cannot sign a loopback origin, so a CA of the test's own stands in for one: fetchd runs in
    a mount namespace where the system's CA file is the real one plus that CA (nothing outside
    the namespace changes)."""
    public_ca = Certificates.make(tmp_path / "public-ca")
    system_file = tmp_path / "ca-certificates.crt"
    system_file.write_bytes(SYSTEM_BUNDLE.read_bytes() + b"\n" + public_ca.ca.read_bytes())
    public = NginxOrigin(tmp_path / "public", public_ca).start()
    private = NginxOrigin(tmp_path / "private", certs).start()
    try:
        public.add("public.bin", b"p" * 50_000)
        private.add("private.bin", b"q" * 50_000)
        fd = fetchd(env={"FETCHD_CA_BUNDLE": str(certs.ca)}, start=False)
        fd.wrapper = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                      f'mount --bind "$0" {SYSTEM_BUNDLE} && exec "$@"', str(system_file)]
        fd.start()

        by_system = fd.api.submit({"url": public.https_url("public.bin"), "destination": "public.bin"})
        by_bundle = fd.api.submit({"url": private.https_url("private.bin"), "destination": "private.bin"})

        assert fd.api.wait_state(by_system["id"], "completed")["sha256"] == sha256_hex(b"p" * 50_000)
        assert fd.api.wait_state(by_bundle["id"], "completed")["sha256"] == sha256_hex(b"q" * 50_000)
    finally:
        public.stop()
        private.stop()


def test_without_the_ca_bundle_the_job_fails_with_tls_after_one_attempt(fetchd, nginx):
    nginx.add("untrusted.bin", b"x" * 1000)
    fd = fetchd()

    job = fd.api.submit({"url": nginx.https_url("untrusted.bin"), "destination": "untrusted.bin"})
    failed = fd.api.wait_state(job["id"], "failed")

    assert failed["error"]["code"] == "tls", failed
    assert failed["attempts"] == 1
    assert not fd.dest("untrusted.bin").exists()
    assert [r for r in nginx.requests() if r["uri"] == "/untrusted.bin"] == [], "a request went out unverified"


def test_an_origin_that_demands_a_client_certificate(fetchd, tmp_path, certs):
    origin = NginxOrigin(tmp_path, certs, client_ca=certs.client_ca).start()
    try:
        body = os.urandom(100_000)
        origin.add("private.bin", body)
        url = origin.https_url("private.bin")

        with_cert = fetchd(env={"FETCHD_CA_BUNDLE": str(certs.ca), "FETCHD_TLS_CLIENT_CERT": str(certs.client_cert),
                                "FETCHD_TLS_CLIENT_KEY": str(certs.client_key)})
        job = with_cert.api.submit({"url": url, "destination": "private.bin"})
        done = with_cert.api.wait_state(job["id"], "completed")
        assert with_cert.dest("private.bin").read_bytes() == body
        assert done["sha256"] == sha256_hex(body)

        # One file holding both the certificate and its key.
        combined = tmp_path / "client-with-key.pem"
        combined.write_bytes(certs.client_cert.read_bytes() + certs.client_key.read_bytes())
        one_file = fetchd(env={"FETCHD_CA_BUNDLE": str(certs.ca), "FETCHD_TLS_CLIENT_CERT": str(combined)})
        job = one_file.api.submit({"url": url, "destination": "private.bin"})
        one_file.api.wait_state(job["id"], "completed")
        assert one_file.dest("private.bin").read_bytes() == body

        # nginx completes the handshake without a certificate and answers 400 itself: a
        # permanent refusal, after one attempt.
        without = fetchd(env={"FETCHD_CA_BUNDLE": str(certs.ca)})
        job = without.api.submit({"url": url, "destination": "private.bin"})
        failed = without.api.wait_state(job["id"], "failed")
        assert failed["attempts"] == 1
        assert failed["httpStatus"] == 400
        assert not without.dest("private.bin").exists()

        verdicts = [r["client_verify"] for r in origin.requests() if r["uri"] == "/private.bin"]
        assert verdicts == ["SUCCESS", "SUCCESS", "NONE"], verdicts
    finally:
        origin.stop()


def test_a_refused_handshake_fails_with_tls_after_one_attempt(fetchd, certs):
    origin = HandshakeRefusingOrigin(certs).start()
    try:
        fd = fetchd(env={"FETCHD_CA_BUNDLE": str(certs.ca)})
        job = fd.api.submit({"url": origin.url("anything.bin"), "destination": "refused.bin"})
        failed = fd.api.wait_state(job["id"], "failed")
        assert failed["error"]["code"] == "tls", failed
        assert "handshake failure" in failed["error"]["message"], failed
        assert failed["attempts"] == 1
    finally:
        origin.stop()


def test_webhooks_to_an_https_receiver_use_the_same_trust(fetchd, nginx, certs):
    receiver = HTTPSWebhookReceiver(certs)
    receiver.start()
    try:
        nginx.add("hooked.bin", b"h" * 1000)
        fd = fetchd(env={"FETCHD_CA_BUNDLE": str(certs.ca)})
        job = fd.api.submit({"url": nginx.https_url("hooked.bin"), "destination": "hooked.bin",
                             "webhookURL": receiver.url})
        delivery = receiver.wait_event("download.completed", job["id"])[0]
        assert delivery.verified, delivery.verify_error
        assert delivery.data["state"] == "completed"
    finally:
        receiver.stop()


@pytest.mark.parametrize("setting,value", [
    ("FETCHD_CA_BUNDLE", "/nonexistent/ca.pem"),
    ("FETCHD_CA_BUNDLE", "/etc/hostname"),
    ("FETCHD_TLS_CLIENT_KEY", "/etc/hostname"),
])
def test_a_bad_certificate_setting_stops_start_up(fetchd, setting, value):
    fd = fetchd(env={setting: value}, start=False)
    run = subprocess.run([str(fd.binary)], env=fd.env(), capture_output=True, timeout=20)
    assert run.returncode == 2
    lines = run.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and setting in lines[0], lines


def test_a_client_certificate_without_its_key_stops_start_up(fetchd, certs):
    fd = fetchd(env={"FETCHD_TLS_CLIENT_CERT": str(certs.client_cert)}, start=False)
    run = subprocess.run([str(fd.binary)], env=fd.env(), capture_output=True, timeout=20)
    assert run.returncode == 2
    assert b"FETCHD_TLS_CLIENT_KEY" in run.stderr
