"""Starting fetchd for a benchmark and talking to its API."""
import http.client
import json
import os
import re
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from . import procs

LISTENING = re.compile(rb"listening address=127\.0\.0\.1:(\d+)")


class Api:
    """A JSON client with one keep-alive connection per thread."""

    def __init__(self, port: int):
        self.port = port
        self._local = threading.local()

    def _conn(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        return conn

    def request(self, method: str, path: str, body=None, headers: dict | None = None) -> tuple[int, object]:
        data = json.dumps(body).encode() if body is not None else None
        headers = {**({"Content-Type": "application/json"} if data is not None else {}), **(headers or {})}
        for attempt in (1, 2):
            conn = self._conn()
            try:
                conn.request(method, path, data, headers)
                resp = conn.getresponse()
                raw = resp.read()
                break
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt == 2:
                    raise
        ctype = resp.getheader("Content-Type", "")
        return resp.status, (json.loads(raw) if raw and "json" in ctype else raw)

    def get(self, path: str):
        status, body = self.request("GET", path)
        if status != 200:
            raise RuntimeError(f"GET {path}: {status} {body!r:.300}")
        return body

    def submit(self, job: dict, headers: dict | None = None) -> dict:
        status, body = self.request("POST", "/downloads", job, headers)
        if status != 201:
            raise RuntimeError(f"POST /downloads: {status} {body!r:.300}")
        return body

    def submit_many(self, jobs: list[dict], threads: int = 8) -> list[dict]:
        with ThreadPoolExecutor(threads) as pool:
            return list(pool.map(self.submit, jobs, chunksize=16))

    def wait_terminal(self, job_id: str, kind: str = "download") -> dict:
        """Follows the job's event stream, which ends right after its terminal state; returns the job."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        try:
            conn.request("GET", f"/{kind}s/{job_id}/events")
            conn.getresponse().read()
        finally:
            conn.close()
        return self.get(f"/{kind}s/{job_id}")

    def upload(self, job: dict) -> dict:
        status, body = self.request("POST", "/uploads", job)
        if status != 201:
            raise RuntimeError(f"POST /uploads: {status} {body!r:.300}")
        return body

    def session_counts(self, session: str) -> dict:
        return self.get(f"/sessions/{session}")["counts"]

    def ready(self) -> bool:
        try:
            return self.request("GET", "/readyz")[0] == 200
        except OSError:
            return False


class Fetchd:
    """One fetchd process on 127.0.0.1:<any port>, with its data directory and download root."""

    def __init__(self, binary: str, workdir: str, start: bool = True, **settings):
        self.binary = binary
        self.data_dir = os.path.join(workdir, "data")
        self.root = os.path.join(workdir, "downloads")
        self.log_path = os.path.join(workdir, "fetchd.log")
        os.makedirs(self.root, exist_ok=True)
        self.settings = {
            "FETCHD_LISTEN": "127.0.0.1:0",
            "FETCHD_DATA_DIR": self.data_dir,
            "FETCHD_DOWNLOAD_ROOT": self.root,
            "FETCHD_ALLOW_PRIVATE_NETWORKS": "true",
            "FETCHD_DISK_RESERVE": "256MiB",
            **{k: str(v) for k, v in settings.items()},
        }
        self.proc = None
        if start:
            self.start()

    def start(self) -> float:
        """Starts the process and waits for /readyz; returns the seconds from exec to ready."""
        started = time.perf_counter()
        env = {**os.environ, **self.settings}
        with open(self.log_path, "ab") as log:
            offset = self.log_offset = log.tell()
            self.proc = procs.spawn([self.binary], env=env, stderr=log, stdout=log)
        self.port = int(procs.wait_until(lambda: self._logged_port(offset), 60, 0.005, "fetchd to listen"))
        self.api = Api(self.port)
        procs.wait_until(self.api.ready, 60, 0.005, "fetchd /readyz")
        return time.perf_counter() - started

    def _logged_port(self, offset: int):
        if self.proc.poll() is not None:
            raise RuntimeError(f"fetchd exited {self.proc.returncode}; see {self.log_path}")
        with open(self.log_path, "rb") as f:
            f.seek(offset)
            match = LISTENING.search(f.read())
        return match and match.group(1)

    def logged_times(self, message: str) -> list[int]:
        """Timestamps (ms) of this process's text log lines `<RFC 3339> <level> <message> ...`."""
        from .times import parse_rfc3339
        pattern = re.compile(rb"^(\S+) \w+ " + re.escape(message.encode()) + rb"( |$)", re.M)
        with open(self.log_path, "rb") as f:
            f.seek(self.log_offset)
            return [parse_rfc3339(m.group(1).decode()) for m in pattern.finditer(f.read())]

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self, timeout: float = 60) -> float:
        """SIGTERM; returns the seconds fetchd took to exit. Past `timeout` it is killed and that is an error."""
        start = time.perf_counter()
        code = procs.stop(self.proc, timeout=timeout)
        if code != 0:
            raise RuntimeError(f"fetchd exited {code} on SIGTERM (-9: still running after {timeout:.0f} s); "
                               f"see {self.log_path}")
        return time.perf_counter() - start

    def kill(self):
        procs.stop(self.proc, signal.SIGKILL)
