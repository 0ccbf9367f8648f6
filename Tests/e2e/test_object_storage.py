"""Object storage: downloads straight into an S3-compatible bucket (moto with signature checks
on, behind a proxy that records each request), checked with boto3 — the object's bytes and
digest, its absence until completion, no multipart upload left behind."""

from __future__ import annotations

import os
import time

import pytest

from e2e_support import sha256_hex, wait_for
from test_cluster import Cluster, database_schema, needs_postgres

MiB = 1 << 20
PART = 5 * MiB


@pytest.fixture
def storage_fetchd(fetchd, s3):
    """A fetchd with the test's object storage, 5 MiB parts, allowed to reach loopback origins."""
    return fetchd(env={**s3.env(), "FETCHD_S3_PART_SIZE": "5MiB", "FETCHD_ALLOW_PRIVATE_NETWORKS": "true"})


def test_a_file_of_several_parts_lands_whole_and_only_at_completion(storage_fetchd, origin, s3):
    body = os.urandom(64 * MiB + 12345)
    url = origin.add("/video.bin", body, rate=32 * MiB)
    job = storage_fetchd.api.submit({"url": url, "destination": s3.url("media/video.bin")})

    wait_for(lambda: len(s3.part_uploads("media/video.bin")) >= 1, timeout=30)
    assert not s3.object_exists("media/video.bin"), "a partial object became visible"
    done = storage_fetchd.api.wait_state(job["id"], "completed", timeout=60)

    assert s3.get_object_bytes("media/video.bin") == body
    assert done["sha256"] == sha256_hex(body)
    assert done["path"] == "media/video.bin"
    assert done["objectETag"] == s3.head_object("media/video.bin")["ETag"]
    assert [int(r.params["partNumber"]) for r in s3.part_uploads("media/video.bin")] == list(range(1, 14))
    assert s3.list_multipart_uploads() == []


def test_a_file_under_one_part_is_one_put(storage_fetchd, origin, s3):
    body = os.urandom(300_000)
    url = origin.add("/small.bin", body)
    job = storage_fetchd.api.submit({"url": url, "destination": s3.url("small.bin")})
    done = storage_fetchd.api.wait_state(job["id"], "completed", timeout=30)

    assert s3.get_object_bytes("small.bin") == body
    assert done["sha256"] == sha256_hex(body)
    puts = [r for r in s3.requests("PUT") if r.path == f"/{s3.bucket}/small.bin"]
    assert len(puts) == 1 and "partNumber" not in puts[0].params
    assert s3.requests("POST") == []


def test_a_wrong_secret_fails_the_job_with_storage_at_once(fetchd, origin, s3, tmp_path):
    wrong = tmp_path / "wrong-secret"
    wrong.write_text("not-the-secret")
    fd = fetchd(env={**s3.env(), "FETCHD_S3_SECRET_ACCESS_KEY_FILE": str(wrong), "FETCHD_ALLOW_PRIVATE_NETWORKS": "true"})
    url = origin.add("/f.bin", os.urandom(100_000))
    job = fd.api.submit({"url": url, "destination": s3.url("f.bin")})

    failed = fd.api.wait_state(job["id"], "failed", timeout=30)

    assert failed["error"]["code"] == "storage"
    assert "SignatureDoesNotMatch" in failed["error"]["message"]
    assert failed["attempts"] == 1
    assert "not-the-secret" not in fd.log_text() and "not-the-secret" not in str(failed)


def test_a_bucket_destination_without_object_storage_is_refused(fetchd):
    fd = fetchd()
    response = fd.api.post("/downloads", {"url": "http://example.com/f", "destination": "s3://bucket/f.bin"})
    assert response.status == 400
    assert "FETCHD_S3_ENDPOINT" in response.json()["detail"]


def test_a_bad_bucket_name_is_refused_at_submit(storage_fetchd):
    response = storage_fetchd.api.post("/downloads", {"url": "http://example.com/f", "destination": "s3://Bad_Bucket/f.bin"})
    assert response.status == 400
    assert "bucket name" in response.json()["detail"]


def test_on_conflict_fail_never_replaces_an_object(storage_fetchd, origin, s3):
    s3.put_object("taken.bin", b"already here")
    url = origin.add("/taken.bin", os.urandom(7 * MiB))
    job = storage_fetchd.api.submit({"url": url, "destination": s3.url("taken.bin")})

    failed = storage_fetchd.api.wait_state(job["id"], "failed", timeout=30)

    assert failed["error"]["code"] == "destination_exists"
    assert s3.get_object_bytes("taken.bin") == b"already here"
    wait_for(lambda: s3.list_multipart_uploads() == [], timeout=10)


def test_on_conflict_overwrite_replaces_the_object(storage_fetchd, origin, s3):
    s3.put_object("replace.bin", b"old")
    body = os.urandom(6 * MiB)
    url = origin.add("/replace.bin", body)
    job = storage_fetchd.api.submit({"url": url, "destination": s3.url("replace.bin"), "onConflict": "overwrite"})

    storage_fetchd.api.wait_state(job["id"], "completed", timeout=30)

    assert s3.get_object_bytes("replace.bin") == body


@pytest.mark.parametrize("size", [200_000, 6 * MiB], ids=["one-put", "multipart"])
def test_on_conflict_rename_takes_the_first_free_name(storage_fetchd, origin, s3, size):
    s3.put_object("docs/report.pdf", b"first")
    s3.put_object("docs/report (1).pdf", b"second")
    body = os.urandom(size)
    url = origin.add("/report.pdf", body)
    job = storage_fetchd.api.submit({"url": url, "destination": s3.url("docs/report.pdf"), "onConflict": "rename"})

    done = storage_fetchd.api.wait_state(job["id"], "completed", timeout=30)

    assert done["path"] == "docs/report (2).pdf"
    assert s3.get_object_bytes("docs/report (2).pdf") == body
    assert s3.get_object_bytes("docs/report.pdf") == b"first"


@pytest.mark.parametrize("size", [100_000, 11 * MiB], ids=["one-put", "multipart"])
def test_a_checksum_mismatch_leaves_no_object_and_no_upload(storage_fetchd, origin, s3, size):
    body = os.urandom(size)
    url = origin.add("/sum.bin", body)
    wrong = "0" * 64
    job = storage_fetchd.api.submit({"url": url, "destination": s3.url("sum.bin"), "sha256": wrong})

    failed = storage_fetchd.api.wait_state(job["id"], "failed", timeout=30)

    assert failed["error"]["code"] == "checksum_mismatch"
    assert not s3.object_exists("sum.bin")
    wait_for(lambda: s3.list_multipart_uploads() == [], timeout=10)
    if size <= PART:
        assert s3.requests("PUT") == [], "a body that failed its checks was sent"


def test_a_prefix_destination_is_named_by_the_origin(storage_fetchd, origin, s3):
    body = os.urandom(400_000)
    url = origin.add("/download", body, headers={"Content-Disposition": 'attachment; filename="quarterly report.csv"'})
    job = storage_fetchd.api.submit({"url": url, "destination": s3.url("incoming/")})

    done = storage_fetchd.api.wait_state(job["id"], "completed", timeout=30)

    assert done["path"] == "incoming/quarterly report.csv"
    assert s3.get_object_bytes("incoming/quarterly report.csv") == body


def test_a_versioned_bucket_gives_the_version(storage_fetchd, origin, s3):
    bucket = s3.create_bucket(f"{s3.bucket[:50]}-v", versioned=True)
    body = os.urandom(6 * MiB)
    url = origin.add("/v.bin", body)
    job = storage_fetchd.api.submit({"url": url, "destination": s3.url("v.bin", bucket=bucket)})

    done = storage_fetchd.api.wait_state(job["id"], "completed", timeout=30)

    head = s3.head_object("v.bin", bucket=bucket)
    assert done["objectVersionId"] == head["VersionId"]
    assert done["objectETag"] == head["ETag"]


def test_cancel_leaves_no_object_and_no_upload(storage_fetchd, origin, s3):
    url = origin.add("/slow.bin", os.urandom(16 * MiB), rate=4 * MiB)
    job = storage_fetchd.api.submit({"url": url, "destination": s3.url("slow.bin")})
    wait_for(lambda: len(s3.part_uploads("slow.bin")) >= 1, timeout=30)

    assert storage_fetchd.api.delete(f"/downloads/{job['id']}").status == 200

    storage_fetchd.api.wait_state(job["id"], "cancelled")
    wait_for(lambda: s3.list_multipart_uploads() == [], timeout=10)
    assert not s3.object_exists("slow.bin")


def _part_counts(s3, key: str) -> dict[int, int]:
    """How many times the storage took each part number of `key` (answered 200)."""
    counts: dict[int, int] = {}
    for request in s3.part_uploads(key):
        if request.status == 200:
            number = int(request.params["partNumber"])
            counts[number] = counts.get(number, 0) + 1
    return counts


@pytest.mark.parametrize("connections", [1, 3])
def test_after_kill_9_the_object_resumes_from_its_last_part(storage_fetchd, origin, s3, connections):
    size = 24 * MiB
    body = os.urandom(size)
    url = origin.add("/big.bin", body, rate=6 * MiB // connections)
    job = storage_fetchd.api.submit({"url": url, "destination": s3.url("big.bin"), "connections": connections})
    wait_for(lambda: storage_fetchd.api.get(f"/downloads/{job['id']}").json()["bytesReceived"] >= 0.4 * size, timeout=30)

    storage_fetchd.kill()
    storage_fetchd.start()

    done = storage_fetchd.api.wait_state(job["id"], "completed", timeout=60)
    assert s3.get_object_bytes("big.bin") == body
    assert done["sha256"] == sha256_hex(body)
    # The origin sent again at most the part each connection was filling when fetchd died.
    assert origin.served("/big.bin") <= size + connections * PART
    counts = _part_counts(s3, "big.bin")
    assert sorted(counts) == [1, 2, 3, 4, 5]
    # Each part went up once; only a part in flight at the kill may have gone up twice.
    assert sum(n - 1 for n in counts.values()) <= 1, counts
    assert s3.list_multipart_uploads() == []


def test_an_upload_whose_creation_was_cut_short_by_kill_9_is_aborted_not_left(storage_fetchd, origin, s3):
    """Killed after the storage created the multipart upload and before fetchd kept its id: the
    next start finds the upload under the key (it holds no part) and aborts it."""
    body = os.urandom(12 * MiB)
    url = origin.add("/lost.bin", body, rate=8 * MiB)
    job, lost = s3.lose_a_created_upload(
        storage_fetchd, lambda: storage_fetchd.api.submit({"url": url, "destination": s3.url("lost.bin")}))

    storage_fetchd.start()
    done = storage_fetchd.api.wait_state(job["id"], "completed", timeout=60)

    assert s3.get_object_bytes("lost.bin") == body and done["sha256"] == sha256_hex(body)
    assert [r.params.get("uploadId") for r in s3.requests("DELETE")] == [lost]
    assert s3.list_multipart_uploads() == []


def _answer_lost_to_kill_9(fd, s3, method: str, parameter: str | None, submit) -> dict:
    """Submits a job (`submit`) with the storage's answers to `method` requests with the query
    parameter `parameter` (None: no query) held from fetchd; kills fetchd once the storage has
    taken one such request, and starts it again. The job as it ended."""
    s3.hold_answers(method, parameter)
    job = submit()
    wait_for(lambda: [r for r in s3.requests(method) if r.asks(method, parameter) and r.status == 200], timeout=30,
             message=f"the storage to take the {method}")
    fd.kill()
    s3.release_answers()
    fd.start()
    return fd.api.wait_state(job["id"], {"completed", "failed"}, timeout=60)


@pytest.mark.parametrize("connections", [1, 3])
def test_a_completion_whose_answer_was_lost_to_kill_9_completes_the_job_with_its_object(storage_fetchd, origin, s3, connections):
    """Killed after the storage completed the upload and before fetchd kept its answer: the next
    start, with every part stored, completes the job with that object — not as a conflict with
    its own object, nor by sending it again. (moto completes an upload twice; a storage that
    answers `NoSuchUpload` instead has its object recognised by the parts' ETag, a unit test's
    case.)"""
    body = os.urandom(12 * MiB)
    url = origin.add("/answer.bin", body, rate=32 * MiB)
    done = _answer_lost_to_kill_9(storage_fetchd, s3, "POST", "uploadId", lambda: storage_fetchd.api.submit(
        {"url": url, "destination": s3.url("answer.bin"), "connections": connections}))

    assert done["state"] == "completed", done.get("error")
    assert s3.get_object_bytes("answer.bin") == body
    assert done["sha256"] == sha256_hex(body)
    assert done["objectETag"] == s3.head_object("answer.bin")["ETag"]
    assert s3.list_multipart_uploads() == []
    # The parts went up once: the object was not made again.
    assert sorted(_part_counts(s3, "answer.bin").values()) == [1, 1, 1]


@pytest.mark.parametrize("on_conflict", ["fail", "rename"])
def test_an_object_put_whole_whose_answer_was_lost_to_kill_9_completes_the_job(storage_fetchd, origin, s3, on_conflict):
    """The same for an object of one part, put whole under `If-None-Match: *`: the next start's
    put finds an object at the key, and the one whose ETag is its body's MD5 is its own. A rename
    keeps the free name it chose before the put, so the object is not put again under the next."""
    body = os.urandom(3 * MiB)
    url = origin.add("/whole.bin", body)
    done = _answer_lost_to_kill_9(storage_fetchd, s3, "PUT", None, lambda: storage_fetchd.api.submit(
        {"url": url, "destination": s3.url("whole.bin"), "onConflict": on_conflict}))

    assert done["state"] == "completed", done.get("error")
    assert done["path"] == "whole.bin"
    assert s3.get_object_bytes("whole.bin") == body
    assert done["sha256"] == sha256_hex(body)
    assert done["objectETag"] == s3.head_object("whole.bin")["ETag"]
    assert [o["Key"] for o in s3.client.list_objects_v2(Bucket=s3.bucket).get("Contents", [])] == ["whole.bin"]


def test_storage_down_for_20_s_makes_the_job_wait_then_complete(fetchd, origin, s3):
    fd = fetchd(env={**s3.env(), "FETCHD_S3_PART_SIZE": "5MiB", "FETCHD_ALLOW_PRIVATE_NETWORKS": "true",
                     "FETCHD_RETRY_MAX_DELAY": "2s"})
    size = 20 * MiB
    body = os.urandom(size)
    url = origin.add("/outage.bin", body, rate=2 * MiB)
    job = fd.api.submit({"url": url, "destination": s3.url("outage.bin")})
    wait_for(lambda: len(s3.part_uploads("outage.bin")) >= 1, timeout=30)

    s3.down()
    waiting = fd.api.wait_state(job["id"], "queued", timeout=30)
    assert waiting["error"]["code"] == "storage"
    time.sleep(20)  # the outage itself, as long as it lasts: nothing to poll for
    s3.up()

    done = fd.api.wait_state(job["id"], "completed", timeout=60)
    assert s3.get_object_bytes("outage.bin") == body
    assert done["sha256"] == sha256_hex(body)
    assert origin.served("/outage.bin") <= size + 2 * PART


@needs_postgres
def test_a_node_killed_mid_object_leaves_its_parts_to_another_node(tmp_path, origin, s3):
    size = 24 * MiB
    body = os.urandom(size)
    url = origin.add("/shared-nothing.bin", body, rate=6 * MiB)
    env = {**s3.env(), "FETCHD_S3_PART_SIZE": "5MiB", "FETCHD_ALLOW_PRIVATE_NETWORKS": "true"}
    with database_schema() as database_url:
        cluster = Cluster(tmp_path, database_url, shared_files=False, env=env)
        try:
            job = cluster.nodes[0].api.submit({"url": url, "destination": s3.url("shared-nothing.bin")})
            wait_for(lambda: len(_part_counts(s3, "shared-nothing.bin")) >= 2 and cluster.runner_of(job["id"]), timeout=30)
            runner = cluster.runner_of(job["id"])

            assert cluster.node(runner).kill() == -9

            done = cluster.other_than(runner).api.wait_state(job["id"], "completed", timeout=90)
        finally:
            cluster.close()
    assert s3.get_object_bytes("shared-nothing.bin") == body
    assert done["sha256"] == sha256_hex(body)
    counts = _part_counts(s3, "shared-nothing.bin")
    assert sorted(counts) == [1, 2, 3, 4, 5]
    assert sum(n - 1 for n in counts.values()) <= 1, counts
    # The other node fetched from the end of the last committed part: what the killed node had
    # staged beyond it (two parts at most) comes again.
    assert origin.served("/shared-nothing.bin") <= size + 2 * PART + PART
    assert s3.list_multipart_uploads() == []


def _completed_with_staging_peak(fd, job: dict, interval: float) -> int:
    """Waits for the job to complete; the most disk its staging file took meanwhile (st_blocks × 512)."""
    staged = fd.data_dir / "partial" / job["id"]
    peak = 0

    def done() -> bool:
        nonlocal peak
        try:
            peak = max(peak, staged.stat().st_blocks * 512)
        except FileNotFoundError:
            pass  # not made yet, or removed as the job completed
        return fd.api.get(f"/downloads/{job['id']}").json()["state"] == "completed"

    wait_for(done, timeout=60, interval=interval)
    return peak


def test_a_fast_origin_waits_for_the_parts_and_keeps_at_most_two_on_disk(storage_fetchd, origin, s3):
    size = 48 * MiB
    body = os.urandom(size)
    url = origin.add("/fast.bin", body)
    job = storage_fetchd.api.submit({"url": url, "destination": s3.url("fast.bin")})
    peak = _completed_with_staging_peak(storage_fetchd, job, interval=0.01)
    assert s3.get_object_bytes("fast.bin") == body
    # Two parts beyond the committed ones, and the file system's rounding.
    assert 0 < peak <= 2 * PART + MiB, f"{peak / MiB:.1f} MiB staged at once"


def test_several_connections_fetch_their_own_parts_into_one_object(storage_fetchd, origin, s3):
    size = 40 * MiB + 777
    body = os.urandom(size)
    url = origin.add("/wide.bin", body, rate=4 * MiB)
    job = storage_fetchd.api.submit({"url": url, "destination": s3.url("wide.bin"), "connections": 4})
    peak_disk = _completed_with_staging_peak(storage_fetchd, job, interval=0.02)
    assert s3.get_object_bytes("wide.bin") == body
    assert storage_fetchd.api.get(f"/downloads/{job['id']}").json()["sha256"] == sha256_hex(body)
    # The parts came over several connections at once, never more than the job's four...
    assert origin.peak_concurrent >= 2 and origin.peak_open <= 4
    assert origin.served("/wide.bin") == size
    # ...each part once, each uploaded once, in order of their numbers into the digest.
    assert _part_counts(s3, "wide.bin") == {n: 1 for n in range(1, 10)}
    # The four parts being fetched and the one being uploaded, and the file system's rounding.
    assert peak_disk <= 5 * PART + MiB, f"{peak_disk / MiB:.1f} MiB staged at once"


def test_a_kill_before_any_part_is_kept_does_not_pass_a_half_fetched_part_off_as_the_object(storage_fetchd, origin, s3):
    """Over several connections the parts are fetched into the staging file at their offsets:
    the last part can be in while the one before it is half fetched. Killed then, before any
    part went up (the storage's answers held), the restart must fetch what is missing, not take
    the file's length for the bytes received."""
    body = os.urandom(12 * MiB)
    url = origin.add("/holes.bin", body, rate=4 * MiB)
    s3.hold_answers("PUT", "partNumber")
    job = storage_fetchd.api.submit({"url": url, "destination": s3.url("holes.bin"), "connections": 3})
    staging = storage_fetchd.partial_path(job["id"])
    # The last part (10–12 MiB) ends before the middle one (5–10 MiB): the file has its full length then.
    wait_for(lambda: staging.exists() and staging.stat().st_size == len(body), interval=0.005,
             message="the last part to be fetched")
    storage_fetchd.kill()
    s3.release_answers()
    storage_fetchd.start()

    done = storage_fetchd.api.wait_state(job["id"], "completed", timeout=60)
    assert s3.get_object_bytes("holes.bin") == body
    assert done["sha256"] == sha256_hex(body)
