"""Real things the end-to-end tests drive: the fetchd binary, an origin server and a
webhook receiver, all on loopback. No mocks: fetchd is the built executable, the origin
and the receiver are real HTTP/1.1 servers on their own threads.

Everything that waits polls with a deadline (`wait_for`); nothing sleeps to wait for an
event. The only sleeps are inside the origin, where throttling *is* the behaviour.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import http.client
import http.server
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Optional

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

REPO_ROOT = Path(__file__).resolve().parents[2]

# A fixed test secret: "whsec_" + base64 of 32 bytes.
WEBHOOK_SECRET_BYTES = bytes(range(1, 33))
WEBHOOK_SECRET = "whsec_" + base64.b64encode(WEBHOOK_SECRET_BYTES).decode()

TERMINAL_STATES = {"completed", "failed", "cancelled"}


def fetchd_binary() -> Path:
    configured = os.environ.get("FETCHD_BIN")
    if configured:
        path = Path(configured)
        return path if path.is_absolute() else (REPO_ROOT / path)
    return REPO_ROOT / ".build" / "debug" / "fetchd"


# --------------------------------------------------------------------------- polling


class Timeout(AssertionError):
    pass


def wait_for(predicate: Callable[[], Any], timeout: float = 20.0, interval: float = 0.03,
             message: str | Callable[[], str] = "condition") -> Any:
    """Poll `predicate` until it returns something truthy; return that value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            text = message() if callable(message) else message
            raise Timeout(f"timed out after {timeout}s waiting for {text}")
        time.sleep(interval)


def holds_for(predicate: Callable[[], bool], duration: float, interval: float = 0.03) -> bool:
    """True if `predicate` stays true for the whole `duration` (used to assert an absence)."""
    deadline = time.monotonic() + duration
    while time.monotonic() < deadline:
        if not predicate():
            return False
        time.sleep(interval)
    return predicate()


def http_url(host: str, port: int, path: str = "") -> str:
    """`http://host:port/path`, with an IPv6 host in brackets and its zone (`fe80::1%lo`) escaped."""
    if ":" in host:
        host = "[" + host.replace("%", "%25") + "]"
    return f"http://{host}:{port}{path}"


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def rfc3339(epoch_seconds: float) -> str:
    return datetime.fromtimestamp(epoch_seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


# --------------------------------------------------------------------------- HTTP client


@dataclass
class Response:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    @property
    def content_type(self) -> str:
        return (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()

    def json(self) -> Any:
        return json.loads(self.body)

    def header(self, name: str) -> Optional[str]:
        return self.headers.get(name)

    def __repr__(self) -> str:
        body = self.body[:600].decode("utf-8", "replace")
        return f"<Response {self.status} {self.headers.get('Content-Type')!r} {body!r}>"


class Api:
    """A tiny client for fetchd's API: one connection per request (simple and robust)."""

    def __init__(self, owner: "Fetchd"):
        self._owner = owner
        self.responses: list[tuple[str, str, int]] = []
        self.token: str | None = None  # sent as a bearer token unless a request sets Authorization

    def request(self, method: str, path: str, body: Any = None, *, raw: bytes | None = None,
                headers: dict[str, str] | None = None, content_type: str | None = "application/json",
                timeout: float = 15.0) -> Response:
        host, port = self._owner.host, self._owner.port
        hdrs = dict(headers or {})
        if self.token and "Authorization" not in hdrs:
            hdrs["Authorization"] = f"Bearer {self.token}"
        payload: bytes | None = None
        if raw is not None:
            payload = raw
        elif body is not None:
            payload = json.dumps(body).encode()
        if payload is not None and content_type is not None:
            hdrs.setdefault("Content-Type", content_type)
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
        try:
            conn.request(method, path, body=payload, headers=hdrs)
            resp = conn.getresponse()
            data = resp.read()
            result = Response(resp.status, resp.headers, data)
        finally:
            conn.close()
        self.responses.append((method, path, result.status))
        return result

    def get(self, path: str, **kw) -> Response:
        return self.request("GET", path, **kw)

    def post(self, path: str, body: Any = None, **kw) -> Response:
        return self.request("POST", path, body, **kw)

    def delete(self, path: str, **kw) -> Response:
        return self.request("DELETE", path, **kw)

    # -- conveniences over the Download resource

    def submit(self, body: dict, expect: int = 201, **kw) -> dict:
        resp = self.post("/downloads", body, **kw)
        assert resp.status == expect, f"POST /downloads {body!r} -> {resp!r}"
        return resp.json()

    def job(self, job_id: str) -> dict:
        resp = self.get(f"/downloads/{job_id}")
        assert resp.status == 200, f"GET /downloads/{job_id} -> {resp!r}"
        return resp.json()

    def wait_state(self, job_id: str, states: str | set[str], timeout: float = 20.0) -> dict:
        wanted = {states} if isinstance(states, str) else set(states)
        last: dict = {}

        def check():
            nonlocal last
            last = self.job(job_id)
            if last["state"] in TERMINAL_STATES and last["state"] not in wanted:
                raise AssertionError(f"job {job_id} reached {last['state']} instead of {wanted}: {last}")
            return last if last["state"] in wanted else None

        return wait_for(check, timeout=timeout, interval=0.05,
                        message=lambda: f"job {job_id} to reach {wanted}; last seen {last}")

    def list_all(self, query: str = "") -> list[dict]:
        """Follow nextCursor through every page of GET /downloads?query."""
        items: list[dict] = []
        cursor = None
        for _ in range(10_000):
            q = query + (("&" if query else "") + f"cursor={cursor}" if cursor else "")
            resp = self.get("/downloads" + (f"?{q}" if q else ""))
            assert resp.status == 200, resp
            page = resp.json()
            items.extend(page["items"])
            cursor = page.get("nextCursor")
            if not cursor:
                return items
        raise AssertionError("pagination never ended")


# --------------------------------------------------------------------------- fetchd process

LISTEN_RE = re.compile(r'address"?[=:]\s*"?\[?([0-9.]+)\]?:(\d+)')  # text or JSON log line


class Fetchd:
    """One fetchd process bound to a data dir and a download root; restartable."""

    def __init__(self, binary: Path, data_dir: Path, root: Path, env: dict[str, str], name: str):
        self.binary = binary
        self.data_dir = data_dir
        self.root = root
        # Where uploads' sources are: beside the download root, made by the tests that upload.
        self.uploads = root.parent / f"{root.name}-uploads"
        self.extra_env = dict(env)
        self.name = name
        self.proc: subprocess.Popen | None = None
        self.host = "127.0.0.1"
        self.port = 0
        self.logs: list[Path] = []
        self.api = Api(self)
        self.exit_codes: list[int] = []
        # A command that runs fetchd (given as its last arguments) in a changed environment,
        # e.g. a mount namespace; it must exec fetchd so signals reach it.
        self.wrapper: list[str] = []
        # Descriptors fetchd inherits besides 0-2 (a passed listening socket).
        self.pass_fds: tuple[int, ...] = ()

    # -- lifecycle

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("FETCHD_")}
        env.update({
            "FETCHD_LISTEN": "127.0.0.1:0",
            "FETCHD_DATA_DIR": str(self.data_dir),
            "FETCHD_DOWNLOAD_ROOT": str(self.root),
            "FETCHD_UPLOAD_ROOT": str(self.uploads),
            "FETCHD_ALLOW_PRIVATE_NETWORKS": "true",
            "FETCHD_RETRY_BASE_DELAY": "100ms",
            "FETCHD_WEBHOOK_RETRY_SCHEDULE": "0,200ms,200ms,200ms,200ms",
            "FETCHD_WEBHOOK_SECRET": WEBHOOK_SECRET,
            "FETCHD_LOG_FORMAT": "text",
            "FETCHD_DISK_RESERVE": "0",
        })
        env.update(self.extra_env)
        return {k: v for k, v in env.items() if v is not None}

    def start(self, timeout: float = 20.0) -> "Fetchd":
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.root.mkdir(parents=True, exist_ok=True)
        log_path = self.data_dir.parent / f"{self.name}.stderr.{len(self.logs)}.log"
        self.logs.append(log_path)
        log = open(log_path, "wb")
        try:
            self.proc = subprocess.Popen(self.wrapper + [str(self.binary)], env=self.env(), stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT, pass_fds=self.pass_fds)
        finally:
            log.close()

        def bound_port():
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"fetchd exited with {self.proc.returncode} before listening:\n{self.log_text()}")
            for line in log_path.read_text(errors="replace").splitlines():
                if "listening" in line:
                    m = LISTEN_RE.search(line)
                    if m:
                        return int(m.group(2))
            return None

        self.port = wait_for(bound_port, timeout=timeout, message="fetchd to log its listening address")
        wait_for(self._healthy, timeout=timeout, message="GET /healthz to answer 200")
        return self

    def _healthy(self) -> bool:
        try:
            return self.api.get("/healthz", timeout=2).status == 200
        except OSError:
            return False

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> int:
        """Send `sig` and wait for exit; returns the exit code (negative = killed by signal)."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError(f"fetchd did not exit within {timeout}s of signal {sig}")
        self.exit_codes.append(self.proc.returncode)
        return self.proc.returncode

    def kill(self) -> int:
        return self.stop(signal.SIGKILL)

    def restart(self, sig: int = signal.SIGTERM) -> "Fetchd":
        if self.running:
            self.stop(sig)
        return self.start()

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    # -- paths

    def partial_path(self, job_id: str) -> Path:
        return self.data_dir / "partial" / job_id

    def dest(self, destination: str) -> Path:
        return self.root / destination

    def log_text(self, max_lines: int = 400) -> str:
        parts = []
        for i, path in enumerate(self.logs):
            try:
                lines = path.read_text(errors="replace").splitlines()
            except FileNotFoundError:
                continue
            if len(lines) > max_lines:
                lines = [f"... ({len(lines) - max_lines} earlier lines omitted)"] + lines[-max_lines:]
            parts.append(f"--- run {i} ({path}) ---\n" + "\n".join(lines))
        return "\n".join(parts)


def scrape(fd: "Fetchd") -> str:
    """GET /metrics, as Prometheus text."""
    resp = fd.api.get("/metrics")
    assert resp.status == 200
    assert resp.content_type.startswith("text/plain")
    return resp.body.decode()


def sample(text: str, name: str, labels: str = "", default: float | None = None) -> float:
    """One sample of a scrape, e.g. `sample(text, "fetchd_downloads", 'state="queued"')`; a
    counter not incremented yet is absent, hence `default`."""
    wanted = f"{name}{{{labels}}}" if labels else name
    for line in text.splitlines():
        if line.startswith(wanted + " "):
            return float(line.split()[-1])
    if default is not None:
        return default
    raise AssertionError(f"{wanted} not in the scrape")


@contextlib.contextmanager
def small_volume(fd: "Fetchd", size: str, data_only: bool = False, root_only: bool = False):
    """Puts fd's data dir and download root on a tmpfs of `size` (root only) for the block —
    only the data dir if `data_only`, only the download root and the staging directory if
    `root_only`; fd is not started. Its log stays off the volume."""
    volume = fd.data_dir if data_only else fd.data_dir.parent / "volume"
    volume.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(volume)], check=True)
    try:
        if root_only:
            fd.root = volume / "downloads"
            fd.extra_env["FETCHD_STAGING_DIR"] = str(volume / "partial")
        elif not data_only:
            fd.data_dir, fd.root = volume / "data", volume / "downloads"
        yield volume
    finally:
        fd.close()
        subprocess.run(["umount", str(volume)], check=False)


def preload_library(directory: Path, name: str, code: str) -> Path:
    """A fault-injecting library for fetchd's `LD_PRELOAD`, built from the C `code` in `directory`
    with the toolchain's clang; the test is skipped where there is no C compiler."""
    compiler = shutil.which("clang") or shutil.which("cc")
    if compiler is None:
        pytest.skip("no C compiler to build the fault-injecting library")
    source = directory / f"{name}.c"
    source.write_text(code)
    library = directory / f"{name}.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-O1", "-o", str(library), str(source), "-ldl"], check=True)
    return library


class FetchdFactory:
    def __init__(self, binary: Path, base: Path):
        self.binary = binary
        self.base = base
        self.instances: list[Fetchd] = []

    def __call__(self, env: dict[str, str] | None = None, start: bool = True) -> Fetchd:
        n = len(self.instances)
        home = self.base / f"fetchd{n}"
        fd = Fetchd(self.binary, home / "data", home / "root", env or {}, name=f"fetchd{n}")
        self.instances.append(fd)
        if start:
            fd.start()
        return fd

    def close(self) -> None:
        for fd in self.instances:
            fd.close()


# --------------------------------------------------------------------------- servers


class _TrackingServer(http.server.ThreadingHTTPServer):
    """A threading HTTP server that remembers open connections so `stop()` really drops
    them (a keep-alive connection must not keep a 'stopped' server answering)."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 512

    def __init__(self, addr, handler, owner):
        self.owner = owner
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        # getaddrinfo picks the family and, for "fe80::1%lo", the scope id that bind() needs.
        self.address_family, _, _, _, addr = socket.getaddrinfo(addr[0], addr[1], type=socket.SOCK_STREAM)[0]
        super().__init__(addr, handler)

    def process_request(self, request, client_address):
        with self._open_lock:
            self._open.add(request)
            self.owner.peak_open = max(self.owner.peak_open, len(self._open))
        self.owner.accepted += 1  # only the serving thread accepts
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def drop_connections(self):
        with self._open_lock:
            socks = list(self._open)
            self._open.clear()
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _ServerThread:
    handler_class: type

    def __init__(self, host: str = "127.0.0.1"):
        self.server: _TrackingServer | None = None
        self.thread: threading.Thread | None = None
        self.host = host
        self.port = 0
        self.stopping = threading.Event()
        self.accepted = 0  # TCP connections accepted, over every run
        # The most TCP connections open at once, as the server saw them: from accept until it
        # found the connection closed (a handler notices a client's close at its next read or write).
        self.peak_open = 0

    def start(self, port: int | None = None) -> None:
        assert self.server is None, "already running"
        self.stopping.clear()
        bind_port = self.port if port is None else port
        deadline = time.monotonic() + 10
        while True:
            try:
                self.server = _TrackingServer((self.host, bind_port), self.handler_class, self)
                break
            except OSError:
                if bind_port == 0 or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True, name=f"{type(self).__name__}:{self.port}")
        self.thread.start()

    def stop(self) -> None:
        if self.server is None:
            return
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()
        self.server.drop_connections()
        self.thread.join(timeout=5)
        self.server = None

    def restart(self) -> None:
        """Start again on the same port."""
        self.start(self.port)

    @property
    def base_url(self) -> str:
        return http_url(self.host, self.port)


def _read_body(handler: http.server.BaseHTTPRequestHandler) -> bytes:
    if "chunked" in (handler.headers.get("Transfer-Encoding") or "").lower():
        out = bytearray()
        while True:
            size_line = handler.rfile.readline(65537)
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while handler.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                    pass
                return bytes(out)
            out += handler.rfile.read(size)
            handler.rfile.readline(65537)
    length = int(handler.headers.get("Content-Length") or 0)
    return handler.rfile.read(length) if length else b""


# ----- origin


@dataclass
class Fault:
    """One misbehaviour, used up by one GET: answer `status` (with `headers`) instead of the
    body, or send the body but reset the connection (`reset_after`) or go silent for
    `stall_seconds` (`stall_after`) once that many body bytes are out."""
    status: Optional[int] = None
    headers: dict[str, str] = field(default_factory=dict)
    reset_after: Optional[int] = None
    stall_after: Optional[int] = None
    stall_seconds: float = 0.0
    after: Optional[Callable[[], None]] = None  # run once the fault is done (e.g. change the resource)


@dataclass
class Resource:
    body: bytes = b""
    status: int = 200
    etag: Optional[str] = None
    rate: Optional[int] = None  # bytes per second; None = as fast as possible
    headers: dict[str, str] = field(default_factory=dict)
    ranges: bool = True
    content_length: bool = True  # False: no Content-Length, the body ends when the connection closes
    faults: list[Fault] = field(default_factory=list)  # consumed one per GET, first to last


@dataclass
class OriginRequest:
    time: float  # wall clock (time.time()) when the request head was read
    method: str
    path: str
    headers: dict[str, str]


class _OriginHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _TrackingServer

    def log_message(self, format, *args):  # silence
        pass

    def do_HEAD(self):
        self._serve(head=True)

    def do_GET(self):
        self._serve(head=False)

    def _serve(self, head: bool):
        origin: Origin = self.server.owner
        path = self.path.split("?")[0]
        origin._track(path, +1)
        try:
            self._respond(origin, path, head)
        finally:
            origin._track(path, -1)

    def _respond(self, origin: "Origin", path: str, head: bool):
        origin._record(OriginRequest(time.time(), self.command, path,
                                     {k.lower(): v for k, v in self.headers.items()}))
        res = origin.resources.get(path)
        if res is None:
            self._send_simple(404, b"no such resource\n")
            return
        fault = res.faults.pop(0) if res.faults and not head else None
        if fault is not None and fault.status is not None:
            self._send_simple(fault.status, b"origin says %d\n" % fault.status, fault.headers)
            if fault.after:
                fault.after()
            return
        if res.status != 200:
            self._send_simple(res.status, b"origin says %d\n" % res.status, res.headers)
            return
        body = res.body
        total = len(body)
        start, end = 0, total - 1
        status = 200
        rng = self.headers.get("Range")
        if_range = self.headers.get("If-Range")
        if rng and res.ranges and (if_range is None or if_range == res.etag):
            m = re.fullmatch(r"bytes=(\d*)-(\d*)", rng.strip())
            if m and (m.group(1) or m.group(2)):
                if m.group(1):
                    start = int(m.group(1))
                    end = int(m.group(2)) if m.group(2) else total - 1
                else:
                    start = max(0, total - int(m.group(2)))
                end = min(end, total - 1)
                if start >= total or start > end:
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{total}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                status = 206
        chunk = body[start:end + 1]
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        if res.content_length:
            self.send_header("Content-Length", str(len(chunk)))
        else:
            self.close_connection = True
        if res.ranges:
            self.send_header("Accept-Ranges", "bytes")
        if res.etag:
            self.send_header("ETag", res.etag)
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end}/{total}")
        for k, v in res.headers.items():
            self.send_header(k, v)
        self.end_headers()
        if head:
            return
        if fault is not None and fault.reset_after is not None:
            self._write_throttled(chunk[:fault.reset_after], res)
            self._reset()
            if fault.after:
                fault.after()
            return
        if fault is not None and fault.stall_after is not None:
            self._write_throttled(chunk[:fault.stall_after], res)
            origin.stopping.wait(fault.stall_seconds)
            self.close_connection = True
            return
        self._write_throttled(chunk, res)

    def _reset(self):
        """Abort the connection with a TCP RST (SO_LINGER 0), as a crashed origin would, after
        giving the client a moment to read what was sent (a RST discards unread data)."""
        self.wfile.flush()
        time.sleep(0.2)
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True

    def _write_throttled(self, data: bytes, res: Resource):
        """Write `data` at the resource's rate (which may change meanwhile, e.g. lifted for a
        resume), counting what reaches the socket."""
        origin: Origin = self.server.owner
        path = self.path.split("?")[0]
        tick = 0.05
        try:
            off = 0
            while off < len(data):
                if origin.stopping.is_set():
                    self.close_connection = True
                    return
                step = max(1, int(res.rate * tick)) if res.rate else len(data) - off
                piece = data[off:off + step]
                self.wfile.write(piece)
                self.wfile.flush()
                origin._count(path, len(piece))
                off += len(piece)
                if res.rate and off < len(data):
                    time.sleep(tick)
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True

    def _send_simple(self, status: int, body: bytes, headers: dict[str, str] | None = None):
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


class Origin(_ServerThread):
    """A real HTTP/1.1 origin. Register resources with `add`; read `requests` afterwards."""

    handler_class = _OriginHandler

    def __init__(self, host: str = "127.0.0.1"):
        super().__init__(host)
        self.resources: dict[str, Resource] = {}
        self.requests: list[OriginRequest] = []
        self.body_bytes: dict[str, int] = {}  # body bytes handed to the socket, per path
        self.responding: dict[str, int] = {}  # responses being written, per path
        self.concurrent = 0  # responses being written now, and the most ever at once
        self.peak_concurrent = 0
        self._lock = threading.Lock()

    def add(self, path: str, body: bytes = b"", *, status: int = 200, rate: int | None = None,
            etag: str | None = "auto", headers: dict[str, str] | None = None, ranges: bool = True,
            content_length: bool = True, faults: list[Fault] | None = None) -> str:
        if etag == "auto":
            etag = '"' + sha256_hex(body)[:20] + '"'
        self.resources[path] = Resource(body=body, status=status, etag=etag, rate=rate,
                                        headers=headers or {}, ranges=ranges,
                                        content_length=content_length, faults=list(faults or []))
        return self.url(path)

    def _track(self, path: str, delta: int):
        with self._lock:
            self.responding[path] = self.responding.get(path, 0) + delta
            self.concurrent += delta
            self.peak_concurrent = max(self.peak_concurrent, self.concurrent)

    def busy(self, path: str) -> bool:
        """True while a response for `path` is still being written."""
        with self._lock:
            return self.responding.get(path, 0) > 0

    def _count(self, path: str, n: int):
        with self._lock:
            self.body_bytes[path] = self.body_bytes.get(path, 0) + n

    def served(self, path: str) -> int:
        with self._lock:
            return self.body_bytes.get(path, 0)

    def url(self, path: str) -> str:
        return self.base_url + path

    def _record(self, req: OriginRequest):
        with self._lock:
            self.requests.append(req)

    def requests_for(self, path: str) -> list[OriginRequest]:
        with self._lock:
            return [r for r in self.requests if r.path == path]


# ----- webhook receiver


@dataclass
class Delivery:
    time: float
    path: str
    headers: dict[str, str]
    body: bytes
    answered: int
    verified: bool
    verify_error: Optional[str]
    payload: Any

    @property
    def webhook_id(self) -> Optional[str]:
        return self.headers.get("webhook-id")

    @property
    def type(self) -> Optional[str]:
        return self.payload.get("type") if isinstance(self.payload, dict) else None

    @property
    def data(self) -> dict:
        return self.payload.get("data") if isinstance(self.payload, dict) else {}


class _ReceiverHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _TrackingServer

    def log_message(self, format, *args):
        pass

    def do_POST(self):
        receiver: WebhookReceiver = self.server.owner
        body = _read_body(self)
        headers = {k.lower(): v for k, v in self.headers.items()}
        verified, error = True, None
        try:
            Webhook(receiver.secret).verify(body, headers, json_parse=False)
        except (WebhookVerificationError, ValueError, Exception) as e:  # noqa: BLE001 - record anything
            verified, error = False, f"{type(e).__name__}: {e}"
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        status = receiver._next_status(verified, payload)
        receiver._record(Delivery(time.time(), self.path, headers, body, status, verified, error, payload))
        reply = b"ok\n" if 200 <= status < 300 else b"nope\n"
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)


class WebhookReceiver(_ServerThread):
    """A real Standard Webhooks receiver: verifies every delivery with the reference
    library, can answer an error status N times first, can go down and come back."""

    handler_class = _ReceiverHandler

    def __init__(self, secret: str = WEBHOOK_SECRET, host: str = "127.0.0.1"):
        super().__init__(host)
        self.secret = secret
        self.deliveries: list[Delivery] = []
        self._lock = threading.Lock()
        self._fail_remaining = 0
        self._fail_status = 500
        self._fail_type: str | None = None

    @property
    def url(self) -> str:
        return self.base_url + "/hooks"

    def fail_next(self, n: int, status: int = 500, type: str | None = None) -> None:
        """Answer `status` to the next `n` deliveries (only those of event `type`, if given:
        other events, such as session.finished, go to the same URL and must not use up the
        failures)."""
        with self._lock:
            self._fail_remaining = n
            self._fail_status = status
            self._fail_type = type

    def _next_status(self, verified: bool, payload: Any) -> int:
        event_type = payload.get("type") if isinstance(payload, dict) else None
        with self._lock:
            if self._fail_remaining > 0 and self._fail_type in (None, event_type):
                self._fail_remaining -= 1
                return self._fail_status
        return 200 if verified else 401

    def _record(self, d: Delivery) -> None:
        with self._lock:
            self.deliveries.append(d)

    def events(self, type: str | None = None, job_id: str | None = None) -> list[Delivery]:
        with self._lock:
            out = list(self.deliveries)
        if type is not None:
            out = [d for d in out if d.type == type]
        if job_id is not None:
            out = [d for d in out if isinstance(d.data, dict) and d.data.get("id") == job_id]
        return out

    def wait_event(self, type: str, job_id: str, timeout: float = 20.0, acknowledged: bool = True) -> list[Delivery]:
        """Wait until an acknowledged (2xx) delivery of `type` for `job_id` arrived; return all
        deliveries of that type for that job."""
        def check():
            ds = self.events(type, job_id)
            if not acknowledged:
                return ds or None
            return ds if any(200 <= d.answered < 300 for d in ds) else None
        return wait_for(check, timeout=timeout,
                        message=lambda: f"{type} webhook for {job_id}; got {[(d.type, d.answered) for d in self.deliveries]}")


def expected_signature(webhook_id: str, timestamp: str, body: bytes, secret: bytes = WEBHOOK_SECRET_BYTES) -> str:
    """Standard Webhooks v1 signature, computed independently of the reference library."""
    import hmac
    mac = hmac.new(secret, f"{webhook_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()
