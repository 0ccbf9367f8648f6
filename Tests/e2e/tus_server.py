"""A tus 1.0 server for the tests: aiohttp-tus (core, creation, termination) on loopback, with
its uploads in a directory, and a log of every request it answered — method, path,
Content-Length, status — one line each, flushed at once, so a test can count what arrived.

With `--checksum` it also offers the checksum extension (sha1, sha256), which aiohttp-tus lacks:
a PATCH whose `Upload-Checksum` does not match its body is refused with 460, and so is the
first checksummed PATCH with `--refuse-first-checksum` (as if it had been damaged on the way).

    python3 tus_server.py PORT UPLOAD_DIR LOG_FILE [--checksum [--refuse-first-checksum]]
"""
import base64
import hashlib
import pathlib
import sys

from aiohttp import web
from aiohttp_tus import setup_tus


def logged(log_path: pathlib.Path):
    @web.middleware
    async def log_requests(request: web.Request, handler):
        status = 500
        try:
            response = await handler(request)
            status = response.status
            return response
        except web.HTTPException as error:
            status = error.status
            raise
        finally:
            with log_path.open("a") as log:
                log.write(f"{request.method} {request.path} {request.content_length or 0} {status}\n")
    return log_requests


def checksums(refuse_first: bool):
    refused = []

    @web.middleware
    async def check(request: web.Request, handler):
        if request.method == "PATCH" and "Upload-Checksum" in request.headers:
            name, _, digest = request.headers["Upload-Checksum"].partition(" ")
            body = await request.read()  # aiohttp keeps it for the handler
            if name not in ("sha1", "sha256"):
                return web.Response(status=400, headers={"Tus-Resumable": "1.0.0"})
            matches = base64.b64encode(hashlib.new(name, body).digest()).decode() == digest
            if not matches or (refuse_first and not refused):
                refused.append(True)
                return web.Response(status=460, headers={"Tus-Resumable": "1.0.0"})
        response = await handler(request)
        if request.method == "OPTIONS":
            response.headers["Tus-Extension"] = response.headers.get("Tus-Extension", "") + ",checksum"
            response.headers["Tus-Checksum-Algorithm"] = "sha1,sha256"
        return response
    return check


def main():
    port, upload_dir, log_path = int(sys.argv[1]), pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
    middlewares = [logged(log_path)]
    if "--checksum" in sys.argv:
        middlewares.append(checksums("--refuse-first-checksum" in sys.argv))
    app = web.Application(client_max_size=1 << 30, middlewares=middlewares)
    setup_tus(app, upload_path=upload_dir, upload_url="/files")
    web.run_app(app, host="127.0.0.1", port=port, print=None)


if __name__ == "__main__":
    main()
