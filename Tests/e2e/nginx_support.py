"""nginx on a loopback port for the end-to-end tests, as a real server: one `server` with a root
directory, an access log of one line per request in the format a test asks for, and whatever
`locations` it needs (WebDAV PUT, a fixed answer, a redirect)."""
import os
import subprocess
from pathlib import Path

from e2e_support import wait_for
from tls_support import accepting, free_port

CONFIG = """
{user}
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 64; }}
http {{
    log_format lines '{log_format}';
    access_log {prefix}/access.log lines;
    client_body_temp_path {prefix}/tmp; proxy_temp_path {prefix}/tmp; fastcgi_temp_path {prefix}/tmp;
    uwsgi_temp_path {prefix}/tmp; scgi_temp_path {prefix}/tmp;
    client_max_body_size 0;
    server {{
        listen 127.0.0.1:{port};
        root {root};
        {locations}
    }}
}}
"""


class LoopbackNginx:
    """nginx serving `root` (made under `workdir`) on a free loopback port, until `stop`."""

    def __init__(self, workdir: Path, name: str, log_format: str, locations: str = ""):
        self.prefix, self.root = workdir / name, workdir / f"{name}-root"
        (self.prefix / "tmp").mkdir(parents=True)
        self.root.mkdir(parents=True)
        self.port = free_port()
        conf = self.prefix / "nginx.conf"
        conf.write_text(CONFIG.format(user="user root root;" if os.geteuid() == 0 else "", prefix=self.prefix, port=self.port,
                                      root=self.root, log_format=log_format, locations=locations))
        self.proc = subprocess.Popen(["nginx", "-p", str(self.prefix), "-e", str(self.prefix / "error.log"), "-c", str(conf),
                                      "-g", "daemon off;"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_for(lambda: accepting("127.0.0.1", self.port), timeout=10, message="nginx to listen")

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def log_lines(self) -> list[list[str]]:
        """Each request answered, as the fields of its access log line."""
        log = self.prefix / "access.log"
        return [line.split() for line in log.read_text().splitlines()] if log.exists() else []

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)
