"""The tus server the upload tests send to (tus_server.py: aiohttp-tus), started per test."""
import subprocess
import sys
from pathlib import Path

from e2e_support import wait_for
from tls_support import accepting, free_port


class TusServer:
    """aiohttp-tus on a loopback port: its creation endpoint is `endpoint`, finished uploads land
    in `uploads` under the file name the client announced, and `requests()` lists what it answered."""

    def __init__(self, workdir: Path, options: tuple[str, ...] = ()):
        """`options`: tus_server.py's, e.g. ("--checksum",)."""
        self.uploads, self.log = workdir / "tus-uploads", workdir / "tus-requests.log"
        self.uploads.mkdir(parents=True)
        self.port = free_port()
        # aiohttp logs each request a client cut off to stderr: into a file, since a pipe nobody
        # reads fills and stops the server.
        with (workdir / "tus-server.log").open("ab") as errors:
            self.proc = subprocess.Popen([sys.executable, str(Path(__file__).parent / "tus_server.py"), str(self.port),
                                          str(self.uploads), str(self.log), *options],
                                         stdout=subprocess.DEVNULL, stderr=errors)
        wait_for(lambda: accepting("127.0.0.1", self.port), timeout=20, message="the tus server to listen")

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/files"

    def requests(self) -> list[tuple[str, str, int, int]]:
        """(method, path, Content-Length, status) of each request answered, in order."""
        if not self.log.exists():
            return []
        return [(m, p, int(n), int(s)) for m, p, n, s in (line.split() for line in self.log.read_text().splitlines())]

    def open_resources(self) -> list[str]:
        """Uploads begun and neither finished nor terminated (aiohttp-tus keeps each one's bytes
        in .resources until then)."""
        resources = self.uploads / ".resources"
        return sorted(p.name for p in resources.iterdir()) if resources.exists() else []

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)
