"""Downloads and webhooks through real proxies on loopback: tinyproxy (HTTP, CONNECT for https)
and microsocks (SOCKS5). Each proxy's log shows what it carried; the egress policy holds through
them (literal addresses and names judged before the proxy is asked, every redirect hop
included); a proxy that is down is an outage, retried as `proxy`; credentials never show."""

from __future__ import annotations

import os
import subprocess

import pytest

from e2e_support import holds_for, sha256_hex, wait_for
from tls_support import Certificates, MicroSocks, NginxOrigin, TinyProxy, free_port

USER, PASSWORD = "alice", "pr0xy-s3cret"


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return Certificates.make(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def proxies(tmp_path):
    started = []

    def start(kind: str):
        proxy = TinyProxy(tmp_path, USER, PASSWORD) if kind == "http" else MicroSocks(tmp_path)
        started.append(proxy.start())
        return proxy

    yield start
    for proxy in started:
        proxy.stop()


def proxy_url(proxy, kind: str) -> str:
    return proxy.url() if kind == "http" else proxy.url(kind)


def make_origin(tmp_path, certs, host="127.0.0.2", redirects=None):
    origin = NginxOrigin(tmp_path, certs, host=host)
    origin.redirects = {path: target(origin) for path, target in (redirects or {}).items()}
    return origin.start()


@pytest.fixture
def origin(tmp_path, certs):
    o = make_origin(tmp_path, certs)
    yield o
    o.stop()


def no_secret_anywhere(fd, *jobs):
    assert PASSWORD not in fd.log_text(), "the proxy's password is in fetchd's log"
    for job in jobs:
        assert PASSWORD not in str(fd.api.job(job["id"])), "the proxy's password is in a response"


def test_http_proxy_carries_http_and_https_downloads(fetchd, proxies, origin, certs):
    proxy = proxies("http")
    plain, secure = os.urandom(200_000), os.urandom(300_000)
    origin.add("plain.bin", plain)
    origin.add("secure.bin", secure)
    fd = fetchd(env={"FETCHD_PROXY": proxy.url(), "FETCHD_CA_BUNDLE": str(certs.ca), "FETCHD_LOG_FORMAT": "json"})

    jobs = [fd.api.submit({"url": origin.http_url("plain.bin"), "destination": "plain.bin"}),
            fd.api.submit({"url": origin.https_url("secure.bin"), "destination": "secure.bin"})]
    done = [fd.api.wait_state(job["id"], "completed") for job in jobs]

    assert fd.dest("plain.bin").read_bytes() == plain and done[0]["sha256"] == sha256_hex(plain)
    assert fd.dest("secure.bin").read_bytes() == secure and done[1]["sha256"] == sha256_hex(secure)
    carried = proxy.carried()
    assert any(line.startswith(f"GET {origin.http_url('plain.bin')} ") for line in carried), carried
    assert any(line.startswith(f"CONNECT 127.0.0.2:{origin.https_port} ") for line in carried), carried
    no_secret_anywhere(fd, *jobs)
    assert f"http://127.0.0.1:{proxy.port}" in fd.log_text(), "the proxy is not named at start"


@pytest.mark.parametrize("scheme", ["socks5", "socks5h"])
def test_socks5_proxy_carries_downloads(fetchd, proxies, origin, scheme):
    proxy = proxies("socks5")
    body = os.urandom(150_000)
    origin.add("s.bin", body)
    fd = fetchd(env={"FETCHD_PROXY": proxy.url(scheme)})

    job = fd.api.submit({"url": origin.http_url("s.bin"), "destination": "s.bin"})
    fd.api.wait_state(job["id"], "completed")

    assert fd.dest("s.bin").read_bytes() == body
    assert f"127.0.0.2:{origin.http_port}" in proxy.carried()


def test_webhooks_go_through_the_proxy(fetchd, proxies, origin, receiver):
    proxy = proxies("http")
    origin.add("w.bin", b"w" * 1000)
    fd = fetchd(env={"FETCHD_PROXY": proxy.url()})

    job = fd.api.submit({"url": origin.http_url("w.bin"), "destination": "w.bin", "webhookURL": receiver.url})
    delivery = receiver.wait_event("download.completed", job["id"])[0]

    assert delivery.verified
    assert any(line.startswith(f"POST {receiver.url} ") for line in proxy.carried()), proxy.carried()


def test_no_proxy_hosts_are_reached_directly(fetchd, proxies, origin):
    proxy = proxies("http")
    origin.add("direct.bin", b"d" * 5000)
    fd = fetchd(env={"FETCHD_PROXY": proxy.url(), "FETCHD_NO_PROXY": "example.com,127.0.0.0/30"})

    job = fd.api.submit({"url": origin.http_url("direct.bin"), "destination": "direct.bin"})
    fd.api.wait_state(job["id"], "completed")

    assert [r["uri"] for r in origin.requests()] == ["/direct.bin"]
    assert proxy.carried() == []


POLICY = {"FETCHD_ALLOW_PRIVATE_NETWORKS": "false", "FETCHD_ALLOW_NETWORKS": "127.0.0.2/32"}


@pytest.mark.parametrize("scheme", ["http", "socks5", "socks5h"])
def test_blocked_addresses_are_refused_before_the_proxy_is_asked(fetchd, proxies, origin, tmp_path, certs, scheme):
    """The proxy itself is on loopback, which the policy blocks: the operator chose it, so it is
    used. What the policy blocks is the origin: a literal address, or a name with a blocked
    address; an allowed origin still goes through."""
    proxy = proxies("http" if scheme == "http" else "socks5")
    origin.add("ok.bin", b"ok" * 1000)
    fd = fetchd(env={**POLICY, "FETCHD_PROXY": proxy_url(proxy, scheme)})

    allowed = fd.api.submit({"url": origin.http_url("ok.bin"), "destination": "ok.bin"})
    literal = fd.api.submit({"url": f"http://127.0.0.1:{origin.http_port}/ok.bin", "destination": "literal.bin"})
    named = fd.api.submit({"url": f"http://localhost:{origin.http_port}/ok.bin", "destination": "named.bin"})

    fd.api.wait_state(allowed["id"], "completed")
    for job in (literal, named):
        failed = fd.api.wait_state(job["id"], "failed")
        assert failed["error"]["code"] == "blocked_address", failed
        assert failed["attempts"] == 1
    carried = " ".join(proxy.carried())
    assert "127.0.0.2" in carried
    assert "127.0.0.1" not in carried and "localhost" not in carried, carried


def test_socks5_asks_the_proxy_for_the_address_fetchd_checked(fetchd, proxies, tmp_path, certs):
    """socks5:// resolves locally: fetchd resolves the name, keeps an allowed address and hands
    the proxy that address, never the name."""
    proxy = proxies("socks5")
    origin = make_origin(tmp_path, certs, host="127.0.0.1")
    try:
        origin.add("n.bin", b"n" * 4000)
        fd = fetchd(env={"FETCHD_ALLOW_PRIVATE_NETWORKS": "false", "FETCHD_ALLOW_NETWORKS": "127.0.0.1/32",
                         "FETCHD_PROXY": proxy.url("socks5")})
        job = fd.api.submit({"url": f"http://localhost:{origin.http_port}/n.bin", "destination": "n.bin"})
        fd.api.wait_state(job["id"], "completed")
        assert proxy.carried() == [f"127.0.0.1:{origin.http_port}"]
    finally:
        origin.stop()


@pytest.mark.parametrize("scheme", ["http", "socks5"])
def test_redirects_keep_the_policy_on_every_hop(fetchd, proxies, tmp_path, certs, scheme):
    """http → https → http through the proxy: a chain that stays on allowed addresses completes;
    one whose last hop is a blocked address fails there, and that hop never reaches the proxy."""
    proxy = proxies("http" if scheme == "http" else "socks5")
    blocked_port = free_port()
    origin = make_origin(tmp_path, certs, redirects={
        "/good1": lambda o: o.https_url("good2"), "/good2": lambda o: o.http_url("file.bin"),
        "/bad1": lambda o: o.https_url("bad2"), "/bad2": lambda o: f"http://127.0.0.1:{blocked_port}/secret",
    })
    try:
        body = os.urandom(50_000)
        origin.add("file.bin", body)
        fd = fetchd(env={**POLICY, "FETCHD_PROXY": proxy_url(proxy, scheme), "FETCHD_CA_BUNDLE": str(certs.ca)})

        good = fd.api.submit({"url": origin.http_url("good1"), "destination": "good.bin"})
        bad = fd.api.submit({"url": origin.http_url("bad1"), "destination": "bad.bin"})

        done = fd.api.wait_state(good["id"], "completed")
        assert fd.dest("good.bin").read_bytes() == body and done["sha256"] == sha256_hex(body)
        failed = fd.api.wait_state(bad["id"], "failed")
        assert failed["error"]["code"] == "blocked_address", failed
        hops = [(r["uri"], r["protocol"]) for r in origin.requests()]
        assert ("/good2", "HTTP/2.0") in hops or ("/good2", "HTTP/1.1") in hops, hops
        assert [uri for uri, _ in hops].count("/bad2") == 1, hops
        assert str(blocked_port) not in " ".join(proxy.carried())
    finally:
        origin.stop()


@pytest.mark.parametrize("scheme", ["http", "socks5"])
def test_a_proxy_that_is_down_is_retried_as_proxy(fetchd, origin, scheme):
    origin.add("later.bin", b"l" * 1000)
    fd = fetchd(env={"FETCHD_PROXY": f"{scheme}://{USER}:{PASSWORD}@127.0.0.1:{free_port()}",
                     "FETCHD_RETRY_BASE_DELAY": "50ms"})

    job = fd.api.submit({"url": origin.http_url("later.bin"), "destination": "later.bin"})

    def retrying():
        current = fd.api.job(job["id"])
        return current if current["attempts"] >= 3 and current["state"] == "queued" else None

    waiting = wait_for(retrying, timeout=20, message="the job to be retried three times")
    assert waiting["waitingFor"] == "retry"
    assert waiting["error"]["code"] == "proxy", waiting
    assert origin.requests() == []
    no_secret_anywhere(fd, job)


@pytest.mark.parametrize("value", ["ftp://proxy.example:21", f"http://{USER}:{PASSWORD}@proxy.example", "socks4://h:1"])
def test_a_bad_proxy_setting_stops_start_up_without_echoing_it(fetchd, value):
    fd = fetchd(env={"FETCHD_PROXY": value}, start=False)
    run = subprocess.run([str(fd.binary)], env=fd.env(), capture_output=True, timeout=20)
    assert run.returncode == 2
    lines = run.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "FETCHD_PROXY" in lines[0], lines
    assert PASSWORD not in lines[0]
