"""FETCHD_MAX_BANDWIDTH: one budget shared by every transfer. The bound checked is a correctness
bound, not a speed target: under a cap, the bytes cannot arrive sooner than size / cap."""

from __future__ import annotations

import os
import time

from e2e_support import sha256_hex

MiB = 1 << 20


def test_three_jobs_under_a_shared_cap_take_at_least_their_size_over_the_cap(fetchd, origin):
    fd = fetchd(env={"FETCHD_MAX_BANDWIDTH": "1MiB"})
    bodies = {f"/capped{i}.bin": os.urandom(MiB) for i in range(3)}
    urls = {path: origin.add(path, body) for path, body in bodies.items()}

    started = time.monotonic()
    jobs = {path: fd.api.submit({"url": url, "destination": path.lstrip("/")}) for path, url in urls.items()}
    done = {path: fd.api.wait_state(job["id"], "completed", timeout=30) for path, job in jobs.items()}
    elapsed = time.monotonic() - started

    for path, body in bodies.items():
        assert done[path]["sha256"] == sha256_hex(body)
        assert fd.dest(path.lstrip("/")).read_bytes() == body
    # 3 MiB at 1 MiB/s; the engine's first refill may let a tenth of a second through at once.
    assert elapsed >= 3 * 0.9, f"3 MiB under a 1 MiB/s cap arrived in {elapsed:.2f} s"


def test_a_schedule_outside_its_windows_does_not_cap(fetchd, origin):
    # A window that is never now (one minute, twelve hours away) caps nothing now.
    hour = time.gmtime().tm_hour
    far = (hour + 12) % 24
    fd = fetchd(env={"FETCHD_MAX_BANDWIDTH": f"{far:02d}:00-{far:02d}:01=1KiB"})
    body = os.urandom(4 * MiB)
    job = fd.api.submit({"url": origin.add("/free.bin", body), "destination": "free.bin"})
    done = fd.api.wait_state(job["id"], "completed", timeout=30)
    assert done["sha256"] == sha256_hex(body)
