"""Checksums in every algorithm, digest files, directory destinations named by the origin,
onConflict and resourceTimeout, end to end against a real origin on loopback."""

from __future__ import annotations

import hashlib
import os
import time

import pytest

from e2e_support import Fault, rfc3339, sha256_hex

ALGORITHMS = ["sha256", "sha512", "sha1", "md5"]


@pytest.fixture(scope="module")
def api(shared_fetchd):
    return shared_fetchd.api


def digest(algorithm: str, body: bytes) -> str:
    return hashlib.new(algorithm, body).hexdigest()


def wrong(hex_digest: str) -> str:
    return ("0" if hex_digest[0] != "0" else "1") + hex_digest[1:]


def failure(api, job_id: str) -> dict:
    failed = api.wait_state(job_id, "failed")
    return failed["error"]


# ---------------------------------------------------------------------------- checksum


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_a_right_checksum_completes_and_is_read_back(shared_fetchd, shared_origin, api, algorithm):
    body = os.urandom(200_000)
    url = shared_origin.add(f"/checksum-right-{algorithm}.bin", body)
    given = f"{algorithm}:{digest(algorithm, body).upper()}"
    job = api.submit({"url": url, "destination": f"checksum/right-{algorithm}.bin", "checksum": given})
    assert job["checksum"] == given.lower()

    done = api.wait_state(job["id"], "completed")

    assert shared_fetchd.dest(f"checksum/right-{algorithm}.bin").read_bytes() == body
    assert done["sha256"] == sha256_hex(body)
    assert done["checksum"] == given.lower()
    assert done["path"] == f"checksum/right-{algorithm}.bin"


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_a_wrong_checksum_fails_and_leaves_nothing_at_the_destination(shared_fetchd, shared_origin, api, algorithm):
    body = os.urandom(150_000)
    url = shared_origin.add(f"/checksum-wrong-{algorithm}.bin", body)
    expected = wrong(digest(algorithm, body))
    job = api.submit({"url": url, "destination": f"checksum/wrong-{algorithm}.bin", "checksum": f"{algorithm}:{expected}"})

    error = failure(api, job["id"])

    assert error["code"] == "checksum_mismatch", error
    assert digest(algorithm, body) in error["message"] and expected in error["message"]
    assert not shared_fetchd.dest(f"checksum/wrong-{algorithm}.bin").exists()


def test_a_checksum_and_an_agreeing_sha256_both_hold(shared_fetchd, shared_origin, api):
    body = os.urandom(50_000)
    url = shared_origin.add("/checksum-both.bin", body)
    job = api.submit({"url": url, "destination": "checksum/both.bin", "sha256": sha256_hex(body),
                      "checksum": f"md5:{wrong(digest('md5', body))}"})
    assert failure(api, job["id"])["code"] == "checksum_mismatch"


# ---------------------------------------------------------------------------- checksumURL


def sums(*lines: tuple[str, str]) -> bytes:
    """A digest file as `sha256sum`/`sha512sum` write it: `<hex>  <name>` per line."""
    return "".join(f"{hex_digest}  {name}\n" for hex_digest, name in lines).encode()


@pytest.mark.parametrize("algorithm", ["sha256", "sha512"])
def test_a_digest_file_with_the_files_line_completes(shared_fetchd, shared_origin, api, algorithm):
    body = os.urandom(120_000)
    url = shared_origin.add(f"/sums-right-{algorithm}/app.tar.gz", body)
    other = os.urandom(10)
    sums_url = shared_origin.add(f"/sums-right-{algorithm}/SUMS", sums(
        (digest(algorithm, other), "other.iso"), (digest(algorithm, body), "./dist/app.tar.gz")))
    job = api.submit({"url": url, "destination": f"sums/{algorithm}/app.tar.gz", "checksumURL": sums_url})
    assert job["checksumURL"] == sums_url

    done = api.wait_state(job["id"], "completed")

    assert shared_fetchd.dest(f"sums/{algorithm}/app.tar.gz").read_bytes() == body
    assert done["sha256"] == sha256_hex(body)
    # Fetched once per attempt, under the same policy as the download.
    assert len(shared_origin.requests_for(f"/sums-right-{algorithm}/SUMS")) == 1


def test_a_digest_file_that_disagrees_fails_with_checksum_mismatch(shared_fetchd, shared_origin, api):
    body = os.urandom(80_000)
    url = shared_origin.add("/sums-wrong/app.bin", body)
    sums_url = shared_origin.add("/sums-wrong/SHA256SUMS", sums((wrong(sha256_hex(body)), "app.bin")))
    job = api.submit({"url": url, "destination": "sums/wrong/app.bin", "checksumURL": sums_url})

    assert failure(api, job["id"])["code"] == "checksum_mismatch"
    assert not shared_fetchd.dest("sums/wrong/app.bin").exists()


def test_a_bare_digest_is_the_only_line(shared_fetchd, shared_origin, api):
    body = os.urandom(60_000)
    url = shared_origin.add("/sums-bare/data.bin", body)
    sums_url = shared_origin.add("/sums-bare/data.bin.md5", (digest("md5", body) + "\n").encode())
    job = api.submit({"url": url, "destination": "sums/bare/renamed-here.bin", "checksumURL": sums_url})

    api.wait_state(job["id"], "completed")
    assert shared_fetchd.dest("sums/bare/renamed-here.bin").read_bytes() == body


def test_a_digest_file_server_that_is_briefly_unavailable_is_tried_again(shared_fetchd, shared_origin, api):
    body = os.urandom(30_000)
    url = shared_origin.add("/sums-flaky/app.bin", body)
    sums_url = shared_origin.add("/sums-flaky/SUMS", sums((sha256_hex(body), "app.bin")), faults=[Fault(status=503)])
    job = api.submit({"url": url, "destination": "sums/flaky/app.bin", "checksumURL": sums_url})

    done = api.wait_state(job["id"], "completed")

    assert done["attempts"] == 2
    assert len(shared_origin.requests_for("/sums-flaky/SUMS")) == 2
    assert shared_fetchd.dest("sums/flaky/app.bin").read_bytes() == body


@pytest.mark.parametrize("case", ["missing-line", "not-found", "garbage"])
def test_a_digest_file_without_a_usable_digest_fails_with_checksum_unavailable(shared_fetchd, shared_origin, api, case):
    body = os.urandom(40_000)
    url = shared_origin.add(f"/sums-{case}/app.bin", body)
    if case == "missing-line":
        sums_url = shared_origin.add(f"/sums-{case}/SUMS", sums((sha256_hex(b"a"), "a.bin"), (sha256_hex(b"b"), "b.bin")))
    elif case == "not-found":
        sums_url = shared_origin.url(f"/sums-{case}/SUMS")
    else:
        sums_url = shared_origin.add(f"/sums-{case}/SUMS", b"<html>not a digest file</html>\n")
    job = api.submit({"url": url, "destination": f"sums/{case}/app.bin", "checksumURL": sums_url})

    error = failure(api, job["id"])

    assert error["code"] == "checksum_unavailable", error
    assert sums_url in error["message"]
    assert not shared_fetchd.dest(f"sums/{case}/app.bin").exists()
    # Nothing was downloaded for a job whose digest cannot be known.
    assert shared_origin.requests_for(f"/sums-{case}/app.bin") == []


# ---------------------------------------------------------------------------- directory destinations


def inside_root(fd, path: str) -> bool:
    root = fd.root.resolve()
    return fd.dest(path).resolve().is_relative_to(root)


def test_a_hostile_content_disposition_lands_safely_inside_the_directory(shared_fetchd, shared_origin, api):
    body = os.urandom(30_000)
    url = shared_origin.add("/cd/hostile", body, headers={"Content-Disposition": 'attachment; filename="../../etc/passwd"'})
    job = api.submit({"url": url, "destination": "inbox/hostile/"})
    assert job["destination"] == "inbox/hostile/"
    assert job["path"] is None

    done = api.wait_state(job["id"], "completed")

    path = done["path"]
    # Separators become "_" and leading dots go: one plain name inside the directory.
    assert path == "inbox/hostile/_.._etc_passwd", path
    assert inside_root(shared_fetchd, path)
    assert shared_fetchd.dest(path).read_bytes() == body
    assert [p.name for p in shared_fetchd.dest("inbox/hostile").iterdir()] == [path.rsplit("/", 1)[1]]


def test_the_extended_filename_wins_and_keeps_its_non_ascii_name(shared_fetchd, shared_origin, api):
    body = os.urandom(20_000)
    header = "attachment; filename=\"EURO rates.pdf\"; filename*=UTF-8''%E2%82%AC%20r%C3%A4tes%2F..%2F.pdf"
    url = shared_origin.add("/cd/extended", body, headers={"Content-Disposition": header})
    job = api.submit({"url": url, "destination": "inbox/extended/"})

    done = api.wait_state(job["id"], "completed")

    # "/" becomes "_": the name stays one segment inside the directory.
    assert done["path"] == "inbox/extended/€ rätes_.._.pdf"
    assert inside_root(shared_fetchd, done["path"])
    assert shared_fetchd.dest(done["path"]).read_bytes() == body


def test_without_content_disposition_the_name_is_the_final_urls_last_segment(shared_fetchd, shared_origin, api):
    body = os.urandom(10_000)
    url = shared_origin.add("/cd/plain/r%C3%A9sum%C3%A9.txt", body)
    job = api.submit({"url": url, "destination": "inbox/plain/"})

    done = api.wait_state(job["id"], "completed")

    assert done["path"] == "inbox/plain/résumé.txt"
    assert shared_fetchd.dest("inbox/plain/résumé.txt").read_bytes() == body


def test_several_live_jobs_share_a_directory_destination(shared_fetchd, shared_origin, api):
    bodies = {name: os.urandom(5_000) for name in ("one.bin", "two.bin")}
    later = rfc3339(time.time() + 3600)
    jobs = [api.submit({"url": shared_origin.add(f"/cd/shared/{name}", body), "destination": "inbox/shared/",
                        "earliestBeginDate": later}) for name, body in bodies.items()]
    for job in jobs:
        resp = api.request("PATCH", f"/downloads/{job['id']}", {"earliestBeginDate": None})
        assert resp.status == 200, resp
    for job, (name, body) in zip(jobs, bodies.items()):
        done = api.wait_state(job["id"], "completed")
        assert done["path"] == f"inbox/shared/{name}"
        assert shared_fetchd.dest(done["path"]).read_bytes() == body


# ---------------------------------------------------------------------------- onConflict


def test_rename_places_the_file_under_the_first_free_name(shared_fetchd, shared_origin, api):
    existing = shared_fetchd.dest("conflict/report.pdf")
    existing.parent.mkdir(parents=True, exist_ok=True)
    existing.write_bytes(b"the original")
    bodies = [os.urandom(8_000), os.urandom(9_000)]
    for number, body in enumerate(bodies, start=1):
        url = shared_origin.add(f"/conflict/{number}", body)
        job = api.submit({"url": url, "destination": "conflict/report.pdf", "onConflict": "rename"})
        assert job["onConflict"] == "rename" and job["overwrite"] is False and job["path"] is None
        done = api.wait_state(job["id"], "completed")
        assert done["path"] == f"conflict/report ({number}).pdf"
        assert shared_fetchd.dest(done["path"]).read_bytes() == body
    assert existing.read_bytes() == b"the original"


def test_on_conflict_fail_and_overwrite_are_the_overwrite_flag(shared_fetchd, shared_origin, api):
    target = shared_fetchd.dest("conflict/kept.bin")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"old")
    url = shared_origin.add("/conflict/kept", b"new bytes")
    refused = api.post("/downloads", {"url": url, "destination": "conflict/kept.bin", "onConflict": "fail"})
    assert refused.status == 409, refused
    job = api.submit({"url": url, "destination": "conflict/kept.bin", "onConflict": "overwrite"})
    assert job["overwrite"] is True and job["onConflict"] == "overwrite"
    api.wait_state(job["id"], "completed")
    assert target.read_bytes() == b"new bytes"


# ---------------------------------------------------------------------------- resourceTimeout


def test_resource_timeout_fails_a_slow_job_with_timeout(shared_fetchd, shared_origin, api):
    url = shared_origin.add("/slow/resource-timeout.bin", os.urandom(2_000_000), rate=50_000)
    job = api.submit({"url": url, "destination": "slow/resource-timeout.bin", "resourceTimeout": "1500ms"})
    assert job["resourceTimeout"] == "1500ms"

    error = failure(api, job["id"])

    assert error["code"] == "timeout", error
    assert "resourceTimeout" in error["message"]
    assert not shared_fetchd.dest("slow/resource-timeout.bin").exists()


def test_resource_timeout_ends_retries_that_would_outlast_it(shared_fetchd, shared_origin, api):
    url = shared_origin.add("/slow/always-500.bin", status=500)
    job = api.submit({"url": url, "destination": "slow/always-500.bin", "resourceTimeout": "700ms"})

    error = failure(api, job["id"])

    # Backing off from 100 ms, the ten attempts the retry budget allows would take longer.
    assert error["code"] == "timeout", error
    assert api.job(job["id"])["attempts"] < 10


def test_resource_timeout_leaves_a_fast_job_alone(shared_fetchd, shared_origin, api):
    body = os.urandom(50_000)
    url = shared_origin.add("/fast/resource-timeout.bin", body)
    job = api.submit({"url": url, "destination": "fast/resource-timeout.bin", "resourceTimeout": "1h"})
    api.wait_state(job["id"], "completed")
    assert shared_fetchd.dest("fast/resource-timeout.bin").read_bytes() == body


# ---------------------------------------------------------------------------- bad values


@pytest.mark.parametrize("extra, field", [
    ({"checksum": "sha3:" + "0" * 64}, "checksum"),
    ({"checksum": "md5:" + "0" * 31}, "checksum"),
    ({"checksum": "sha1:" + "z" * 40}, "checksum"),
    ({"checksum": "0" * 64}, "checksum"),
    ({"checksum": 42}, "checksum"),
    ({"checksum": "sha256:" + "a" * 64, "sha256": "b" * 64}, "checksum"),
    ({"checksumURL": "ftp://example.com/SUMS"}, "checksumURL"),
    ({"checksumURL": "http://example.com/SUMS", "sha256": "b" * 64}, "checksumURL"),
    ({"onConflict": "merge"}, "onConflict"),
    ({"onConflict": "fail", "overwrite": True}, "onConflict"),
    ({"onConflict": "overwrite", "overwrite": False}, "onConflict"),
    ({"onConflict": "rename", "overwrite": True}, "onConflict"),
    ({"resourceTimeout": "soon"}, "resourceTimeout"),
    ({"resourceTimeout": "0s"}, "resourceTimeout"),
    ({"resourceTimeout": 30}, "resourceTimeout"),
    ({"destination": "inbox//"}, "destination"),
])
def test_bad_values_are_400_naming_the_field(shared_origin, api, extra, field):
    body = {"url": shared_origin.url("/never.bin"), "destination": "never/never.bin", **extra}
    resp = api.post("/downloads", body)
    assert resp.status == 400, resp
    problem = resp.json()
    assert resp.content_type == "application/problem+json"
    assert field in [error["field"] for error in problem["errors"]], problem


def test_a_checksum_url_to_a_forbidden_address_is_400(fetchd, origin):
    fd = fetchd(env={"FETCHD_ALLOW_PRIVATE_NETWORKS": "false"})
    resp = fd.api.post("/downloads", {"url": "https://example.com/a.bin", "destination": "a.bin",
                                      "checksumURL": "http://127.0.0.1:9/SUMS"})
    assert resp.status == 400, resp
    assert [e["field"] for e in resp.json()["errors"]] == ["checksumURL"]
