#!/usr/bin/env python3
"""A small origin for trying fetchd on one machine (README, Walkthrough).

    python3 scripts/demo/origin.py DIR [PORT]        # default port 9000, on 127.0.0.1

Serves the files in DIR as a web server or CDN would: a strong `ETag`, `Range` and `If-Range`
(so fetchd resumes and splits a file over several connections), and `HEAD`. A URL with
`?expires=<Unix time>` in the past answers `403`, as an expired signed link does. A `PUT` under
`/inbox/` stores its body there (`201`), as an upload target would. Standard library only; one
line per request on standard error."""

import email.utils
import os
import re
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
PORT = int(sys.argv[2]) if len(sys.argv) > 2 else 9000


class Origin(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_HEAD(self):
        self.answer(body=False)

    def do_GET(self):
        self.answer(body=True)

    def do_PUT(self):
        path = (ROOT / unquote(urlsplit(self.path).path).lstrip("/")).resolve()
        length = self.headers.get("Content-Length", "")
        if ROOT / "inbox" not in path.parents or not length.isdigit():
            return self.plain(403, "PUT goes under /inbox/, with a Content-Length\n", True)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self.rfile.read(int(length)))
        self.plain(201, "stored\n", True)

    def answer(self, body):
        url = urlsplit(self.path)
        expires = parse_qs(url.query).get("expires")
        if expires and expires[0].isdigit() and int(expires[0]) < time.time():
            return self.plain(403, "link expired\n", body)
        path = (ROOT / unquote(url.path).lstrip("/")).resolve()
        if ROOT not in path.parents or not path.is_file():
            return self.plain(404, "not found\n", body)
        stat = path.stat()
        size, etag = stat.st_size, f'"{stat.st_size:x}-{stat.st_mtime_ns:x}"'
        if etag in [tag.strip() for tag in self.headers.get("If-None-Match", "").split(",")]:
            self.send_response(304)
            self.send_header("ETag", etag)
            self.end_headers()
            return
        start, end, status = 0, size - 1, 200
        match = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range", ""))
        if match and self.headers.get("If-Range", etag) == etag and match.group(1) + match.group(2):
            first, last = match.group(1), match.group(2)
            start, end = (int(first), min(int(last or size - 1), size - 1)) if first else (max(size - int(last), 0), size - 1)
            if start >= size or start > end:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            status = 206
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(end - start + 1))
        self.send_header("ETag", etag)
        self.send_header("Last-Modified", email.utils.formatdate(stat.st_mtime, usegmt=True))
        self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.end_headers()
        if body:
            with path.open("rb") as file:
                file.seek(start)
                left = end - start + 1
                while left > 0:
                    chunk = file.read(min(left, 1 << 16))
                    if not chunk:
                        break
                    try:
                        self.wfile.write(chunk)
                    except (BrokenPipeError, ConnectionResetError):
                        self.close_connection = True  # the client went away: a pause, a cancel
                        return
                    left -= len(chunk)

    def plain(self, status, text, body):
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body:
            self.wfile.write(data)


if __name__ == "__main__":
    ThreadingHTTPServer.daemon_threads = True
    print(f"serving {ROOT} on http://127.0.0.1:{PORT}/", file=sys.stderr)
    ThreadingHTTPServer(("127.0.0.1", PORT), Origin).serve_forever()
