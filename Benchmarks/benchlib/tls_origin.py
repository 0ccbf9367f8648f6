"""An HTTPS origin: nginx on loopback with a CA and a server certificate made by openssl, one
port offering HTTP/2 and HTTP/1.1 through ALPN and one offering HTTP/1.1 only. The access log
records each request's protocol and TLS cipher, so a run can show which ones each tool used."""
import os
import subprocess
import time

from . import procs
from .origin import accepting, free_port

CONFIG = """
user root root;
worker_processes 2;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    log_format proto '$server_port $request_uri $status $server_protocol $ssl_protocol $ssl_cipher';
    access_log {prefix}/access.log proto;
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 120s;
    client_body_temp_path {prefix}/tmp;
    default_type application/octet-stream;
    ssl_certificate {prefix}/server.pem;
    ssl_certificate_key {prefix}/server.key;
    server {{
        listen 127.0.0.1:{h2_port} ssl http2;
        location /files/ {{ alias {root}/; }}
    }}
    server {{
        listen 127.0.0.1:{h1_port} ssl;
        location /files/ {{ alias {root}/; }}
    }}
}}
"""


def _openssl(*args: str):
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make_certificates(directory: str) -> str:
    """A CA and a server certificate for 127.0.0.1 signed by it; returns the CA's PEM path."""
    os.makedirs(directory, exist_ok=True)
    ca, ca_key = os.path.join(directory, "ca.pem"), os.path.join(directory, "ca.key")
    key, csr = os.path.join(directory, "server.key"), os.path.join(directory, "server.csr")
    ext = os.path.join(directory, "server.ext")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl("req", "-x509", *ec, "-keyout", ca_key, "-out", ca, "-days", "2", "-subj", "/CN=fetchd bench CA",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")
    _openssl("req", *ec, "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    _openssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
             "-out", os.path.join(directory, "server.pem"), "-days", "2", "-extfile", ext)
    return ca


class TLSOrigin:
    def __init__(self, workdir: str, root: str):
        self.prefix = os.path.join(workdir, "nginx-tls")
        os.makedirs(os.path.join(self.prefix, "tmp"), exist_ok=True)
        self.ca = make_certificates(self.prefix)
        self.h2_port, self.h1_port = free_port(), free_port()
        conf = os.path.join(self.prefix, "nginx.conf")
        with open(conf, "w") as f:
            f.write(CONFIG.format(prefix=self.prefix, root=root, h2_port=self.h2_port, h1_port=self.h1_port))
        self.proc = procs.spawn(["nginx", "-p", self.prefix, "-e", os.path.join(self.prefix, "error.log"),
                                 "-c", conf, "-g", "daemon off;"], stderr=subprocess.PIPE)
        procs.wait_until(self._accepting, 10, what="nginx (TLS) to listen")

    def _accepting(self) -> bool:
        if self.proc.poll() is not None:
            raise RuntimeError("nginx exited: " + self.proc.stderr.read().decode(errors="replace"))
        return accepting(self.h2_port) and accepting(self.h1_port)

    def url(self, name: str, http2: bool) -> str:
        return f"https://127.0.0.1:{self.h2_port if http2 else self.h1_port}/files/{name}"

    def protocols(self, name: str) -> dict[str, int]:
        """How many requests for `name` each protocol and cipher carried, per port:
        {"<port> HTTP/2.0 TLSv1.3 TLS_AES_128_GCM_SHA256": n}."""
        counts: dict[str, int] = {}
        with open(os.path.join(self.prefix, "access.log")) as log:
            for line in log:
                port, uri, _, *protocol = line.split()
                if uri.endswith("/" + name):
                    key = " ".join([port, *protocol])
                    counts[key] = counts.get(key, 0) + 1
        return counts

    def stop(self):
        procs.stop(self.proc, timeout=5)
        time.sleep(0.05)
