"""A real S3-compatible store for the end-to-end tests: moto's standalone server (a
subprocess, IAM authentication on) behind a TCP proxy in this process that the tests
control, all on loopback.

    fetchd ──▶ S3Proxy (records every request; can go down, or hold answers) ──▶ moto_server
    tests' boto3 client ───────────────────────────────────────────────────────▶ moto_server

moto keeps its state in memory, so an outage is the proxy going down (new connections
refused, open ones dropped), never a restart of moto.

How moto 5.2.1 authenticates, which is what the harness relies on:

* `INITIAL_NO_AUTH_ACTION_COUNT=N` (moto/core/authorization.py): a process-wide counter,
  `ActionAuthenticatorMixin.request_count`, goes up by one for every request whose handler
  reaches an authorization check (any service, any key, any signature) while it is below N;
  from then on every such request is verified. /moto-api/* requests do not count. The
  harness sets N = 3 and spends exactly those on IAM CreateUser, CreateAccessKey and
  PutUserPolicy (s3:* on *), then checks that a wrong secret gets SignatureDoesNotMatch.
* The signature is recomputed with botocore's S3SigV4Auth over the headers the request
  lists in SignedHeaders, as they arrived — Host included, so a client that addresses the
  proxy verifies, since the proxy forwards bytes unchanged. botocore leaves `expect`,
  `user-agent`, `connection`, `keep-alive`, `te`, `trailer`, `transfer-encoding`, `upgrade`,
  `proxy-authorization` and `x-amzn-trace-id` out, so a request that signs one of them never
  verifies (libcurl 7.88 signs every CURLOPT_HTTPHEADER entry, even `Expect:` that removes one).
* The payload hash is the request's `x-amz-content-sha256` if signed (moto does not check
  it against the body; UNSIGNED-PAYLOAD is fine), else sha256 of the body, or for a bodiless
  request of its query fields url-encoded: without that header a bodiless request never verifies.
* Query strings are sorted and a bare `uploads` counts as `uploads=`; libcurl 7.88 signs its
  query verbatim, so a client must send `?uploads=` and its parameters sorted.
* A body sent as application/x-www-form-urlencoded (libcurl's default Content-Type for a
  POST) is parsed as a form and lost: CompleteMultipartUpload needs another Content-Type.
* werkzeug answers `Connection: close` to every request (and two `100 Continue`s to an
  `Expect: 100-continue`), so through moto a connection carries exactly one request.

`patch_moto()` (applied in the server process, see `serve_moto`) fixes three places where
moto 5.2.1 answers what no S3 answers, each of which a fetchd test would trip over:
  1. the canonical URI: moto signs the path werkzeug rebuilt (percent-decoded, re-quoted
     leaving !$&'()*+,:;=@ bare, non-ASCII decoded again), so a key such as `a (1).bin`,
     `é` or `x+y`, percent-encoded as S3 requires, gets SignatureDoesNotMatch. Patched, the
     canonical URI is what AWS documents: the raw request path, decoded, then URI-encoded
     byte by byte except A-Z a-z 0-9 - . _ ~ and /; the query likewise per parameter.
  2. UploadPart and CompleteMultipartUpload on an aborted (or unknown) upload raise a
     KeyError, an HTML 500 that a client would retry; patched they answer 404 NoSuchUpload.
  3. A request without an Authorization header raises a KeyError (HTML 500); patched it
     answers 403 AccessDenied.
"""

from __future__ import annotations

import functools
import json
import os
import random
import re
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional
from urllib.parse import parse_qsl, quote, unquote, unquote_to_bytes, urlsplit

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from e2e_support import http_url, wait_for

REGION = "us-east-1"
# The unauthenticated IAM requests the harness makes before authentication is enforced.
SETUP_ACTIONS = ("CreateUser", "CreateAccessKey", "PutUserPolicy")
S3_ALL_POLICY = {"Version": "2012-10-17",
                 "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}


# --------------------------------------------------------------------------- moto, patched


def canonical_uri(path: bytes) -> str:
    """The SigV4 canonical URI S3 computes for a request path as sent (bytes, percent-encoded
    or not): decoded, then every byte but A-Z a-z 0-9 - . _ ~ / as %XX (upper case)."""
    return quote(unquote_to_bytes(path), safe="/")


def canonical_query(query: bytes) -> str:
    """The SigV4 canonical query string: each name and value decoded, then encoded as above
    ('/' too), a bare name given `=`, the pairs sorted."""
    pairs = []
    for item in query.split(b"&"):
        if item:
            name, _, value = item.partition(b"=")
            pairs.append((quote(unquote_to_bytes(name), safe=""), quote(unquote_to_bytes(value), safe="")))
    return "&".join(f"{n}={v}" for n, v in sorted(pairs))


def _wire_request_target(environ: dict[str, Any]) -> Optional[bytes]:
    """The request-target's bytes as the client sent them. http.server reads the request line
    as latin-1 and werkzeug puts that through its WSGI encoding (utf-8 read as latin-1)."""
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if not raw:
        return None
    try:
        return raw.encode("latin-1").decode("utf-8").encode("latin-1")
    except UnicodeError:
        return None


def patch_moto() -> None:
    """The three fixes described at the top of this module, applied to moto in this process."""
    import flask
    from moto.iam import access_control
    from moto.s3.exceptions import NoSuchUpload
    from moto.s3.models import S3Backend

    # 1. Canonical URI and query string from the raw request-target, as S3 computes them.
    create_aws_request = access_control.S3IAMRequest._create_aws_request

    def _create_aws_request(self):
        request = create_aws_request(self)
        target = _wire_request_target(flask.request.environ) if flask.has_request_context() else None
        if target:
            parts = urlsplit(target)
            request.url = canonical_uri(parts.path or b"/") + ("?" + canonical_query(parts.query) if parts.query else "")
        return request

    access_control.S3IAMRequest._create_aws_request = _create_aws_request

    # 2. NoSuchUpload instead of a KeyError for an upload that is not (any longer) there.
    def requiring_upload(method):
        @functools.wraps(method)
        def checked(self, bucket_name, multipart_id, *args, **kwargs):
            if multipart_id not in self.get_bucket(bucket_name).multiparts:
                raise NoSuchUpload(upload_id=multipart_id)
            return method(self, bucket_name, multipart_id, *args, **kwargs)
        return checked

    for name in ("upload_part", "complete_multipart_upload"):
        setattr(S3Backend, name, requiring_upload(getattr(S3Backend, name)))

    # 3. AccessDenied instead of a KeyError for an unsigned request.
    init = access_control.S3IAMRequest.__init__

    def __init__(self, account_id, method, path, data, body, headers, action):
        if "Authorization" not in headers:
            self._data = data
            self._raise_access_denied()
        init(self, account_id, method, path, data, body, headers, action)

    access_control.S3IAMRequest.__init__ = __init__


def serve_moto(argv: list[str]) -> None:
    """`python3 s3_support.py serve-moto [moto_server options]`: moto_server, patched."""
    patch_moto()
    from moto.server import main
    main(argv)


# --------------------------------------------------------------------------- the proxy


@dataclass
class S3Request:
    """One HTTP request the proxy carried, as the client sent it."""
    time: float  # wall clock when its head had arrived
    method: str
    target: str  # the request-target as sent: "/bucket/a%20b?partNumber=3&uploadId=…"
    headers: dict[str, str]  # names lower-cased
    status: Optional[int] = None  # the final status moto answered; None until it did
    body_bytes: int = 0  # body bytes forwarded so far

    @property
    def raw_path(self) -> str:
        return self.target.split("?", 1)[0]

    @property
    def path(self) -> str:
        """The path, percent-decoded: "/bucket/a b"."""
        return unquote(self.raw_path)

    @property
    def query(self) -> str:
        return self.target.split("?", 1)[1] if "?" in self.target else ""

    @property
    def params(self) -> dict[str, str]:
        """The query's parameters, decoded; a bare `uploads` is {"uploads": ""}."""
        return dict(parse_qsl(self.query, keep_blank_values=True))

    def asks(self, method: str, parameter: str | None) -> bool:
        """Whether this is a `method` request with the query parameter `parameter` (None: with no query)."""
        return self.method == method and (parameter in self.params if parameter else not self.query)

    def __repr__(self) -> str:
        return f"<S3Request {self.method} {self.target} -> {self.status}>"


class _Stream:
    """Follows one direction of an HTTP/1.1 connection: heads, Content-Length and chunked
    bodies. `on_head(first_line, headers)` returns how the body is framed: ("length", n),
    ("chunked", 0) or ("close", 0) — until the connection ends. A stream it cannot follow
    marks itself `lost` and stops (the bytes are forwarded regardless)."""

    MAX_HEAD = 64 * 1024

    def __init__(self, on_head, on_body):
        self.on_head, self.on_body = on_head, on_body
        self.buf = bytearray()
        self.state = "head"
        self.remaining = 0
        self.lost = False

    def skip_body(self) -> None:
        """The body announced will not come (a refused `Expect: 100-continue`)."""
        if self.state == "body" and not self.buf:
            self.state = "head"

    def feed(self, data: bytes) -> None:
        if self.lost:
            return
        if self.state == "close":
            self.on_body(len(data))
            return
        if self.state == "body" and not self.buf:  # the common case, without copying
            n = min(self.remaining, len(data))
            self.on_body(n)
            self.remaining -= n
            if self.remaining == 0:
                self.state = "head"
            data = data[n:]
            if not data:
                return
        self.buf += data
        try:
            while self._step():
                pass
        except (ValueError, IndexError):
            self.lost = True
            self.buf.clear()

    def _line(self) -> Optional[bytes]:
        end = self.buf.find(b"\r\n")
        if end < 0:
            if len(self.buf) > self.MAX_HEAD:
                raise ValueError("line too long")
            return None
        line = bytes(self.buf[:end])
        del self.buf[:end + 2]
        return line

    def _step(self) -> bool:
        """Consume what the state allows; False when more bytes are needed."""
        if not self.buf:
            return False
        if self.state == "head":
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buf) > self.MAX_HEAD:
                    raise ValueError("head too long")
                return False
            lines = bytes(self.buf[:end]).decode("latin-1").split("\r\n")
            del self.buf[:end + 4]
            headers: dict[str, str] = {}
            for line in lines[1:]:
                name, colon, value = line.partition(":")
                if not colon:
                    raise ValueError(f"bad header line {line!r}")
                headers[name.strip().lower()] = value.strip()
            framing, length = self.on_head(lines[0], headers)
            if framing == "length" and length > 0:
                self.state, self.remaining = "body", length
            elif framing in ("chunked", "close"):
                self.state = "chunk-size" if framing == "chunked" else "close"
            return True
        if self.state == "close":
            self.on_body(len(self.buf))
            self.buf.clear()
            return False
        if self.state in ("body", "chunk-data"):
            n = min(self.remaining, len(self.buf))
            self.on_body(n)
            del self.buf[:n]
            self.remaining -= n
            if self.remaining == 0:
                self.state = "head" if self.state == "body" else "chunk-end"
            return bool(self.buf)
        line = self._line()
        if line is None:
            return False
        if self.state == "chunk-size":
            size = int(line.split(b";")[0].strip(), 16)
            self.state, self.remaining = ("trailer", 0) if size == 0 else ("chunk-data", size)
        elif self.state == "chunk-end":
            if line:
                raise ValueError("chunk not followed by CRLF")
            self.state = "chunk-size"
        elif self.state == "trailer" and not line:
            self.state = "head"
        return True


class _Connection:
    """A client connection and the one to moto it is piped to, each direction followed by a
    `_Stream`: requests recorded in the proxy's log, then matched with their responses."""

    def __init__(self, proxy: "S3Proxy", client: socket.socket, upstream: socket.socket):
        self.proxy, self.client, self.upstream = proxy, client, upstream
        self.lock = threading.Lock()
        self.unanswered: deque[S3Request] = deque()
        self.current: Optional[S3Request] = None  # the request whose body is coming
        self.holding = False  # the answer being forwarded waits for `S3Proxy.release_answers`
        self.requests = _Stream(self._request_head, self._request_body)
        self.responses = _Stream(self._response_head, lambda n: None)

    def _request_head(self, line: str, headers: dict[str, str]) -> tuple[str, int]:
        method, target, _version = line.split(" ")
        req = S3Request(time.time(), method, target, headers)
        self.proxy._record(req)
        self.unanswered.append(req)
        self.current = req
        if "chunked" in headers.get("transfer-encoding", "").lower():
            return "chunked", 0
        return "length", int(headers.get("content-length") or 0)

    def _request_body(self, n: int) -> None:
        if self.current is not None:
            self.current.body_bytes += n

    def _response_head(self, line: str, headers: dict[str, str]) -> tuple[str, int]:
        status = int(line.split(" ")[1])
        if 100 <= status < 200:  # interim (werkzeug sends two 100 Continue); the final one follows
            return "length", 0
        req = self.unanswered.popleft() if self.unanswered else None
        if req is not None:
            req.status = status
            self.holding = self.proxy.holds(req)
            if req is self.current and req.body_bytes == 0 and "100-continue" in req.headers.get("expect", ""):
                self.requests.skip_body()  # answered before its body: the client will not send it
        if (req is not None and req.method == "HEAD") or status in (204, 304):
            return "length", 0
        if "chunked" in headers.get("transfer-encoding", "").lower():
            return "chunked", 0
        if "content-length" in headers:
            return "length", int(headers["content-length"])
        return "close", 0

    def pump(self, source: socket.socket, sink: socket.socket, stream: _Stream) -> None:
        """Copy source to sink until source ends; then end sink's writing half."""
        try:
            while True:
                data = source.recv(256 * 1024)
                if not data:
                    break
                with self.lock:
                    stream.feed(data)  # before forwarding: a request is logged before moto sees it
                if stream is self.responses and self.holding:
                    self.proxy.answers_released.wait()
                sink.sendall(data)
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            self.drop()

    def drop(self) -> None:
        for s in (self.client, self.upstream):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        for s in (self.client, self.upstream):
            s.close()


def _unprivileged_port_outside_ephemeral_range() -> int:
    """A port no outgoing connection and no server bound to port 0 will take, so the proxy
    can let go of its port while down and bind it again when up."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    return random.randrange(10000, max(10001, low))


class S3Proxy:
    """A TCP proxy to `upstream` that forwards bytes unchanged, records every HTTP request it
    carries (`log`, S3Request each) and can go `down()` — new connections refused, open ones
    dropped — and `up()` again on the same port, or keep chosen answers from the client
    (`hold_answers`).

    moto answers `Connection: close` to everything, so each connection carries one request;
    the request parser nevertheless follows keep-alive, Content-Length and chunked bodies and
    `Expect: 100-continue`."""

    def __init__(self, upstream: tuple[str, int], host: str = "127.0.0.1"):
        self.upstream = upstream
        self.host = host
        self.port = 0
        self.log: list[S3Request] = []
        self.accepted = 0  # connections accepted, over every up period
        self._listener: Optional[socket.socket] = None
        self._connections: set[_Connection] = set()
        self._lock = threading.Lock()
        self._held: Optional[tuple[str, str]] = None
        self.answers_released = threading.Event()
        self.answers_released.set()

    @property
    def is_up(self) -> bool:
        return self._listener is not None

    @property
    def base_url(self) -> str:
        return http_url(self.host, self.port)

    def start(self) -> "S3Proxy":
        deadline = time.monotonic() + 10
        while True:
            port = _unprivileged_port_outside_ephemeral_range()
            try:
                self._listen(port)
                return self
            except OSError:
                if time.monotonic() > deadline:
                    raise

    def _listen(self, port: int) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, port))
            sock.listen(128)
        except OSError:
            sock.close()
            raise
        self.port = sock.getsockname()[1]
        self._listener = sock
        threading.Thread(target=self._accept_loop, args=(sock,), daemon=True,
                         name=f"S3Proxy:{self.port}").start()

    def _accept_loop(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:  # shut down by down()/stop()
                return
            self.accepted += 1
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self.upstream, timeout=10)
        except OSError:
            client.close()
            return
        upstream.settimeout(None)
        for s in (client, upstream):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = _Connection(self, client, upstream)
        with self._lock:
            if self._listener is None:  # went down meanwhile
                conn.close()
                return
            self._connections.add(conn)
        back = threading.Thread(target=conn.pump, args=(upstream, client, conn.responses), daemon=True)
        back.start()
        conn.pump(client, upstream, conn.requests)
        back.join()
        with self._lock:
            self._connections.discard(conn)
        conn.close()

    def _record(self, req: S3Request) -> None:
        with self._lock:
            self.log.append(req)

    def requests(self, method: str | None = None, path_prefix: str | None = None,
                 since: int = 0) -> list[S3Request]:
        """The requests carried (from log index `since`), of `method` if given, whose decoded
        path starts with `path_prefix` if given."""
        with self._lock:
            out = self.log[since:]
        return [r for r in out if (method is None or r.method == method)
                and (path_prefix is None or r.path.startswith(path_prefix))]

    def hold_answers(self, method: str, parameter: str | None) -> None:
        """Keep moto's answers to requests of `method` with the query parameter `parameter` (None:
        with no query, as PutObject) from the client until `release_answers`: what moto did, the
        client does not learn."""
        self._held = (method, parameter)
        self.answers_released.clear()

    def release_answers(self) -> None:
        self._held = None
        self.answers_released.set()

    def holds(self, req: S3Request) -> bool:
        held = self._held
        return held is not None and req.asks(*held)

    def down(self) -> None:
        """Refuse new connections (nothing listens on the port) and drop the open ones."""
        with self._lock:
            listener, self._listener = self._listener, None
            connections = list(self._connections)
        if listener is not None:
            listener.shutdown(socket.SHUT_RDWR)  # wakes accept()
            listener.close()
        for conn in connections:
            conn.drop()

    def up(self) -> None:
        """Listen again, on the same port."""
        if self._listener is not None:
            return
        deadline = time.monotonic() + 10
        while True:
            try:
                self._listen(self.port)
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def stop(self) -> None:
        self.down()


# --------------------------------------------------------------------------- moto server


def _logged_port(log: Path) -> Optional[int]:
    m = re.search(r"Running on http://[0-9.]+:(\d+)", log.read_text(errors="replace")) if log.exists() else None
    return int(m.group(1)) if m else None


class S3Server:
    """moto_server (patched, authentication on) with an `S3Proxy` in front; one IAM user
    with an access key allowed s3:*. `client` talks to moto directly (so checks work while
    the proxy is down and stay out of its log); fetchd gets the proxy's URL."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.proc: subprocess.Popen | None = None
        self.moto_port = 0
        self.proxy: S3Proxy | None = None
        self.access_key_id = ""
        self.secret_access_key = ""
        self.secret_file = workdir / "s3-secret"
        self.log_path = workdir / "moto.log"
        self.client: Any = None
        self._buckets = 0

    @property
    def moto_url(self) -> str:
        return http_url("127.0.0.1", self.moto_port)

    def start(self) -> "S3Server":
        self.workdir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT=str(len(SETUP_ACTIONS)))
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, str(Path(__file__).resolve()), "serve-moto", "--host", "127.0.0.1", "--port", "0"],
                env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)

        def bound():
            if self.proc.poll() is not None:
                raise AssertionError(f"moto_server exited with {self.proc.returncode}:\n{self.log_text()}")
            return _logged_port(self.log_path)

        self.moto_port = wait_for(bound, timeout=60, message="moto_server to log its address")
        wait_for(self._answering, timeout=30, message="moto_server to answer")
        self._create_user()
        self._check_authentication()
        self.proxy = S3Proxy(("127.0.0.1", self.moto_port)).start()
        return self

    def _answering(self) -> bool:
        try:  # /moto-api/ is moto's dashboard: no authentication, not counted
            with socket.create_connection(("127.0.0.1", self.moto_port), timeout=2) as s:
                s.sendall(b"GET /moto-api/ HTTP/1.1\r\nHost: moto\r\nConnection: close\r\n\r\n")
                return s.recv(12).startswith(b"HTTP/1.1 200")
        except OSError:
            return False

    def _boto(self, service: str, key: str, secret: str):
        return boto3.client(service, endpoint_url=self.moto_url, region_name=REGION,
                            aws_access_key_id=key, aws_secret_access_key=secret,
                            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                                          request_checksum_calculation="when_required",
                                          response_checksum_validation="when_required"))

    def _create_user(self) -> None:
        """The SETUP_ACTIONS, unauthenticated: a user, its key, its policy."""
        iam = self._boto("iam", "setup", "setup")
        iam.create_user(UserName="fetchd")
        key = iam.create_access_key(UserName="fetchd")["AccessKey"]
        iam.put_user_policy(UserName="fetchd", PolicyName="s3-all", PolicyDocument=json.dumps(S3_ALL_POLICY))
        self.access_key_id, self.secret_access_key = key["AccessKeyId"], key["SecretAccessKey"]
        fd = os.open(self.secret_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(self.secret_access_key)  # no newline
        self.client = self._boto("s3", self.access_key_id, self.secret_access_key)

    def _check_authentication(self) -> None:
        """Authentication must be on now: a wrong secret is refused, the right one accepted."""
        try:
            self._boto("s3", self.access_key_id, "not-" + self.secret_access_key).list_buckets()
            raise AssertionError("moto accepted a wrong secret: INITIAL_NO_AUTH_ACTION_COUNT did not run out")
        except ClientError as e:
            assert e.response["Error"]["Code"] == "SignatureDoesNotMatch", e.response
        self.client.list_buckets()

    def stop(self) -> None:
        if self.proxy is not None:
            self.proxy.stop()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def log_text(self, max_lines: int = 200) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return ""
        return "\n".join(lines[-max_lines:])

    def bucket_name(self, hint: str = "") -> str:
        """A new valid bucket name, unique in this server."""
        self._buckets += 1
        slug = re.sub(r"[^a-z0-9]+", "-", hint.lower()).strip("-")
        return f"b{self._buckets:03d}-{slug}"[:63].rstrip("-")


class S3:
    """What the `s3` fixture gives a test: the store's coordinates and credentials for
    fetchd (`env()`), a fresh `bucket`, a boto3 `client` (to moto directly), checks, the
    requests fetchd made through the proxy during this test, and `down()` / `up()`."""

    region = REGION

    def __init__(self, server: S3Server, test_name: str):
        self.server = server
        self.proxy: S3Proxy = server.proxy
        self.client = server.client
        self.access_key_id = server.access_key_id
        self.secret_access_key = server.secret_access_key
        self.secret_file = server.secret_file
        self._since = len(self.proxy.log)
        self._test_name = test_name
        self.bucket = self.create_bucket()

    @property
    def endpoint(self) -> str:
        """The proxy's URL, which fetchd is given (and signs as its Host)."""
        return self.proxy.base_url

    def env(self) -> dict[str, str]:
        """The FETCHD_S3_* variables for a fetchd process."""
        return {
            "FETCHD_S3_ENDPOINT": self.endpoint,
            "FETCHD_S3_REGION": self.region,
            "FETCHD_S3_ACCESS_KEY_ID": self.access_key_id,
            "FETCHD_S3_SECRET_ACCESS_KEY_FILE": str(self.secret_file),
            "FETCHD_S3_ADDRESSING": "path",
        }

    def url(self, key: str, bucket: str | None = None) -> str:
        """The `s3://bucket/key` destination of a job."""
        return f"s3://{bucket or self.bucket}/{key}"

    # -- the store, through moto directly

    def create_bucket(self, name: str | None = None, versioned: bool = False) -> str:
        name = name or self.server.bucket_name(self._test_name)
        self.client.create_bucket(Bucket=name)
        if versioned:
            self.client.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
        return name

    def put_object(self, key: str, body: bytes, bucket: str | None = None) -> dict:
        return self.client.put_object(Bucket=bucket or self.bucket, Key=key, Body=body)

    def get_object_bytes(self, key: str, bucket: str | None = None) -> bytes:
        return self.client.get_object(Bucket=bucket or self.bucket, Key=key)["Body"].read()

    def object_exists(self, key: str, bucket: str | None = None) -> bool:
        try:
            self.client.head_object(Bucket=bucket or self.bucket, Key=key)
            return True
        except ClientError as e:
            if e.response["Error"]["Code"] in ("404", "NoSuchKey"):
                return False
            raise

    def head_object(self, key: str, bucket: str | None = None) -> dict:
        return self.client.head_object(Bucket=bucket or self.bucket, Key=key)

    def list_multipart_uploads(self, bucket: str | None = None) -> list[dict]:
        """The uploads begun and neither completed nor aborted: [{"Key", "UploadId", …}]."""
        return self.client.list_multipart_uploads(Bucket=bucket or self.bucket).get("Uploads", [])

    def list_parts(self, key: str, upload_id: str, bucket: str | None = None) -> list[dict]:
        return self.client.list_parts(Bucket=bucket or self.bucket, Key=key, UploadId=upload_id).get("Parts", [])

    # -- what fetchd sent, through the proxy

    def requests(self, method: str | None = None, path_prefix: str | None = None) -> list[S3Request]:
        """Requests the proxy carried during this test, of `method` if given, whose decoded path
        starts with `path_prefix` (e.g. f"/{s3.bucket}/{key}") if given."""
        return self.proxy.requests(method, path_prefix, since=self._since)

    def part_uploads(self, key: str, bucket: str | None = None) -> list[S3Request]:
        """The UploadPart requests (PUT ?partNumber=N&uploadId=…) for `key`."""
        path = f"/{bucket or self.bucket}/{key}"
        return [r for r in self.requests("PUT") if r.path == path and "partNumber" in r.params]

    def describe_requests(self) -> str:
        return "\n".join(f"{r.time:.3f} {r.method} {r.target} -> {r.status} ({r.body_bytes} body bytes)"
                         for r in self.requests())

    def down(self) -> None:
        """Storage unreachable: connections to the endpoint refused, open ones dropped."""
        self.proxy.down()

    def up(self) -> None:
        self.proxy.up()

    def lose_a_created_upload(self, client, start: Callable[[], Any]) -> tuple[Any, str]:
        """Runs `start`, which makes the fetchd `client` create a multipart upload, with the
        answers to CreateMultipartUpload held; kills `client` once moto has created the upload.
        Returns what `start` returned and the id of the upload `client` never learnt (the
        bucket's only one)."""
        self.hold_answers("POST", "uploads")
        started = start()
        wait_for(lambda: [r for r in self.requests("POST") if r.asks("POST", "uploads") and r.status == 200], timeout=30,
                 message="the storage to create the upload")
        client.kill()
        self.release_answers()
        [lost] = [u["UploadId"] for u in self.list_multipart_uploads()]
        return started, lost

    def hold_answers(self, method: str, parameter: str | None) -> None:
        """moto's answers to requests of `method` with the query parameter `parameter` (None: with
        no query) reach the client only after `release_answers`."""
        self.proxy.hold_answers(method, parameter)

    def release_answers(self) -> None:
        self.proxy.release_answers()


if __name__ == "__main__":
    if sys.argv[1:2] != ["serve-moto"]:
        sys.exit("usage: s3_support.py serve-moto [moto_server options]")
    serve_moto(sys.argv[2:])
