"""What caches, proxies and clients read from fetchd's response headers: a `Date` on every
response (RFC 9110 §6.6.1), job state never stored by caches, event streams marked for
proxies not to buffer, large JSON gzipped for clients that ask, and date-times in whole
seconds, which every client's default decoder reads."""

from __future__ import annotations

import gzip
import json
import re
import time
from email.utils import parsedate_to_datetime

from e2e_support import rfc3339

WHOLE_SECONDS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def assert_current_date(response) -> None:
    date = response.header("Date")
    assert date, f"no Date on {response!r}"
    assert re.fullmatch(r"[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT", date), date
    assert abs(parsedate_to_datetime(date).timestamp() - time.time()) < 5


def test_every_response_has_a_date_and_job_state_is_not_cacheable(fetchd, origin):
    fd = fetchd()
    url = origin.add("/f.bin", b"x" * 1000)
    created = fd.api.post("/downloads", {"url": url, "destination": "f.bin"})
    job = created.json()
    fd.api.wait_state(job["id"], "completed")
    responses = {
        "create": created,
        "get": fd.api.get(f"/downloads/{job['id']}"),
        "head": fd.api.request("HEAD", f"/downloads/{job['id']}"),
        "list": fd.api.get("/downloads"),
        "attempts": fd.api.get(f"/downloads/{job['id']}/attempts"),
        "session": fd.api.get("/sessions/default"),
        "events": fd.api.get(f"/downloads/{job['id']}/events"),
        "healthz": fd.api.get("/healthz"),
        "metrics": fd.api.get("/metrics"),
        "400": fd.api.post("/downloads", {"url": url, "destination": "../x"}),
        "404": fd.api.get("/downloads/nope"),
        "405": fd.api.request("OPTIONS", "/downloads"),
        "415": fd.api.post("/downloads", raw=b"url=x", content_type="text/plain"),
    }
    assert [r.status for r in responses.values()] == [201, 200, 200, 200, 200, 200, 200, 200, 200, 400, 404, 405, 415]
    for name, response in responses.items():
        assert_current_date(response)
        assert response.header("Cache-Control") == "no-store", name
    assert responses["405"].header("Allow")
    assert responses["events"].header("X-Accel-Buffering") == "no"
    assert responses["get"].header("X-Accel-Buffering") is None


def test_date_times_are_whole_seconds(fetchd, origin):
    fd = fetchd()
    url = origin.add("/f.bin", b"x" * 1000)
    begin = rfc3339(time.time() + 3600)
    job = fd.api.submit({"url": url, "destination": "later.bin", "earliestBeginDate": begin})
    assert job["earliestBeginDate"] == begin
    done = fd.api.wait_state(fd.api.submit({"url": url, "destination": "now.bin"})["id"], "completed")
    for name in ("createdAt", "startedAt", "finishedAt"):
        assert WHOLE_SECONDS.match(done[name]), (name, done[name])
    attempt = fd.api.get(f"/downloads/{done['id']}/attempts").json()["items"][0]
    assert WHOLE_SECONDS.match(attempt["startedAt"]) and WHOLE_SECONDS.match(attempt["endedAt"])


def test_large_lists_are_gzipped_for_clients_that_accept_it(fetchd, origin):
    fd = fetchd()
    url = origin.add("/f.bin", b"x" * 1000)
    later = rfc3339(time.time() + 3600)
    for i in range(100):
        fd.api.submit({"url": url, "destination": f"many/{i}.bin", "earliestBeginDate": later})

    plain = fd.api.get("/downloads?limit=100")
    assert plain.header("Content-Encoding") is None
    assert plain.header("Vary") == "Accept-Encoding"
    assert len(plain.json()["items"]) == 100

    zipped = fd.api.get("/downloads?limit=100", headers={"Accept-Encoding": "gzip, deflate"})
    assert zipped.header("Content-Encoding") == "gzip"
    assert zipped.header("Vary") == "Accept-Encoding"
    assert int(zipped.header("Content-Length")) == len(zipped.body) < len(plain.body) / 5
    assert json.loads(gzip.decompress(zipped.body)) == plain.json()

    refused = fd.api.get("/downloads?limit=100", headers={"Accept-Encoding": "gzip;q=0, identity"})
    assert refused.header("Content-Encoding") is None and refused.body == plain.body

    one = fd.api.get("/downloads?limit=1", headers={"Accept-Encoding": "gzip"})
    assert one.header("Content-Encoding") is None, "a small body is not worth compressing"
