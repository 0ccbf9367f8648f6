"""Real TLS and proxies for the end-to-end tests, all on loopback: certificates made with
openssl, an nginx origin speaking HTTPS (HTTP/2 through ALPN) beside plain HTTP, tinyproxy as
an HTTP proxy and microsocks as a SOCKS5 proxy (Debian packages; `make test` installs them).

Every server logs what it was asked, so a test can tell what reached it: nginx's access log
has the protocol of each request, tinyproxy and microsocks log every request they carry.
"""

from __future__ import annotations

import http.server
import os
import re
import socket
import ssl
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from e2e_support import WebhookReceiver, wait_for


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def accepting(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), 0.2).close()
        return True
    except OSError:
        return False


def openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


@dataclass
class Certificates:
    """A CA of the test's own, a server certificate it signed for 127.0.0.1, 127.0.0.2 and
    localhost, and a client certificate from a second CA (the one the origin trusts for clients)."""
    ca: Path
    server_cert: Path
    server_key: Path
    client_ca: Path
    client_cert: Path
    client_key: Path

    @staticmethod
    def make(directory: Path) -> "Certificates":
        directory.mkdir(parents=True, exist_ok=True)
        d = directory

        def authority(name: str) -> tuple[Path, Path]:
            cert, key = d / f"{name}.pem", d / f"{name}.key"
            openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", f"/CN=fetchd test {name}",
                    "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
            return cert, key

        def leaf(name: str, ca: tuple[Path, Path], extensions: str) -> tuple[Path, Path]:
            cert, key, csr, ext = d / f"{name}.pem", d / f"{name}.key", d / f"{name}.csr", d / f"{name}.ext"
            ext.write_text(extensions)
            openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", str(key), "-out", str(csr), "-subj", f"/CN={name}")
            openssl("x509", "-req", "-in", str(csr), "-CA", str(ca[0]), "-CAkey", str(ca[1]), "-CAcreateserial",
                    "-out", str(cert), "-days", "2", "-extfile", str(ext))
            return cert, key

        ca = authority("ca")
        client_ca = authority("client-ca")
        server = leaf("server", ca, "subjectAltName=IP:127.0.0.1,IP:127.0.0.2,DNS:localhost\n"
                                    "extendedKeyUsage=serverAuth\n")
        client = leaf("client", client_ca, "extendedKeyUsage=clientAuth\n")
        return Certificates(ca[0], server[0], server[1], client_ca[0], client[0], client[1])


NGINX_CONFIG = """
{user}
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 256; }}
http {{
    log_format proto '$request_method $uri $status $server_protocol $ssl_client_verify';
    access_log {prefix}/access.log proto;
    client_body_temp_path {prefix}/tmp; proxy_temp_path {prefix}/tmp; fastcgi_temp_path {prefix}/tmp;
    uwsgi_temp_path {prefix}/tmp; scgi_temp_path {prefix}/tmp;
    default_type application/octet-stream;
    server {{
        listen {host}:{https_port} ssl http2;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        {client_auth}
        root {root};
        {redirects}
    }}
    server {{
        listen {host}:{http_port};
        root {root};
        {redirects}
    }}
}}
"""


class NginxOrigin:
    """nginx serving `root` over HTTPS (HTTP/2 offered) and plain HTTP on `host`. `redirects`
    maps a path to the URL it answers 302 with, on both ports. With `client_ca`, the HTTPS port
    demands a client certificate issued by it."""

    def __init__(self, workdir: Path, certs: Certificates, *, host: str = "127.0.0.1",
                 client_ca: Path | None = None, redirects: dict[str, str] | None = None):
        self.host = host
        self.prefix = workdir / "nginx"
        self.root = workdir / "nginx-root"
        (self.prefix / "tmp").mkdir(parents=True, exist_ok=True)
        self.root.mkdir(parents=True, exist_ok=True)
        self.https_port, self.http_port = free_port(host), free_port(host)
        self.certs = certs
        self.client_ca = client_ca
        self.redirects = dict(redirects or {})
        self.proc: subprocess.Popen | None = None

    def add(self, name: str, body: bytes) -> None:
        (self.root / name).write_bytes(body)

    def https_url(self, path: str) -> str:
        return f"https://{self.host}:{self.https_port}/{path.lstrip('/')}"

    def http_url(self, path: str) -> str:
        return f"http://{self.host}:{self.http_port}/{path.lstrip('/')}"

    def start(self) -> "NginxOrigin":
        client_auth = (f"ssl_client_certificate {self.client_ca}; ssl_verify_client on;" if self.client_ca else "")
        redirects = " ".join(f"location = {path} {{ return 302 {target}; }}" for path, target in self.redirects.items())
        conf = self.prefix / "nginx.conf"
        conf.write_text(NGINX_CONFIG.format(
            # Run as root (as the suite is), workers would be nobody, who cannot read pytest's tmp.
            user="user root root;" if os.geteuid() == 0 else "",
            prefix=self.prefix, host=self.host, https_port=self.https_port, http_port=self.http_port,
            cert=self.certs.server_cert, key=self.certs.server_key, client_auth=client_auth,
            root=self.root, redirects=redirects))
        self.proc = subprocess.Popen(["nginx", "-p", str(self.prefix), "-e", str(self.prefix / "error.log"),
                                      "-c", str(conf), "-g", "daemon off;"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_for(lambda: self._up(), timeout=10, message="nginx to listen")
        return self

    def _up(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError("nginx exited: " + self.proc.stderr.read().decode(errors="replace"))
        return accepting(self.host, self.https_port) and accepting(self.host, self.http_port)

    def requests(self) -> list[dict]:
        """The access log: method, uri, status, protocol and client verification, one per request."""
        log = self.prefix / "access.log"
        if not log.exists():
            return []
        keys = ("method", "uri", "status", "protocol", "client_verify")
        return [dict(zip(keys, line.split())) for line in log.read_text().splitlines() if line.strip()]

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


class _LoggingProxy:
    """A proxy process on loopback whose log says what it carried."""

    kind = ""

    def __init__(self, workdir: Path):
        self.dir = workdir / self.kind
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def log(self) -> Path:
        return self.dir / "proxy.log"

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def start(self) -> "_LoggingProxy":
        self.proc = subprocess.Popen(self.command(), stdout=open(self.dir / "stdout.log", "ab"),
                                     stderr=subprocess.STDOUT, cwd=self.dir)
        wait_for(lambda: self.proc.poll() is None and accepting("127.0.0.1", self.port), timeout=10,
                 message=f"{self.kind} to listen")
        return self

    def command(self) -> list[str]:
        raise NotImplementedError

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


class TinyProxy(_LoggingProxy):
    """Debian's tinyproxy: plain HTTP requests as absolute URIs, https through CONNECT. Logs
    `Request (file descriptor N): GET http://… HTTP/1.1` or `CONNECT host:port …` per request."""

    kind = "tinyproxy"

    def __init__(self, workdir: Path, user: str | None = None, password: str | None = None):
        super().__init__(workdir)
        self.credentials = (user, password) if user else None

    def url(self) -> str:
        auth = f"{self.credentials[0]}:{self.credentials[1]}@" if self.credentials else ""
        return f"http://{auth}127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        conf = self.dir / "tinyproxy.conf"
        lines = [f"Port {self.port}", "Listen 127.0.0.1", "Timeout 30", f'LogFile "{self.log}"', "LogLevel Info",
                 "MaxClients 64", "Allow 127.0.0.1"]
        if self.credentials:
            lines.append(f"BasicAuth {self.credentials[0]} {self.credentials[1]}")
        conf.write_text("\n".join(lines) + "\n")
        return ["tinyproxy", "-d", "-c", str(conf)]

    def carried(self) -> list[str]:
        marker = re.compile(r"Request \(file descriptor \d+\): (.*)")
        return [m.group(1) for m in map(marker.search, self.log_text().splitlines()) if m]


class MicroSocks(_LoggingProxy):
    """Debian's microsocks, a SOCKS5 server; logs `client[N] 127.0.0.1: connected to HOST:PORT`
    per connection it opens (HOST as the client sent it: an address for socks5://, the name for
    socks5h://)."""

    kind = "microsocks"

    def url(self, scheme: str = "socks5") -> str:
        return f"{scheme}://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.dir / "stdout.log"

    def command(self) -> list[str]:
        return ["microsocks", "-i", "127.0.0.1", "-p", str(self.port)]

    def carried(self) -> list[str]:
        return [line.split("connected to ", 1)[1] for line in self.log_text().splitlines() if "connected to " in line]


class HTTPSWebhookReceiver(WebhookReceiver):
    """The suite's webhook receiver behind TLS, with the test CA's server certificate."""

    def __init__(self, certs: Certificates):
        super().__init__()
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(str(certs.server_cert), str(certs.server_key))

    def start(self, port: int | None = None) -> None:
        super().start(port)
        # Nobody knows the port yet, so no connection can come before the socket is wrapped;
        # the serving thread accepts through `server.socket` as it finds it.
        self.server.socket = self.context.wrap_socket(self.server.socket, server_side=True)

    @property
    def url(self) -> str:
        return f"https://{self.host}:{self.port}/hooks"


class HandshakeRefusingOrigin:
    """A TLS 1.2 server that demands a client certificate from `client_ca` and refuses the
    handshake (an alert) without one: Python's http.server behind ssl."""

    def __init__(self, certs: Certificates):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(certs.server_cert), str(certs.server_key))
        context.maximum_version = ssl.TLSVersion.TLSv1_2  # TLS 1.3 refuses after the handshake
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(str(certs.client_ca))
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.server.handle_error = lambda request, address: None  # refused handshakes are the point
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}/{path.lstrip('/')}"

    def start(self) -> "HandshakeRefusingOrigin":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
