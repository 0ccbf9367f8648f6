"""11. objects: the file of scenario 1 (512 MiB, 256 MiB with --quick) from nginx on loopback
into a bucket of an S3-compatible store, as a multipart upload of 16 MiB parts; fetchd vs
`rclone copyurl` in the same run.

The store is moto's standalone server with authentication on, run and set up as the end-to-end
tests do (Tests/e2e/s3_support.py: patched moto 5.2.1, an IAM user whose key may do s3:*); both
tools talk to it directly. fetchd runs with its default part size (`FETCHD_S3_PART_SIZE` 16 MiB)
and `connections: 3`: it fetches three parts at once into `<data dir>/partial/<job id>`, hashes
each part in order (SHA-256, also into the object's digest), sends up to connections + 1 parts at
once, and punches each out of the file once it is committed, so at most (connections + 1) × part
size is on disk. With `connections: 1` that bound leaves room for two parts in flight, and moto
takes parts faster the more come at once: 77.5 against rclone's 89.4 MiB/s (0.87, 2026-12-05). rclone
is at its defaults (`--s3-upload-concurrency` 4: four parts in flight, buffered in memory) with
the same chunk size (`--s3-chunk-size 16M`) and `--s3-no-head` (moto cannot answer its HEAD of the
finished object, see RCLONE_OPTIONS), configured through RCLONE_CONFIG_S3REMOTE_*.

The staging file is sampled two ways: `st_blocks × 512`, what it takes on disk, which on ext4
counts the file's extent-tree blocks too (a peak of 32 MiB + 4 KiB at times, 2026-12-05), and its
data stretches (SEEK_DATA/SEEK_HOLE), which the bound is checked on.

Each tool runs once untimed first (`with_warm_up`: moto's first multipart upload took 4.2 s of its
CPU where the next took 2.6-2.8 s, 2026-12-05), then the rounds alternate. Per round: the wall
time from POST to `completed` (fetchd; GET /downloads/{id} polled while the staging file is
sampled, every ~25 ms) or of the rclone process; then, out of the timed part,
the object is checked with boto3 (its size and the SHA-256 of its bytes, and no multipart upload
left open) and deleted.
"""
import hashlib
import os
import sys
import time
from pathlib import Path

from benchlib import procs
from benchlib.origin import make_file
from benchlib.table import Row
from .common import round_label, sha256_file, start_pair, with_warm_up

MIB = 1 << 20
PART = 16 * MIB          # fetchd's default FETCHD_S3_PART_SIZE, and rclone's --s3-chunk-size here
CONNECTIONS = 3
BUCKET = "bench"
SAMPLE = 0.025           # seconds between samples of the staging file (and polls of the job)
STALL = 60               # seconds without progress after which fetchd's round fails
# rclone at its defaults (4 parts in flight, a HEAD of the bucket, an MD5 of each part) with fetchd's
# part size, and without the HEAD of the finished object: moto answers CompleteMultipartUpload on an
# unversioned bucket with `X-Amz-Version-Id: null`, which S3 leaves out, and then 400 to rclone's
# `HEAD ?versionId=null`, which fails the copy. boto3 checks each object here instead.
RCLONE_OPTIONS = ["--s3-chunk-size", "16M", "--s3-no-head"]
E2E = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "Tests", "e2e")


def run(ctx) -> list[Row]:
    if E2E not in sys.path:
        sys.path.insert(0, E2E)
    from s3_support import REGION, S3Server  # moto + boto3 (make bench-deps installs them)

    size = (256 if ctx.quick else 512) << 20
    label = f"11 objects {size >> 20} MiB to S3 (moto)"
    files = os.path.join(ctx.cache, "single")  # scenario 1's file, made once for both
    make_file(os.path.join(files, "big.bin"), size)
    expected = sha256_file(os.path.join(files, "big.bin"))

    # S3Server's moto is not started through procs (not in a group of its own): it is stopped here.
    store = S3Server(Path(ctx.fresh("objects-moto")))
    try:
        store.start()
        store.client.create_bucket(Bucket=BUCKET)
        origin, fetchd = start_pair(ctx, "objects", files, FETCHD_S3_ENDPOINT=store.moto_url,
                                    FETCHD_S3_REGION=REGION, FETCHD_S3_ACCESS_KEY_ID=store.access_key_id,
                                    FETCHD_S3_SECRET_ACCESS_KEY_FILE=str(store.secret_file),
                                    FETCHD_S3_ADDRESSING="path")
        url = origin.url("big.bin")
        rclone_env = {
            # The AWS SDK in rclone 1.60 fails on any AWS_CA_BUNDLE ("unable to load custom CA
            # bundle, HTTPClient's transport unsupported type"); the store is plain HTTP anyway.
            **{name: value for name, value in os.environ.items() if name != "AWS_CA_BUNDLE"},
            "RCLONE_CONFIG_S3REMOTE_TYPE": "s3",
            "RCLONE_CONFIG_S3REMOTE_PROVIDER": "Other",
            "RCLONE_CONFIG_S3REMOTE_ENDPOINT": store.moto_url,
            "RCLONE_CONFIG_S3REMOTE_ACCESS_KEY_ID": store.access_key_id,
            "RCLONE_CONFIG_S3REMOTE_SECRET_ACCESS_KEY": store.secret_access_key,
            "RCLONE_CONFIG_S3REMOTE_REGION": REGION,
            "RCLONE_CONFIG_S3REMOTE_FORCE_PATH_STYLE": "true",
        }
        rclone_log = os.path.join(ctx.workdir, "objects-rclone.log")

        def fetchd_once(r: int, peaks: list):
            key = f"fetchd/r{r}.bin"
            job = fetchd.api.submit({"url": url, "destination": f"s3://{BUCKET}/{key}", "connections": CONNECTIONS})
            partial = os.path.join(fetchd.data_dir, "partial", job["id"])
            blocks_peak, data_peak, seen, moved = 0, 0, None, time.monotonic()
            while job["state"] not in ("completed", "failed", "cancelled"):
                try:
                    info = os.stat(partial)
                    blocks_peak = max(blocks_peak, info.st_blocks * 512)
                    data_peak = max(data_peak, data_bytes(partial))
                    now = (job["bytesReceived"], info.st_size, info.st_blocks)
                except FileNotFoundError:
                    now = (job["bytesReceived"], None, None)
                if now != seen:
                    seen, moved = now, time.monotonic()
                elif time.monotonic() - moved > STALL:
                    # Not left to hang the run: fetchd before "Tell an object's owner each write, so a
                    # paused download goes on" held the download at its write limit for good once
                    # the origin outran the store.
                    raise RuntimeError(f"objects: fetchd's job made no progress for {STALL} s "
                                       f"(bytesReceived {now[0]}, staging file {now[1]} bytes, {now[2]} blocks)")
                time.sleep(SAMPLE)
                job = fetchd.api.get(f"/downloads/{job['id']}")
            if job["state"] != "completed":
                raise RuntimeError(f"objects: fetchd job ended {job['state']}: {job.get('error')}")
            if job.get("sha256") != expected:
                raise RuntimeError(f"objects: fetchd reported sha256 {job.get('sha256')}, the file's is {expected}")
            peaks.append((blocks_peak, data_peak))
            return key

        def rclone_once(r: int, _peaks: list):
            key = f"rclone/r{r}.bin"
            with open(rclone_log, "w") as log:
                try:
                    procs.run(["rclone", "copyurl", url, f"s3remote:{BUCKET}/{key}", *RCLONE_OPTIONS],
                              env=rclone_env, stderr=log)
                except RuntimeError as error:
                    with open(rclone_log, errors="replace") as f:
                        said = f.read()
                    ctx.log(f"objects: rclone said:\n{said[-3000:]}")
                    errors = [line for line in said.splitlines() if "ERROR" in line]
                    raise RuntimeError(f"{error}: {errors[-1] if errors else 'see above'}") from None
            return key

        tools = {"fetchd": fetchd_once, "rclone copyurl": rclone_once}
        mib_s = {name: [] for name in tools}
        cpu = {name: [] for name in tools}
        blocks_peaks, data_peaks = [], []
        with ctx.profiled(fetchd.pid, "objects"):
            for r, name in with_warm_up(list(tools), ctx.rounds):
                keys, staged = [], []
                moto_cpu = procs.cpu_seconds(store.proc.pid)
                seconds, cpu_seconds = procs.measured(lambda: keys.append(tools[name](r, staged)),
                                                      fetchd.pid if name == "fetchd" else None)
                moto_cpu = procs.cpu_seconds(store.proc.pid) - moto_cpu
                peak = (f", staging file peak {staged[0][0]:,} bytes (st_blocks × 512), {staged[0][1]:,} of data"
                        if staged else "")
                ctx.log(f"objects {round_label(r)} {name}: {size / MIB / seconds:.0f} MiB/s ({seconds:.2f} s), "
                        f"{cpu_seconds:.2f} s CPU, moto {moto_cpu:.2f} s CPU{peak}")
                check_and_delete(store.client, keys[0], size, expected)
                if r:
                    mib_s[name].append(size / MIB / seconds)
                    cpu[name].append(cpu_seconds)
                    blocks_peaks += [blocks / MIB for blocks, _ in staged]
                    data_peaks += [data / MIB for _, data in staged]
        fetchd.stop()
        origin.stop()
    finally:
        store.stop()

    note = f"fetchd: {PART >> 20} MiB parts, connections {CONNECTIONS}, up to {CONNECTIONS + 1} parts in flight, SHA-256"
    rclone = "rclone copyurl (4 parts at once)"
    return [
        Row(label, "throughput", "MiB/s", mib_s["fetchd"], rclone, mib_s["rclone copyurl"], "ratio >= 1.0", note),
        Row(label, "peak staging file on disk, st_blocks × 512", "MiB", blocks_peaks,
            note="ext4's extent blocks included: 4 KiB over the data at times"),
        Row(label, "peak staging data on disk, SEEK_DATA", "MiB", data_peaks,
            target=f"value <= {(CONNECTIONS + 1) * PART // MIB}", note="(connections + 1) × part size"),
        Row(label, "CPU time (user + sys)", "s", cpu["fetchd"], "rclone copyurl", cpu["rclone copyurl"],
            note="not moto's"),
    ]


def check_and_delete(client, key: str, size: int, expected: str):
    """The object must be there whole (its size, the SHA-256 of its bytes) with no upload left
    open; then it is deleted, so each round starts from an empty bucket."""
    head = client.head_object(Bucket=BUCKET, Key=key)
    if head["ContentLength"] != size:
        raise RuntimeError(f"objects: {key} is {head['ContentLength']} bytes, not {size}")
    body = client.get_object(Bucket=BUCKET, Key=key)["Body"]
    digest = hashlib.sha256()
    for chunk in iter(lambda: body.read(MIB), b""):
        digest.update(chunk)
    if digest.hexdigest() != expected:
        raise RuntimeError(f"objects: {key} has sha256 {digest.hexdigest()}, the origin's file {expected}")
    client.delete_object(Bucket=BUCKET, Key=key)
    left = client.list_multipart_uploads(Bucket=BUCKET).get("Uploads", [])
    if left:
        raise RuntimeError(f"objects: multipart uploads left open: {[u['Key'] for u in left]}")


def data_bytes(path: str) -> int:
    """The bytes of `path` that are data, not holes (its SEEK_DATA … SEEK_HOLE stretches)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        total, offset = 0, 0
        while True:
            try:
                start = os.lseek(fd, offset, os.SEEK_DATA)
            except OSError:  # ENXIO: no data past `offset`
                return total
            offset = os.lseek(fd, start, os.SEEK_HOLE)
            total += offset - start
    finally:
        os.close(fd)
