#!/usr/bin/env python3
"""fetchd's benchmark suite: fetchd beside curl and aria2 on loopback, one table at the end.

    python3 Benchmarks/run.py [--quick] [--only single,small,intake,queue,concurrency,https,segmented,cap,batch,sessions,objects,uploads,
                              watches,fileservers]
                              [--rounds N] [--profile DIR] [--fetchd PATH] [--baseline PATH] [--json FILE]

`make bench` and `make bench-quick` install nginx-light, aria2, wrk and rclone (and moto and boto3
for `objects`, aiohttp-tus and tuspy for `uploads`, vsftpd and OpenSSH's sshd for `fileservers`),
build fetchd in release mode and run this. See Benchmarks/README.md for what each scenario
measures and how.
"""
import argparse
import dataclasses
import glob
import json
import os
import platform
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from benchlib import compare, deletions, procs  # noqa: E402
from benchlib.context import Context  # noqa: E402
from benchlib.table import Row, render  # noqa: E402
from scenarios import (batch, cap, concurrency, fileservers, https, intake, objects, queue, segmented,  # noqa: E402
                       sessions, single, small, uploads, watches)

SCENARIOS = {"single": single, "small": small, "intake": intake, "queue": queue, "concurrency": concurrency,
             "https": https, "segmented": segmented, "cap": cap, "batch": batch, "sessions": sessions,
             "objects": objects, "uploads": uploads, "watches": watches, "fileservers": fileservers}
# The rows of one large file move most from round to round, with how much fresh memory each round
# meets on a 2-core VM (curl's own rate by up to 2×; a PUT's by up to 3×, nginx writing it), and the
# batch rate's target is set on five, so outside --quick their medians take at least five rounds.
LEAST_ROUNDS = {"single": 5, "https": 5, "batch": 5, "uploads": 5, "fileservers": 5}
TOOLS = ["nginx", "aria2c", "wrk", "curl", "openssl", "rclone"]


def main() -> int:
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller queue and shorter runs: under 3 minutes")
    parser.add_argument("--only", default=",".join(SCENARIOS), help="comma-separated scenarios")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per scenario (median reported)")
    parser.add_argument("--profile", metavar="DIR", help="sample fetchd with perf during each measurement")
    parser.add_argument("--fetchd", default=os.environ.get("FETCHD_BIN", os.path.join(repo, ".build/release/fetchd")))
    parser.add_argument("--commit", help="what to call the fetchd measured (default: git describe of this tree)")
    parser.add_argument("--baseline", metavar="PATH",
                        help="an earlier fetchd build, run in turn with --fetchd round by round; a second table compares them")
    parser.add_argument("--json", metavar="FILE", help="also write every round's figures as JSON")
    parser.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "fetchd-bench-files"),
                        help="where generated origin files are kept between runs")
    args = parser.parse_args()

    missing = [tool for tool in TOOLS if not shutil.which(tool)]
    missing += [path for path in (args.fetchd, args.baseline) if path and not os.access(path, os.X_OK)]
    if missing:
        sys.exit(f"missing: {' '.join(missing)} (make bench installs and builds them)")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 65536)), hard))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    workdir = tempfile.mkdtemp(prefix="fetchd-bench-")
    ctx = Context(fresh_copy(args.fetchd, workdir, "fetchd"), workdir, args.cache, args.quick, args.rounds,
                  os.path.abspath(args.profile) if args.profile else None)
    header = describe(repo, args)
    started = time.perf_counter()
    rows, baseline_rows = [], []
    builds = {"this": ctx.fetchd_bin, "baseline": fresh_copy(args.baseline, workdir, "fetchd-baseline")} if args.baseline else {}
    try:
        for name in args.only.split(","):
            if not builds:
                rows += run_scenario(name, dataclasses.replace(ctx, rounds=rounds_for(name, args)))
                continue
            # One round at a time, the two builds in turn and the order swapped each round.
            runs = {build: [] for build in builds}
            for r in range(rounds_for(name, args)):
                for build in list(builds) if r % 2 == 0 else list(builds)[::-1]:
                    runs[build].append(run_scenario(name, dataclasses.replace(
                        ctx, rounds=1, fetchd_bin=builds[build], workdir=round_workdir(ctx, name, build, r),
                        profile_dir=round_profile_dir(ctx, build, r))))
            rows += compare.pooled(runs["this"])
            baseline_rows += compare.pooled(runs["baseline"])
    finally:
        procs.stop_all()
        shutil.rmtree(workdir, ignore_errors=True)
        deletions.note(args.cache)
    header += f", took {time.perf_counter() - started:.0f} s, load average after {os.getloadavg()[0]:.1f}"
    print(f"\n{header}\n\n{render(rows)}\n")
    if args.baseline:
        print(f"Against the baseline, {args.baseline}, its rounds run in turn with this build's:\n\n"
              f"{compare.render(rows, baseline_rows)}\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"header": header, "rows": [vars(r) for r in rows], "baseline_rows": [vars(r) for r in baseline_rows]},
                      f, indent=1)
    print(f"targets met: {sum(r.met is True for r in rows)} of {sum(r.met is not None for r in rows)}")
    return 0


def run_scenario(name: str, ctx: Context) -> list[Row]:
    """Scenario `name`'s rows, or one saying it failed: one broken scenario still leaves the others' figures."""
    ctx.log(f"scenario {name} ({ctx.fetchd_bin})")
    try:
        return SCENARIOS[name].run(ctx)
    except Exception as error:
        ctx.log(f"scenario {name} failed: {error!r}\n{traceback.format_exc()}")
        return [Row(name, f"FAILED: {error}", "", [])]
    finally:
        procs.stop_all()


def round_workdir(ctx: Context, name: str, build: str, r: int) -> str:
    """With --baseline, where a build's round of a scenario works: a directory of its own. Each
    round runs the scenario anew, and in a shared directory it removed the files of the round
    before (12,000 for the small files), which slows the creation of files for minutes on ext4
    without a journal (`benchlib.deletions`): curl took 1.0-1.7 s of CPU for its 2,000 files
    instead of 0.11 s. The whole work directory goes at the end of the run."""
    path = os.path.join(ctx.workdir, f"{name}-{build}-round{r + 1}")
    os.makedirs(path, exist_ok=True)
    return path


def round_profile_dir(ctx: Context, build: str, r: int) -> str | None:
    """With --profile and --baseline, where a build's round keeps its profiles: each round runs
    the scenario as its first, whose profiles would otherwise overwrite the last round's."""
    return os.path.join(ctx.profile_dir, f"{build}-round{r + 1}") if ctx.profile_dir else None


def rounds_for(name: str, args) -> int:
    """The rounds scenario `name` runs: --rounds, or its LEAST_ROUNDS outside --quick."""
    return args.rounds if args.quick else max(args.rounds, LEAST_ROUNDS.get(name, 0))


def describe(repo: str, args) -> str:
    commit = args.commit or subprocess.run(["git", "-C", repo, "describe", "--always", "--dirty"],
                                           capture_output=True, text=True).stdout.strip()
    mode = "quick" if args.quick else "full"
    least = "".join(f", {rounds_for(name, args)} for {name}" for name in args.only.split(",")
                    if rounds_for(name, args) != args.rounds)
    return (f"fetchd {commit or '?'}, {mode}, {args.rounds} rounds{least}, {time.strftime('%Y-%m-%d %H:%M %Z')}, "
            f"nproc {os.cpu_count()}, Linux {platform.release()}{damon_reclaim()}, load average before {os.getloadavg()[0]:.1f}"
            f"{code_layout(repo, args.fetchd)}")


def fresh_copy(build: str, workdir: str, name: str) -> str:
    """A copy of `build` in the run's directory, written now. fetchd's RSS counts the pages of its code
    that the kernel maps around each one it touches, from those in the page cache: a file just
    written is all there, one written long ago partly paged out (an identical copy of one build
    started with 35.2 MB where the half-hour-old file had 34.5, 2026-12-06, six starts each). Both
    builds compared are copied alike, so their RSS rows differ only by their code."""
    copy = os.path.join(workdir, name)
    shutil.copy2(build, copy)
    return copy


def code_layout(repo: str, binary: str) -> str:
    """Says how many of the functions `Sources/fetchd/fetchd.order` names the binary still has, when
    some are gone: a function renamed (a struct made a class renames every method) falls out of the
    order and back to where the link puts it, and the code resident at start grows with each. Making
    DownloadsAPI a class took 110 of 2,110 out, and 0.4-0.6 MB more code was resident after a start
    (3.18-3.35 against 2.78 MB) until `make code-layout` wrote the order again."""
    try:
        with open(os.path.join(repo, "Sources/fetchd/fetchd.order")) as f:
            ordered = {line.strip().removeprefix(".text.") for line in f if line.strip()}
        names = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return ""
    found = len(ordered & {line.rsplit(" ", 1)[-1] for line in names.splitlines()})
    return "" if found >= 0.98 * len(ordered) else f", code layout stale: {found:,} of {len(ordered):,} ordered functions (make code-layout)"


def damon_reclaim() -> str:
    """Says ", DAMON pageout on" when the kernel's DAMON pages out memory left idle, as on some VMs: it
    empties caches during the runs' waits (the origin's files, fetchd's libraries), and costs
    memory-heavy work: fetchd's batch intake measured 74,000-83,000 jobs/s with it on and
    85,000-96,000 with it off (three runs of 3 rounds each, alternating, 2026-12-01)."""
    def read(path):
        with open(path) as f:
            return f.read().strip()
    for state in glob.glob("/sys/kernel/mm/damon/admin/kdamonds/*/state"):
        actions = os.path.join(os.path.dirname(state), "contexts", "*", "schemes", "*", "action")
        try:
            if read(state) == "on" and "pageout" in map(read, glob.glob(actions)):
                return ", DAMON pageout on"
        except OSError:
            continue
    return ""


if __name__ == "__main__":
    sys.exit(main())
