"""Uploads to object storage: a source sent to `s3://bucket/key` lands as the object byte for
byte (moto with signature checks on, behind a proxy that records each request), goes on after
kill -9 from the parts S3 holds, and leaves no multipart upload behind when it ends otherwise."""
import os

import pytest

from e2e_support import sha256_hex, wait_for

MiB = 1 << 20


@pytest.fixture
def bucket_fetchd(fetchd, s3):
    """A fetchd with the test's object storage and 5 MiB parts."""
    return fetchd(env={**s3.env(), "FETCHD_S3_PART_SIZE": "5MiB"})


def source(fd, path: str, body: bytes):
    file = fd.uploads / path
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_bytes(body)
    return file


def upload(fd, s3, path: str, key: str, **fields) -> dict:
    resp = fd.api.post("/uploads", {"url": s3.url(key), "source": path, **fields})
    assert resp.status == 201, resp
    return resp.json()


def wait_upload(fd, job_id: str, state: str, timeout: float = 60) -> dict:
    return wait_for(lambda: (u := fd.api.get(f"/uploads/{job_id}").json())["state"] == state and u, timeout=timeout,
                    message=lambda: f"the upload to be {state}: {fd.api.get(f'/uploads/{job_id}').json()}")


def part_numbers(s3, key: str) -> list[int]:
    return [int(r.params["partNumber"]) for r in s3.part_uploads(key)]


def test_a_source_of_several_parts_becomes_the_object(bucket_fetchd, s3):
    body = os.urandom(17 * MiB + 3)
    source(bucket_fetchd, "exports/big.bin", body)
    job = upload(bucket_fetchd, s3, "exports/big.bin", "in/big.bin", contentType="application/x-test")
    done = wait_upload(bucket_fetchd, job["id"], "completed")
    assert s3.get_object_bytes("in/big.bin") == body
    assert done["sha256"] == sha256_hex(body) and done["bytesSent"] == len(body)
    head = s3.head_object("in/big.bin")
    assert head["ContentType"] == "application/x-test"
    assert done["reply"]["status"] == 200 and done["reply"]["etag"] == head["ETag"]
    assert part_numbers(s3, "in/big.bin") == [1, 2, 3, 4]
    assert s3.list_multipart_uploads() == []


def test_a_source_under_one_part_is_one_put(bucket_fetchd, s3):
    body = os.urandom(100_000)
    source(bucket_fetchd, "small.bin", body)
    done = wait_upload(bucket_fetchd, upload(bucket_fetchd, s3, "small.bin", "small.bin")["id"], "completed")
    assert s3.get_object_bytes("small.bin") == body and done["sha256"] == sha256_hex(body)
    assert s3.requests("POST") == []


def test_after_kill_9_only_the_missing_parts_go_up(bucket_fetchd, s3):
    body = os.urandom(64 * MiB)
    source(bucket_fetchd, "video.mp4", body)
    job = upload(bucket_fetchd, s3, "video.mp4", "video.mp4", maxBytesPerSecond=16 * MiB)
    wait_for(lambda: len(part_numbers(s3, "video.mp4")) >= 5, timeout=30, message="40 % of the parts to go up")
    bucket_fetchd.kill()
    bucket_fetchd.start()
    done = wait_upload(bucket_fetchd, job["id"], "completed")
    assert s3.get_object_bytes("video.mp4") == body and done["sha256"] == sha256_hex(body)
    # The upload was checked against ListParts and went on: each part went up once, but the one
    # in flight at the kill, which may have gone twice.
    assert [r for r in s3.requests("GET") if "uploadId" in r.params] != []
    numbers = part_numbers(s3, "video.mp4")
    assert sorted(set(numbers)) == list(range(1, 14)) and len(numbers) <= 14
    assert len([r for r in s3.requests("POST") if "uploads" in r.params]) == 1
    assert s3.list_multipart_uploads() == []


def test_an_upload_whose_creation_was_cut_short_by_kill_9_is_aborted_not_left(bucket_fetchd, s3):
    """Killed after S3 created the multipart upload and before fetchd kept its id: the next start
    finds the upload under the key (it holds no part) and aborts it before creating another."""
    body = os.urandom(12 * MiB)
    source(bucket_fetchd, "lost.bin", body)
    job, lost = s3.lose_a_created_upload(bucket_fetchd, lambda: upload(bucket_fetchd, s3, "lost.bin", "lost.bin"))

    bucket_fetchd.start()
    done = wait_upload(bucket_fetchd, job["id"], "completed")

    assert s3.get_object_bytes("lost.bin") == body and done["sha256"] == sha256_hex(body)
    assert [r.params.get("uploadId") for r in s3.requests("DELETE")] == [lost]
    assert s3.list_multipart_uploads() == []


def test_a_source_appended_to_mid_upload_fails_and_the_upload_is_aborted(bucket_fetchd, s3):
    file = source(bucket_fetchd, "app.log", os.urandom(30 * MiB))
    job = upload(bucket_fetchd, s3, "app.log", "app.log", maxBytesPerSecond=8 * MiB)
    wait_for(lambda: len(part_numbers(s3, "app.log")) >= 1, timeout=30, message="a part to go up")
    with open(file, "ab") as f:
        f.write(b"one more line\n")
    failed = wait_upload(bucket_fetchd, job["id"], "failed")
    assert failed["error"]["code"] == "source_changed"
    wait_for(lambda: s3.list_multipart_uploads() == [], timeout=20, message="the upload to be aborted")
    assert not s3.object_exists("app.log")


def test_cancel_aborts_the_multipart_upload(bucket_fetchd, s3):
    source(bucket_fetchd, "big.bin", os.urandom(30 * MiB))
    job = upload(bucket_fetchd, s3, "big.bin", "big.bin", maxBytesPerSecond=4 * MiB)
    wait_for(lambda: len(part_numbers(s3, "big.bin")) >= 1, timeout=30, message="a part to go up")
    assert bucket_fetchd.api.delete(f"/uploads/{job['id']}").status == 200
    wait_upload(bucket_fetchd, job["id"], "cancelled")
    wait_for(lambda: s3.list_multipart_uploads() == [], timeout=20, message="the upload to be aborted")
    assert not s3.object_exists("big.bin")


def test_an_s3_url_without_object_storage_or_as_a_prefix_is_refused(fetchd, s3):
    fd = fetchd()
    source(fd, "a.bin", b"x")
    resp = fd.api.post("/uploads", {"url": "s3://bucket/a.bin", "source": "a.bin"})
    assert resp.status == 400 and "FETCHD_S3_ENDPOINT" in resp.json()["detail"]
    resp = fd.api.post("/uploads", {"url": "s3://bucket/in/", "source": "a.bin", "protocol": "tus"})
    assert resp.status == 400
    assert {e["field"] for e in resp.json()["errors"]} == {"url"}
