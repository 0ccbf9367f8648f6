"""fetchd behind real reverse proxies with the configurations docs/operations.md gives: nginx with a
bare `proxy_pass` (HTTP/1.0 to fetchd, response buffering on) and haproxy. A job's event
stream must arrive through them live, while the download runs, not when it ends."""

from __future__ import annotations

import gzip
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from e2e_support import wait_for

# The configurations of docs/operations.md, "Behind a reverse proxy", with ports and paths filled in.
NGINX_CONF = """
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {dir}/tmp;
    proxy_temp_path {dir}/tmp;
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://127.0.0.1:{upstream};
        }}
    }}
}}
"""

HAPROXY_CONF = """
global
    pidfile {dir}/haproxy.pid
defaults
    mode http
    timeout connect 5s
    timeout client 1m
    timeout server 1m
frontend fetchd
    bind 127.0.0.1:{port}
    default_backend fetchd
backend fetchd
    server fetchd 127.0.0.1:{upstream}
"""


def unused_port() -> int:
    """A loopback port nothing listens on at the moment (the proxy binds it next)."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return port


def healthy_through(port: int) -> bool:
    """Whether fetchd's /healthz answers 200 through the proxy on `port`."""
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
        connection.request("GET", "/healthz")
        return connection.getresponse().status == 200
    except OSError:
        return False


class Proxy:
    """nginx or haproxy in the foreground on a free loopback port, in front of `upstream`."""

    def __init__(self, kind: str, upstream: int, directory: Path):
        self.port = unused_port()
        (directory / "tmp").mkdir(parents=True, exist_ok=True)
        config = directory / f"{kind}.conf"
        template = NGINX_CONF if kind == "nginx" else HAPROXY_CONF
        config.write_text(template.format(dir=directory, port=self.port, upstream=upstream))
        command = (["nginx", "-p", str(directory), "-e", str(directory / "error.log"), "-c", str(config), "-g", "daemon off;"]
                   if kind == "nginx" else ["haproxy", "-db", "-f", str(config)])
        self.log = directory / f"{kind}.out"
        self.process = subprocess.Popen(command, stdout=self.log.open("wb"), stderr=subprocess.STDOUT)
        wait_for(lambda: healthy_through(self.port) or self.process.poll() is not None, timeout=10,
                 message=f"{kind} to pass requests to fetchd")
        assert self.process.poll() is None, f"{kind} exited:\n{self.log.read_text()}"

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(params=["nginx", "haproxy"])
def proxy_kind(request):
    if shutil.which(request.param) is None:
        pytest.fail(f"{request.param} is not installed (make test-e2e installs it)", pytrace=False)
    return request.param


def read_event(response: http.client.HTTPResponse) -> dict[str, str]:
    """The next Server-Sent Event's fields (comments skipped)."""
    fields: dict[str, str] = {}
    while True:
        line = response.readline()
        assert line, "the stream ended"
        text = line.decode().rstrip("\r\n")
        if not text:
            if fields:
                return fields
            continue
        if text.startswith(":"):
            continue
        name, _, value = text.partition(":")
        fields[name] = value.lstrip(" ")


def test_events_arrive_through_the_proxy_while_the_download_runs(proxy_kind, fetchd, origin, tmp_path):
    fd = fetchd()
    upstream = int(fd.base_url.rsplit(":", 1)[1])
    proxy = Proxy(proxy_kind, upstream, tmp_path / proxy_kind)
    try:
        size = 1_200_000
        url = origin.add("/throttled.bin", os.urandom(size), rate=150_000)
        job = fd.api.submit({"url": url, "destination": "proxied.bin"})

        connection = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=15)
        connection.request("GET", f"/downloads/{job['id']}/events")
        response = connection.getresponse()
        assert response.status == 200
        assert response.getheader("Content-Type") == "text/event-stream"

        while True:
            event = read_event(response)
            if event.get("event") == "progress" and 0 < json.loads(event["data"])["bytesReceived"] < size:
                break
        # A progress event came through while fetchd is still downloading: the proxy did not hold it back.
        assert fd.api.job(job["id"])["state"] == "running"

        while True:
            event = read_event(response)
            if event.get("event") == "state" and json.loads(event["data"])["state"] == "completed":
                break
        connection.close()
        assert fd.dest("proxied.bin").stat().st_size == size
    finally:
        proxy.stop()


def test_api_calls_pass_through_the_proxy_with_their_headers(proxy_kind, fetchd, origin, tmp_path):
    fd = fetchd()
    proxy = Proxy(proxy_kind, int(fd.base_url.rsplit(":", 1)[1]), tmp_path / proxy_kind)
    try:
        url = origin.add("/small.bin", b"x" * 1000)
        for i in range(40):
            fd.api.submit({"url": url, "destination": f"p/{i}.bin"})
        connection = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=15)
        connection.request("GET", "/downloads?limit=40", headers={"Accept-Encoding": "gzip"})
        response = connection.getresponse()
        body = response.read()
        assert response.status == 200
        assert response.getheader("Content-Encoding") == "gzip"
        assert response.getheader("Cache-Control") == "no-store"
        assert response.getheader("Date")
        assert len(json.loads(gzip.decompress(body))["items"]) == 40
    finally:
        proxy.stop()
