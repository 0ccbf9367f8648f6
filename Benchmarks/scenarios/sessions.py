"""8. sessions: POST /sessions/{session}/pause and …/resume on a session of 100,000 queued jobs (a
far-future earliestBeginDate, so nothing downloads), beside a second session of 1,000 that must stay
untouched. The jobs go in through POST /downloads/batch. Each round pauses and then resumes the whole
session; /healthz is probed every 5 ms on its own connection while each action runs (the p99 over
the round's two actions). One fetchd for all rounds; also its CPU per action."""
from benchlib import procs
from benchlib.fetchd import Fetchd
from benchlib.probe import LatencyProbe
from benchlib.table import Row
from .common import FAR_FUTURE

JOBS = 100_000
OTHER = 1000
BATCH = 1000
ORIGIN = "http://127.0.0.1:9/never-fetched.bin"


def run(ctx) -> list[Row]:
    fetchd = Fetchd(ctx.fetchd_bin, ctx.fresh("sessions-fetchd"))
    for session, count in (("big", JOBS), ("other", OTHER)):
        for start in range(0, count, BATCH):
            items = [{"url": ORIGIN, "destination": f"{session}/{i}", "session": session,
                      "earliestBeginDate": FAR_FUTURE} for i in range(start, min(count, start + BATCH))]
            status, body = fetchd.api.request("POST", "/downloads/batch", {"items": items})
            if status != 200 or any(item["status"] != 201 for item in body["items"]):
                raise RuntimeError(f"sessions: filling {session} failed: {status} {body!r:.300}")
    procs.wait_idle(fetchd.pid)
    seconds = {"pause": [], "resume": []}
    cpu = {"pause": [], "resume": []}
    healthz_p99, healthz_max, samples = [], [], 0
    for r in range(ctx.rounds):
        probe = LatencyProbe(fetchd.port, "/healthz", interval=0.005)
        for action, state in (("pause", "paused"), ("resume", "queued")):
            result = {}

            def act():
                status, body = fetchd.api.request("POST", f"/sessions/big/{action}")
                if status != 200:
                    raise RuntimeError(f"sessions: {action}: {status} {body!r:.300}")
                result.update(body)

            with ctx.profiled(fetchd.pid, f"sessions-{action}-r{r}"):
                wall, cpu_seconds = procs.measured(act, fetchd.pid)
            if result.get("changed") != JOBS:
                raise RuntimeError(f"sessions: {action} changed {result.get('changed')} of {JOBS}")
            if fetchd.api.session_counts("big")[state] != JOBS or fetchd.api.session_counts("other")["queued"] != OTHER:
                raise RuntimeError(f"sessions: after {action} the counts are wrong")
            seconds[action].append(wall)
            cpu[action].append(cpu_seconds)
            ctx.log(f"sessions round {r + 1} {action}: {wall:.2f} s, {cpu_seconds:.2f} s CPU")
        latency = probe.stop()
        healthz_p99.append(latency["p99_ms"])
        healthz_max.append(latency["max_ms"])
        samples += latency["samples"]
    fetchd.stop()
    label = f"10 sessions {JOBS // 1000:,}k"
    return [Row(label, "POST /sessions/{s}/pause", "s", seconds["pause"], target="value <= 1",
                note=f"CPU {sorted(cpu['pause'])[len(cpu['pause']) // 2]:.2f} s"),
            Row(label, "POST /sessions/{s}/resume", "s", seconds["resume"], target="value <= 1",
                note=f"CPU {sorted(cpu['resume'])[len(cpu['resume']) // 2]:.2f} s"),
            Row(label, "/healthz p99 during the actions", "ms", healthz_p99, target="value <= 50",
                note=f"max {max(healthz_max):.0f} ms, {samples} samples")]
