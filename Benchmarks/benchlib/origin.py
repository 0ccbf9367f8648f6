"""The origin every tool downloads from: nginx on loopback serving generated files.

`/files/...` is served at full speed, `/slow/...` the same files at `limit_rate` per connection;
`/in/...` takes uploads (`PUT`, nginx's WebDAV module) into `<prefix>/dav/in/`.
"""
import os
import socket
import subprocess
import time

from . import procs

CONFIG = """
user root root;
worker_processes 2;
worker_rlimit_nofile 16384;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 8192; }}
http {{
    {access_log}
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    keepalive_timeout 120s;
    client_body_temp_path {prefix}/tmp;
    default_type application/octet-stream;
    server {{
        {listen}
        location /files/ {{ alias {root}/; }}
        location /slow/ {{ alias {root}/; limit_rate {limit_rate}; }}
        location /in/ {{ root {prefix}/dav; dav_methods PUT; create_full_put_path on; client_max_body_size 0; }}
    }}
}}
"""

# Buffered: the timestamps are taken per request, the writes come a second late at most.
ACCESS_LOG = "log_format stamped '$msec $status $request_uri'; access_log {path} stamped buffer=256k flush=1s;"


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """`count` distinct free ports: the sockets stay bound until all are picked, so the kernel
    cannot hand out one port twice (it may, to sockets closed one after another)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def accepting(port: int) -> bool:
    """Whether something accepts TCP connections on 127.0.0.1:port."""
    try:
        socket.create_connection(("127.0.0.1", port), 0.2).close()
        return True
    except OSError:
        return False


def make_file(path: str, size: int):
    """A file of `size` random bytes, kept if it already has that size."""
    if os.path.exists(path) and os.path.getsize(path) == size:
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    chunk = 1 << 20
    with open(path + ".tmp", "wb") as f:
        left = size
        while left > 0:
            f.write(os.urandom(min(chunk, left)))
            left -= chunk
    os.rename(path + ".tmp", path)


def make_small_files(directory: str, count: int, size: int) -> list[str]:
    """`count` distinct files f0..f{count-1}.bin of `size` bytes; returns their names."""
    os.makedirs(directory, exist_ok=True)
    names = [f"f{i}.bin" for i in range(count)]
    for name in names:
        path = os.path.join(directory, name)
        if not (os.path.exists(path) and os.path.getsize(path) == size):
            with open(path, "wb") as f:
                f.write(os.urandom(size))
    # Read once, so that the origin serves them from memory to every tool: after the big files of
    # the scenarios before, they were often out of the page cache, and the first tool of the first
    # round (always fetchd) waited for the disk (1.00-1.03 s where its later rounds took 0.80-0.89).
    for name in names:
        with open(os.path.join(directory, name), "rb") as f:
            f.read()
    return names


class Origin:
    """nginx on `ports` loopback ports (`port` is the first): more than one makes as many host:ports."""

    def __init__(self, workdir: str, root: str, limit_rate: str = "100k", ports: int = 1, access_log: bool = False):
        """`access_log`: log each request as `<$msec> <status> <request URI>` to `self.access_log`."""
        self.prefix = os.path.join(workdir, "nginx")
        self.access_log = os.path.join(self.prefix, "access.log")
        os.makedirs(os.path.join(self.prefix, "tmp"), exist_ok=True)
        self.ports = free_ports(ports)
        self.port = self.ports[0]
        conf = os.path.join(self.prefix, "nginx.conf")
        listen = " ".join(f"listen 127.0.0.1:{port};" for port in self.ports)
        with open(conf, "w") as f:
            f.write(CONFIG.format(prefix=self.prefix, listen=listen, root=root, limit_rate=limit_rate,
                                  access_log=ACCESS_LOG.format(path=self.access_log) if access_log else "access_log off;"))
        self.proc = procs.spawn(["nginx", "-p", self.prefix, "-c", conf, "-g", "daemon off;"],
                                stderr=subprocess.PIPE)
        procs.wait_until(self._accepting, 10, what="nginx to listen")

    def _accepting(self) -> bool:
        if self.proc.poll() is not None:
            raise RuntimeError("nginx exited: " + self.proc.stderr.read().decode(errors="replace"))
        return all(accepting(port) for port in self.ports)

    def upload_url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/in/{name}"

    def uploaded(self, name: str) -> str:
        """Where an upload to `upload_url(name)` lands."""
        return os.path.join(self.prefix, "dav", "in", name)

    def url(self, name: str, slow: bool = False) -> str:
        return f"http://127.0.0.1:{self.port}/{'slow' if slow else 'files'}/{name}"

    def cpu_seconds(self) -> float:
        """The CPU time nginx has used so far, its master's and its workers'."""
        with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
            workers = [int(pid) for pid in f.read().split()]
        return sum(procs.cpu_seconds(pid) for pid in [self.proc.pid] + workers)

    def stop(self):
        procs.stop(self.proc, timeout=5)
        time.sleep(0.05)
