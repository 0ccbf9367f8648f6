"""2. small: 2,000 files of 16 KiB (500 with --quick). fetchd: submitted by wrk (one thread, 16
connections, each file POSTed once) until every job is completed and its `download.completed`
webhook delivered; vs curl --parallel --parallel-max 16 and aria2c -j 16.

Two times for fetchd, both from the moment the driver starts wrk (`time.time()`, taken just
before wrk is spawned): to the last completion — the latest "download completed" line of fetchd's
log, which it writes once the job's completed state is committed (its file synced, hashed and
linked in), stamped from the same system clock on the same machine in milliseconds; `finishedAt`
is earlier, taken when the settlement is decided — and to the last `download.completed` webhook as
the receiver counted it (it answers the driver's one waiting request then). curl's and aria2's
times are their run time to exit.

Beside them, in the same alternation, the durable floor (`floor/floor.c`, see durable_floor.py):
the least CPU any service keeping fetchd's promises spends on the files, without HTTP. fetchd must
also do curl's work and have nginx serve it, so its CPU is set against floor + curl + nginx (nginx's
CPU while curl ran), and (floor + curl + nginx) / cores is the least wall time any durable queue
could take here, with wrk and the webhook receiver costing nothing. The floor signs each webhook but
sends none; curl POSTing as many to the same receiver (`webhooks.post_with_curl`), also in the
alternation, measures the least that sending costs, for one more row without a target.

fetchd runs with 16 transfer slots, all usable for the one origin (FETCHD_MAX_TRANSFERS=16,
FETCHD_MAX_TRANSFERS_PER_HOST=16), like the peers' 16; it still hashes, fsyncs, commits and
delivers a signed webhook per file.

Each tool first runs once untimed (a warm-up), then the timed rounds alternate.
"""
import os
import time

from benchlib import floor as durable_floor, procs, wrk
from benchlib.fetchd import Fetchd
from benchlib.origin import Origin, make_small_files
from benchlib.table import Row
from benchlib.webhooks import SIGNING_SECRET, WebhookReceiver, post_with_curl
from .common import aria2c, round_label, settle_disk, wait_for_forgotten_deletions, with_warm_up

SIZE, PARALLEL = 16 << 10, 16


def run(ctx) -> list[Row]:
    count = 500 if ctx.quick else 2000
    files = os.path.join(ctx.cache, "small")
    make_small_files(files, count, SIZE)
    origin = Origin(ctx.fresh("small-origin"), files)
    url_list = os.path.join(ctx.workdir, "small-urls.txt")
    with open(url_list, "w") as f:
        f.writelines(origin.url(f"f{i}.bin") + "\n" for i in range(count))
    receiver = WebhookReceiver()

    def with_fetchd(r, _out):  # fetchd writes under its own root
        fetchd = Fetchd(ctx.fetchd_bin, ctx.fresh(f"small-fetchd-{r}"), FETCHD_MAX_TRANSFERS=PARALLEL,
                        FETCHD_MAX_TRANSFERS_PER_HOST=PARALLEL, FETCHD_WEBHOOK_SECRET=SIGNING_SECRET)
        session = f"small{r}"
        started = []
        before = receiver.counts().get("download.completed", 0)

        def submit_and_wait():
            started.append(time.time())
            submitter = wrk.start(fetchd.base + "/downloads", PARALLEL, threads=1, script=wrk.lua("post_small_files.lua"),
                                  script_args=[origin.url("f"), count, session, receiver.url])
            receiver.wait_for("download.completed", before + count, 600)
            submitted = wrk.finish(submitter)
            if submitted["failed"]:
                raise RuntimeError(f"small: {submitted['failed']} POSTs failed")

        with ctx.profiled(fetchd.pid, f"small-r{r}"):
            result = procs.measured(submit_and_wait, fetchd.pid)
        counts = fetchd.api.session_counts(session)
        if counts["completed"] != count:
            raise RuntimeError(f"small: fetchd finished with {counts}")
        if r > 0:  # round 0 is the warm-up
            to_completion.append(max(fetchd.logged_times("download completed")) / 1000 - started[0])
        fetchd.stop()
        return result

    def with_curl(r, out):
        serving = origin.cpu_seconds()
        result = procs.measured(lambda: procs.run([
            "curl", "-sS", "--fail", "--parallel", "--parallel-max", str(PARALLEL), "--create-dirs",
            "-o", os.path.join(out, "f#1.bin"), origin.url(f"f[0-{count - 1}].bin")]))
        if r > 0:
            nginx_cpu.append(origin.cpu_seconds() - serving)
        return result

    def with_floor(r, out):
        return durable_floor.run(floor, out, count)

    def with_webhooks(r, out):
        return post_with_curl(receiver, count, out, PARALLEL)

    def with_aria2(r, out):
        return procs.measured(lambda: procs.run(aria2c("-j", str(PARALLEL), "-i", url_list, "-d", out)))

    wait_for_forgotten_deletions(ctx)
    floor = durable_floor.build(ctx.workdir)
    to_completion, nginx_cpu = [], []
    tools = {"fetchd": with_fetchd, "curl": with_curl, "aria2c": with_aria2, "floor": with_floor,
             "webhooks": with_webhooks}
    wall = {name: [] for name in tools}
    cpu = {name: [] for name in tools}
    for r, name in with_warm_up(list(tools), ctx.rounds):
        # A directory of its own for every run, nothing deleted until the scenario ends: after
        # thousands of files are deleted, ext4 without a journal (as here) spends the next minutes
        # skipping their inodes when it makes new files (`wait_for_forgotten_deletions`), which
        # slowed whichever tool ran next (curl 0.21 s after nothing was deleted, 0.97 and 1.48 s
        # after a round's files were).
        out = ctx.fresh(f"small-out-{name}-{r}")
        seconds, cpu_seconds = tools[name](r, out)
        if r > 0:
            wall[name].append(seconds)
            cpu[name].append(cpu_seconds)
        if name in ("curl", "aria2c") and len(os.listdir(out)) != count:
            raise RuntimeError(f"small: {name} left {len(os.listdir(out))} files")
        ctx.log(f"small {round_label(r)} {name}: {seconds:.2f} s, {cpu_seconds:.2f} s CPU")
        settle_disk(*(os.path.join(out, name) for name in os.listdir(out)))
    receiver.stop()
    origin.stop()
    label = f"2 small {count}×16 KiB"
    note = "submitted by wrk"
    # Per round: the floor's, curl's and nginx's CPU of the same round.
    least_cpu = [f + c + n for f, c, n in zip(cpu["floor"], cpu["curl"], nginx_cpu)]
    cores = os.cpu_count() or 1
    return [
        Row(label, "time to last completion", "s", to_completion, "aria2c -j 16", wall["aria2c"], "ratio <= 0.4", note),
        Row(label, "time to last completion", "s", to_completion, f"(floor + curl + nginx CPU) / {cores} cores",
            [least / cores for least in least_cpu], note=note),
        Row(label, "time to last completion", "s", to_completion, "curl --parallel 16", wall["curl"], note=note),
        Row(label, "time to last webhook", "s", wall["fetchd"], "curl --parallel 16", wall["curl"], note=note),
        Row(label, "CPU time (user + sys)", "s", cpu["fetchd"], "floor + curl + nginx", least_cpu, "ratio <= 1.3"),
        Row(label, "CPU time (user + sys)", "s", cpu["fetchd"], "floor + curl + nginx + curl posting the webhooks",
            [least + posting for least, posting in zip(least_cpu, cpu["webhooks"])]),
        Row(label, "CPU time (user + sys)", "s", cpu["fetchd"], "the durable floor", cpu["floor"]),
        Row(label, "CPU time (user + sys)", "s", cpu["fetchd"], "curl --parallel 16", cpu["curl"]),
        Row(label, "CPU time (user + sys)", "s", cpu["fetchd"], "aria2c -j 16", cpu["aria2c"]),
    ]

