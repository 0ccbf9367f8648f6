"""cap: how closely a bandwidth cap holds over 10 s, end to end: nginx at full speed, fetchd
with `FETCHD_MAX_BANDWIDTH` (one job), then a job's own `maxBytesPerSecond` with no global cap.
The rate is read from the job's `bytesReceived` (live while it runs) over a 10 s window that
starts 1 s into the transfer; the figure is |rate / cap − 1| (API.md: within 10 %).

Benchmarks/bandwidth_accuracy.py measures the engine alone (and libcurl's own option) over a
changing plan; this row is the whole service.
"""
import os
import time

from benchlib.origin import make_file
from benchlib.table import Row
from .common import start_pair

MIB = 1 << 20
WARM_UP = 1.0
WINDOW = 10.0


def run(ctx) -> list[Row]:
    cap = 8 * MIB
    size = int(cap * (WARM_UP + WINDOW) * 1.5)  # still running when the window closes
    files = os.path.join(ctx.cache, "cap")
    make_file(os.path.join(files, "capped.bin"), size)
    rows = []
    for how, settings, body in [
        ("FETCHD_MAX_BANDWIDTH", {"FETCHD_MAX_BANDWIDTH": f"{cap // MIB}MiB"}, {}),
        ("maxBytesPerSecond", {}, {"maxBytesPerSecond": cap}),
    ]:
        origin, fetchd = start_pair(ctx, "cap", files, **settings)
        deviation, rate = measure(fetchd, {"url": origin.url("capped.bin"), "destination": "capped.bin", **body}, cap)
        ctx.log(f"cap {how}: {rate / MIB:.3f} MiB/s over {WINDOW:.0f} s under {cap / MIB:.0f} MiB/s")
        fetchd.stop()
        origin.stop()
        rows.append(Row(f"8 cap {cap >> 20} MiB/s, {how}", "|rate / cap − 1| over 10 s", "", [deviation],
                        target="value <= 0.10", note=f"{rate / MIB:.2f} MiB/s"))
    return rows


def measure(fetchd, job: dict, cap: int) -> tuple[float, float]:
    """Submits the job and reads its bytes at the start and end of the window."""
    job_id = fetchd.api.submit(job)["id"]
    while received(fetchd, job_id) == 0:
        time.sleep(0.01)
    time.sleep(WARM_UP)
    start, started = received(fetchd, job_id), time.monotonic()
    time.sleep(WINDOW)
    end, ended = received(fetchd, job_id), time.monotonic()
    fetchd.api.request("DELETE", f"/downloads/{job_id}")
    rate = (end - start) / (ended - started)
    return abs(rate / cap - 1), rate


def received(fetchd, job_id: str) -> int:
    return fetchd.api.get(f"/downloads/{job_id}")["bytesReceived"]
