"""A tus 1.0 server for the tests: aiohttp-tus (core, creation, termination) on loopback, with
its uploads in a directory, and a log of every request it answered — method, path,
Content-Length, status — one line each, flushed at once, so a test can count what arrived.

    python3 tus_server.py PORT UPLOAD_DIR LOG_FILE
"""
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


def main():
    port, upload_dir, log_path = int(sys.argv[1]), pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
    app = web.Application(client_max_size=1 << 30, middlewares=[logged(log_path)])
    setup_tus(app, upload_path=upload_dir, upload_url="/files")
    web.run_app(app, host="127.0.0.1", port=port, print=None)


if __name__ == "__main__":
    main()
