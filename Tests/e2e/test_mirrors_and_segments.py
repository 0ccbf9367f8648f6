"""Mirrors, segmented downloads and a job's own rate cap, against a real origin on loopback
whose request log shows what fetchd asked for (Range or not) and how many bytes it served."""

from __future__ import annotations

import hashlib
import os
import re
import time

import pytest

from e2e_support import Fault, sha256_hex, wait_for

KiB = 1 << 10
MiB = 1 << 20


def range_start(request) -> int | None:
    match = re.fullmatch(r"bytes=(\d+)-\d*", request.headers.get("range", ""))
    return int(match.group(1)) if match else None


def ranged_requests(origin, path: str) -> list:
    return [r for r in origin.requests_for(path) if range_start(r) is not None]


def wrong(hex_digest: str) -> str:
    return ("0" if hex_digest[0] != "0" else "1") + hex_digest[1:]


def sums_line(hex_digest: str, name: str) -> bytes:
    """A digest file as `sha256sum`/`sha512sum` write it."""
    return f"{hex_digest}  {name}\n".encode()


# ----- body fields


def test_the_fields_are_validated_and_read_back(fetchd, origin):
    fd = fetchd(env={"FETCHD_CONNECTIONS_PER_DOWNLOAD": "3"})
    url = origin.add("/fields.bin", b"x")
    for field, value in [("connections", 0), ("connections", 17), ("connections", "4"), ("maxBytesPerSecond", 1000),
                         ("mirrors", "http://127.0.0.1/a"), ("mirrors", ["gopher://127.0.0.1/a"]),
                         ("mirrors", [f"http://127.0.0.1/{i}" for i in range(9)])]:
        r = fd.api.post("/downloads", {"url": url, "destination": "bad.bin", field: value})
        assert r.status == 400, (field, value, r.body)
        assert [e["field"] for e in r.json()["errors"]] == [field]

    job = fd.api.submit({"url": url, "destination": "default.bin", "earliestBeginDate": "2999-01-01T00:00:00Z"})
    assert (job["mirrors"], job["connections"], job["maxBytesPerSecond"]) == ([], 3, None)
    mirror = "http://127.0.0.1:1/copy.bin"
    job = fd.api.submit({"url": url, "destination": "given.bin", "mirrors": [mirror], "connections": 16,
                         "maxBytesPerSecond": 4096, "earliestBeginDate": "2999-01-01T00:00:00Z"})
    assert (job["mirrors"], job["connections"], job["maxBytesPerSecond"]) == ([mirror], 16, 4096)

    r = fd.api.request("PATCH", f"/downloads/{job['id']}", {"maxBytesPerSecond": 100})
    assert r.status == 400 and r.json()["errors"][0]["field"] == "maxBytesPerSecond"
    r = fd.api.request("PATCH", f"/downloads/{job['id']}", {"connections": 2})
    assert r.status == 400 and r.json()["errors"][0]["field"] == "connections"
    r = fd.api.request("PATCH", f"/downloads/{job['id']}", {"mirrors": None, "maxBytesPerSecond": 2048})
    assert r.status == 200, r.body
    assert (r.json()["mirrors"], r.json()["maxBytesPerSecond"]) == ([], 2048)
    assert fd.api.job(job["id"])["maxBytesPerSecond"] == 2048


# ----- mirrors


def failing_then_mirror(origin, body: bytes, name: str) -> tuple[str, str]:
    """A URL whose first answer breaks off after 256 KiB, and a mirror of the same file."""
    broken = origin.add(f"/{name}-a.bin", body, rate=2 * MiB, faults=[Fault(reset_after=256 * KiB)] * 20)
    mirror = origin.add(f"/{name}-b.bin", body)
    return broken, mirror


@pytest.mark.parametrize("vouch", ["sha256", "checksumURL"])
def test_a_mirror_with_a_digest_carries_the_partial_data_over(fetchd, origin, vouch):
    fd = fetchd()
    body = os.urandom(2 * MiB)
    broken, mirror = failing_then_mirror(origin, body, "digest")
    digest = {"sha256": sha256_hex(body)} if vouch == "sha256" else \
        {"checksumURL": origin.add("/SHA256SUMS", sums_line(sha256_hex(body), "digest.bin"))}
    job = fd.api.submit({"url": broken, "destination": "digest.bin", "mirrors": [mirror], **digest})
    done = fd.api.wait_state(job["id"], "completed", timeout=30)
    assert done["sha256"] == sha256_hex(body)
    assert fd.dest("digest.bin").read_bytes() == body

    first = origin.requests_for("/digest-b.bin")[0]
    assert range_start(first) and range_start(first) > 0, first.headers
    assert "if-range" not in first.headers  # the other URL's validator means nothing here
    assert origin.served("/digest-b.bin") < len(body)
    attempts = fd.api.get(f"/downloads/{job['id']}/attempts").json()["items"]
    assert attempts[0]["url"] == broken and attempts[0]["outcome"] == "retry"
    assert attempts[-1]["url"] == mirror and attempts[-1]["outcome"] == "completed"


def test_a_mirror_without_a_digest_starts_from_byte_zero(fetchd, origin):
    fd = fetchd()
    body = os.urandom(2 * MiB)
    broken, mirror = failing_then_mirror(origin, body, "plain")
    job = fd.api.submit({"url": broken, "destination": "plain.bin", "mirrors": [mirror]})
    done = fd.api.wait_state(job["id"], "completed", timeout=30)
    assert done["sha256"] == sha256_hex(body)
    assert fd.dest("plain.bin").read_bytes() == body
    assert all("range" not in r.headers for r in origin.requests_for("/plain-b.bin"))
    assert origin.served("/plain-b.bin") == len(body)
    urls = [a["url"] for a in fd.api.get(f"/downloads/{job['id']}/attempts").json()["items"]]
    assert urls[0] == broken and urls[-1] == mirror


def test_every_url_answering_404_fails_the_job(fetchd, origin):
    fd = fetchd()
    urls = [origin.url(f"/gone{i}.bin") for i in range(3)]
    job = fd.api.submit({"url": urls[0], "destination": "gone.bin", "mirrors": urls[1:]})
    failed = fd.api.wait_state(job["id"], "failed", timeout=20)
    assert failed["httpStatus"] == 404 and failed["error"]["code"] == "http_status"
    attempts = fd.api.get(f"/downloads/{job['id']}/attempts").json()["items"]
    assert [a["url"] for a in attempts] == urls
    assert [a["httpStatus"] for a in attempts] == [404, 404, 404]


def test_a_404_moves_on_to_the_next_url(fetchd, origin):
    fd = fetchd()
    body = os.urandom(64 * KiB)
    mirror = origin.add("/there.bin", body)
    job = fd.api.submit({"url": origin.url("/not-here.bin"), "destination": "there.bin", "mirrors": [mirror]})
    assert fd.api.wait_state(job["id"], "completed", timeout=20)["sha256"] == sha256_hex(body)


# ----- segmented downloads


def test_four_connections_fetch_four_ranges_at_once(fetchd, origin):
    fd = fetchd()
    body = os.urandom(8 * MiB)
    url = origin.add("/four.bin", body, rate=1 * MiB)  # per connection
    job = fd.api.submit({"url": url, "destination": "four.bin", "connections": 4, "sha256": sha256_hex(body)})
    wait_for(lambda: origin.responding.get("/four.bin", 0) == 4, timeout=15)
    done = fd.api.wait_state(job["id"], "completed", timeout=30)
    assert done["sha256"] == sha256_hex(body)
    assert fd.dest("four.bin").read_bytes() == body
    first, *ranged = origin.requests_for("/four.bin")
    # The first connection asks for the first MiB alone: its 206 tells the size and proves Range
    # is honoured; then four ranges cover the rest, back to back, each with If-Range.
    assert first.headers.get("range") == f"bytes=0-{MiB - 1}" and "if-range" not in first.headers
    assert len(ranged) == 4 and all(r.headers.get("if-range") for r in ranged)
    bounds = sorted(tuple(int(n) for n in r.headers["range"].split("=")[1].split("-")) for r in ranged)
    assert bounds[0][0] == MiB and bounds[-1][1] == len(body) - 1
    assert all(a[1] + 1 == b[0] for a, b in zip(bounds, bounds[1:])), bounds
    assert origin.served("/four.bin") == len(body)


@pytest.mark.parametrize("per_host, expected", [(None, 4), ("2", 2)])
def test_a_segmented_job_never_holds_more_connections_than_it_counts(fetchd, origin, per_host, expected):
    """At no moment, as the origin sees it, more connections than the job's `connections`, nor
    more than the per-host limit: the first request counts as one of them."""
    fd = fetchd(env={"FETCHD_MAX_TRANSFERS_PER_HOST": per_host} if per_host else None)
    body = os.urandom(6 * MiB)
    url = origin.add("/counted.bin", body, rate=1 * MiB)  # per connection
    job = fd.api.submit({"url": url, "destination": "counted.bin", "connections": 4, "sha256": sha256_hex(body)})
    wait_for(lambda: origin.responding.get("/counted.bin", 0) == expected, timeout=15)
    assert fd.api.wait_state(job["id"], "completed", timeout=30)["sha256"] == sha256_hex(body)
    assert (origin.peak_open, origin.peak_concurrent) == (expected, expected)


def test_one_connection_when_the_origin_does_not_honour_range(fetchd, origin):
    fd = fetchd()
    body = os.urandom(4 * MiB)
    url = origin.add("/whole.bin", body, rate=4 * MiB, ranges=False)
    job = fd.api.submit({"url": url, "destination": "whole.bin", "connections": 4})
    done = fd.api.wait_state(job["id"], "completed", timeout=30)
    assert done["sha256"] == sha256_hex(body)
    assert fd.dest("whole.bin").read_bytes() == body
    # The first request's 200 said Range is not honoured: the file came once, over that connection.
    assert len(origin.requests_for("/whole.bin")) == 1
    assert origin.served("/whole.bin") == len(body)
    assert origin.peak_open == 1


def test_a_killed_segmented_download_resumes_every_range(fetchd, origin):
    fd = fetchd()
    size = 8 * MiB
    body = os.urandom(size)
    url = origin.add("/killed.bin", body, rate=256 * KiB)  # per connection: about 1 MiB/s in all
    job = fd.api.submit({"url": url, "destination": "killed.bin", "connections": 4, "sha256": sha256_hex(body)})
    wait_for(lambda: origin.served("/killed.bin") >= size * 0.4, timeout=30)
    fd.kill()
    killed_at = time.time()
    origin.resources["/killed.bin"].rate = None
    fd.start()
    done = fd.api.wait_state(job["id"], "completed", timeout=30)
    assert done["sha256"] == sha256_hex(body)
    assert fd.dest("killed.bin").read_bytes() == body

    after = [r for r in origin.requests_for("/killed.bin") if r.time > killed_at]
    starts = sorted(range_start(r) for r in after)
    assert len(starts) == 4 and all(s is not None for s in starts), [r.headers for r in after]
    # Every range went on from where it got to, not from its start.
    assert all(start > i * 2 * MiB for i, start in enumerate(starts)), starts
    assert origin.served("/killed.bin") <= size * 1.10, origin.served("/killed.bin")


def test_a_kill_as_the_ranges_start_does_not_pass_their_holes_off_as_the_file(fetchd, origin):
    """Starting the ranges makes the partial file full size at once; killed right then, fetchd
    must resume the ranges, not take the file's size for bytes received (no digest given)."""
    fd = fetchd()
    size = 8 * MiB
    body = os.urandom(size)
    url = origin.add("/at-start.bin", body, rate=512 * KiB)
    job = fd.api.submit({"url": url, "destination": "at-start.bin", "connections": 4})
    partial = fd.partial_path(job["id"])
    wait_for(lambda: partial.exists() and partial.stat().st_size == size, timeout=30, interval=0.002,
             message="the ranges to start")
    fd.kill()
    origin.resources["/at-start.bin"].rate = None
    fd.start()
    done = fd.api.wait_state(job["id"], "completed", timeout=30)
    assert fd.dest("at-start.bin").read_bytes() == body
    assert done["sha256"] == sha256_hex(body)


# ----- a job's own rate cap


def test_a_capped_job_beside_an_uncapped_one(fetchd, origin):
    fd = fetchd()
    cap = 256 * KiB
    capped_body, free_body = os.urandom(1 * MiB), os.urandom(4 * MiB)
    started = time.monotonic()
    capped = fd.api.submit({"url": origin.add("/capped.bin", capped_body), "destination": "capped.bin", "maxBytesPerSecond": cap})
    free = fd.api.submit({"url": origin.add("/free.bin", free_body), "destination": "free.bin"})
    assert fd.api.wait_state(free["id"], "completed", timeout=30)["sha256"] == sha256_hex(free_body)
    assert fd.api.wait_state(capped["id"], "completed", timeout=30)["sha256"] == sha256_hex(capped_body)
    elapsed = time.monotonic() - started
    assert elapsed >= len(capped_body) / cap * 0.9, f"1 MiB under a 256 KiB/s cap arrived in {elapsed:.2f} s"


def test_patching_the_cap_of_a_running_job(fetchd, origin):
    fd = fetchd()
    body = os.urandom(2 * MiB)
    job = fd.api.submit({"url": origin.add("/slow.bin", body), "destination": "slow.bin", "maxBytesPerSecond": 16 * KiB})
    wait_for(lambda: fd.api.job(job["id"])["bytesReceived"] > 0, timeout=15)
    r = fd.api.request("PATCH", f"/downloads/{job['id']}", {"maxBytesPerSecond": None})
    assert r.status == 200 and r.json()["maxBytesPerSecond"] is None
    # At 16 KiB/s the rest would take two minutes; without the cap it comes at once.
    done = fd.api.wait_state(job["id"], "completed", timeout=20)
    assert done["sha256"] == sha256_hex(body)
    outcomes = [a["outcome"] for a in fd.api.get(f"/downloads/{job['id']}/attempts").json()["items"]]
    assert outcomes[0] == "changed" and outcomes[-1] == "completed"


def test_patching_the_mirrors_of_a_job(fetchd, origin):
    fd = fetchd()
    body = os.urandom(64 * KiB)
    job = fd.api.submit({"url": origin.url("/moved.bin"), "destination": "moved.bin",
                         "earliestBeginDate": "2999-01-01T00:00:00Z"})
    mirror = origin.add("/new-home.bin", body)
    r = fd.api.request("PATCH", f"/downloads/{job['id']}", {"mirrors": [mirror], "earliestBeginDate": None})
    assert r.status == 200 and r.json()["mirrors"] == [mirror]
    done = fd.api.wait_state(job["id"], "completed", timeout=20)
    assert done["sha256"] == sha256_hex(body)
    assert [a["url"] for a in fd.api.get(f"/downloads/{job['id']}/attempts").json()["items"]] == \
        [origin.url("/moved.bin"), mirror]


def test_a_paused_segmented_job_resumes_and_starts_over_if_its_partial_file_is_gone(fetchd, origin):
    fd = fetchd()
    body = os.urandom(8 * MiB)
    url = origin.add("/paused.bin", body, rate=512 * KiB)
    job = fd.api.submit({"url": url, "destination": "paused.bin", "connections": 4, "sha256": sha256_hex(body)})
    wait_for(lambda: origin.responding.get("/paused.bin", 0) == 4, timeout=15)
    # The ranges have written something (the first connection may hand over before its first byte).
    wait_for(lambda: fd.api.get(f"/downloads/{job['id']}").json()["bytesReceived"] > 0, timeout=15)
    assert fd.api.post(f"/downloads/{job['id']}/pause").status == 200
    paused = fd.api.wait_state(job["id"], "paused")
    assert paused["bytesReceived"] > 0
    fd.partial_path(job["id"]).unlink()
    origin.resources["/paused.bin"].rate = None
    assert fd.api.post(f"/downloads/{job['id']}/resume").status == 200
    done = fd.api.wait_state(job["id"], "completed", timeout=30)
    assert done["sha256"] == sha256_hex(body)
    assert fd.dest("paused.bin").read_bytes() == body


def test_a_digest_file_that_fails_once_does_not_move_the_job_to_a_mirror(fetchd, origin):
    fd = fetchd()
    body = os.urandom(64 * KiB)
    url, mirror = origin.add("/home/app.bin", body), origin.add("/elsewhere/app.bin", body)
    sums = origin.add("/home/SHA256SUMS", sums_line(sha256_hex(body), "app.bin"), faults=[Fault(status=503)])
    job = fd.api.submit({"url": url, "destination": "app.bin", "mirrors": [mirror], "checksumURL": sums})
    assert fd.api.wait_state(job["id"], "completed", timeout=20)["sha256"] == sha256_hex(body)
    # The 503 was the digest file's, not the URL's: the retry asked the same URL.
    assert [a["url"] for a in fd.api.get(f"/downloads/{job['id']}/attempts").json()["items"]] == [url, url]
    assert origin.requests_for("/elsewhere/app.bin") == []


# ----- checksums, digest files, directory destinations and resourceTimeout over several connections


@pytest.mark.parametrize("right", [True, False], ids=["right", "wrong"])
@pytest.mark.parametrize("algorithm", ["sha512", "sha1", "md5"])
def test_a_checksum_is_checked_on_the_file_the_ranges_filled(fetchd, origin, algorithm, right):
    fd = fetchd()
    body = os.urandom(2 * MiB)
    url = origin.add("/summed.bin", body, rate=1 * MiB)  # per connection
    actual = hashlib.new(algorithm, body).hexdigest()
    given = actual if right else wrong(actual)
    job = fd.api.submit({"url": url, "destination": "summed.bin", "connections": 4, "checksum": f"{algorithm}:{given}"})
    if right:
        done = fd.api.wait_state(job["id"], "completed", timeout=30)
        assert done["sha256"] == sha256_hex(body)
        assert fd.dest("summed.bin").read_bytes() == body
    else:
        error = fd.api.wait_state(job["id"], "failed", timeout=30)["error"]
        assert error["code"] == "checksum_mismatch", error
        assert actual in error["message"] and given in error["message"]
        assert not fd.dest("summed.bin").exists()
    assert ranged_requests(origin, "/summed.bin")


@pytest.mark.parametrize("right", [True, False], ids=["right", "wrong"])
def test_resumed_ranges_fetch_the_digest_file_again_and_are_checked_against_it(fetchd, origin, right):
    fd = fetchd()
    body = os.urandom(4 * MiB)
    url = origin.add("/dist/ranged.iso", body, rate=256 * KiB)
    actual = hashlib.sha512(body).hexdigest()
    sums = origin.add("/dist/SHA512SUMS", sums_line(actual if right else wrong(actual), "ranged.iso"))
    job = fd.api.submit({"url": url, "destination": "ranged.iso", "connections": 4, "checksumURL": sums})
    wait_for(lambda: origin.responding.get("/dist/ranged.iso", 0) == 4, timeout=15)
    wait_for(lambda: fd.api.job(job["id"])["bytesReceived"] > 0, timeout=15)
    assert fd.api.post(f"/downloads/{job['id']}/pause").status == 200
    fd.api.wait_state(job["id"], "paused")
    origin.resources["/dist/ranged.iso"].rate = None
    assert fd.api.post(f"/downloads/{job['id']}/resume").status == 200
    if right:
        assert fd.api.wait_state(job["id"], "completed", timeout=30)["sha256"] == sha256_hex(body)
        assert fd.dest("ranged.iso").read_bytes() == body
    else:
        error = fd.api.wait_state(job["id"], "failed", timeout=30)["error"]
        assert error["code"] == "checksum_mismatch", error
        assert not fd.dest("ranged.iso").exists()
    # Once per attempt: the resumed ranges were checked against a digest file of their own.
    assert len(origin.requests_for("/dist/SHA512SUMS")) == 2
    resumed = [r for r in ranged_requests(origin, "/dist/ranged.iso")
               if r.time > origin.requests_for("/dist/SHA512SUMS")[1].time]
    assert resumed


def test_a_directory_destination_is_named_by_content_disposition_over_several_connections(fetchd, origin):
    fd = fetchd()
    body = os.urandom(2 * MiB)
    url = origin.add("/get/7", body, rate=1 * MiB, headers={"Content-Disposition": 'attachment; filename="report 7.bin"'})
    job = fd.api.submit({"url": url, "destination": "inbox/", "connections": 4})
    done = fd.api.wait_state(job["id"], "completed", timeout=30)
    assert done["path"] == "inbox/report 7.bin", done
    assert fd.dest("inbox/report 7.bin").read_bytes() == body
    assert ranged_requests(origin, "/get/7")


def test_a_directory_destination_keeps_its_name_when_ranges_resume_after_a_kill(fetchd, origin):
    fd = fetchd()
    body = os.urandom(4 * MiB)
    url = origin.add("/get/8", body, rate=256 * KiB, headers={"Content-Disposition": 'attachment; filename="report 8.bin"'})
    job = fd.api.submit({"url": url, "destination": "inbox/", "connections": 4, "sha256": sha256_hex(body)})
    wait_for(lambda: origin.served("/get/8") >= len(body) * 0.4, timeout=30)
    fd.kill()
    killed_at = time.time()
    origin.resources["/get/8"].rate = None
    fd.start()
    done = fd.api.wait_state(job["id"], "completed", timeout=30)
    assert done["path"] == "inbox/report 8.bin", done
    assert fd.dest("inbox/report 8.bin").read_bytes() == body
    # After the restart only ranges were asked for: their responses named the file.
    after = [r for r in origin.requests_for("/get/8") if r.time > killed_at]
    assert after and all(range_start(r) is not None for r in after), [r.headers for r in after]


def test_resource_timeout_ends_a_slow_ranged_job(fetchd, origin):
    fd = fetchd()
    body = os.urandom(8 * MiB)
    url = origin.add("/slow-ranges.bin", body, rate=256 * KiB)  # per connection: 8 s in all
    job = fd.api.submit({"url": url, "destination": "slow-ranges.bin", "connections": 4, "resourceTimeout": "2s"})
    error = fd.api.wait_state(job["id"], "failed", timeout=20)["error"]
    assert error["code"] == "timeout" and "resourceTimeout" in error["message"], error
    assert not fd.dest("slow-ranges.bin").exists()
    assert ranged_requests(origin, "/slow-ranges.bin")
