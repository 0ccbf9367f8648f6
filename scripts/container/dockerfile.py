#!/usr/bin/env python3
"""Reads the final stage of a Dockerfile for scripts/container/check.sh.

The check assembles the runtime file system from what the Dockerfile says rather than from a
second copy of it, so a package dropped from the runtime RUN line, a changed user or a new
HEALTHCHECK is what gets tested. Only the instructions the fetchd Dockerfile uses are
understood; anything else in the final stage stops the check instead of being ignored.

    dockerfile.py DOCKERFILE QUERY

QUERY is one of:
    from          the base image of the final stage
    build-run     the build stage's RUN commands, one per line (to compare the swift build flags)
    run           the final stage's RUN commands, NUL-separated, each for /bin/sh -c
    copy          COPY --from lines of the final stage: "source<TAB>destination" per line
    env           ENV of the final stage, NUL-separated KEY=VALUE
    user          the USER of the final stage
    volumes       VOLUME paths, one per line
    expose        EXPOSE ports, one per line
    stopsignal    STOPSIGNAL
    healthcheck   the HEALTHCHECK CMD argv, NUL-separated (exec form only)
    healthcheck-timeout   its --timeout in seconds (Docker's default 30 when absent)
    entrypoint    the ENTRYPOINT argv, NUL-separated (exec form only)
"""

import json
import re
import shlex
import sys

# Instructions the final stage may contain; check.sh acts on each of them.
KNOWN = {"FROM", "LABEL", "RUN", "COPY", "ENV", "VOLUME", "EXPOSE", "USER", "STOPSIGNAL",
         "HEALTHCHECK", "ENTRYPOINT", "WORKDIR", "ARG"}


def instructions(text):
    """(INSTRUCTION, arguments) per logical line, as Docker's parser joins them: a trailing
    backslash continues the line, and comment lines inside a continuation are dropped."""
    result, pending = [], None
    for raw in text.splitlines():
        stripped = raw.strip()
        if stripped.startswith("#") or (not stripped and pending is None):
            continue
        line = raw.rstrip()
        continued = line.endswith("\\")
        if continued:
            line = line[:-1]
        pending = line if pending is None else pending + line
        if not continued:
            name, _, args = pending.strip().partition(" ")
            result.append((name.upper(), args.strip()))
            pending = None
    if pending is not None:
        raise SystemExit("Dockerfile ends inside a continued line")
    return result


def stages(parsed):
    out = []
    for name, args in parsed:
        if name == "FROM":
            out.append([])
        if out:
            out[-1].append((name, args))
    if not out:
        raise SystemExit("Dockerfile has no FROM")
    return out


def exec_form(args, what):
    try:
        argv = json.loads(args)
    except ValueError:
        raise SystemExit(f"{what} is not in exec (JSON) form: {args}")
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise SystemExit(f"{what} is not a JSON list of strings")
    return argv


def env_pairs(args):
    words = shlex.split(args, posix=True)
    if words and "=" not in words[0]:  # legacy form: ENV KEY value with spaces
        return [(words[0], " ".join(words[1:]))]
    pairs = []
    for word in words:
        key, sep, value = word.partition("=")
        if not sep:
            raise SystemExit(f"ENV word without '=': {word}")
        pairs.append((key, value))
    return pairs


def seconds(duration):
    match = re.fullmatch(r"(\d+)(ms|s|m|h)", duration)
    if not match:
        raise SystemExit(f"cannot read duration {duration}")
    value, unit = int(match.group(1)), match.group(2)
    return max(1, {"ms": value // 1000, "s": value, "m": value * 60, "h": value * 3600}[unit])


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    with open(sys.argv[1], encoding="utf-8") as handle:
        all_stages = stages(instructions(handle.read()))
    final, query = all_stages[-1], sys.argv[2]
    for name, _ in final:
        if name not in KNOWN:
            raise SystemExit(f"the final stage uses {name}, which check.sh does not reproduce")

    def args_of(wanted):
        return [args for name, args in final if name == wanted]

    out = []
    if query == "from":
        out = [final[0][1].split()[0]]
    elif query == "build-run":
        out = [args for stage in all_stages[:-1] for name, args in stage if name == "RUN"]
    elif query == "run":
        print("\0".join(args_of("RUN")), end="")
        return
    elif query == "copy":
        for args in args_of("COPY"):
            words = args.split()
            if not words[0].startswith("--from=") or len(words) != 3:
                raise SystemExit(f"only 'COPY --from=STAGE SOURCE DEST' is reproduced: {args}")
            out.append(f"{words[1]}\t{words[2]}")
    elif query == "env":
        pairs = [f"{k}={v}" for args in args_of("ENV") for k, v in env_pairs(args)]
        print("\0".join(pairs), end="")
        return
    elif query == "user":
        out = args_of("USER")[-1:]
    elif query == "volumes":
        for args in args_of("VOLUME"):
            out += exec_form(args, "VOLUME") if args.startswith("[") else args.split()
    elif query == "expose":
        out = [port for args in args_of("EXPOSE") for port in args.split()]
    elif query == "stopsignal":
        out = args_of("STOPSIGNAL")[-1:] or ["SIGTERM"]
    elif query in ("healthcheck", "healthcheck-timeout"):
        checks = args_of("HEALTHCHECK")
        if not checks:
            raise SystemExit("the final stage has no HEALTHCHECK")
        options, _, command = checks[-1].partition("CMD")
        if query == "healthcheck":
            print("\0".join(exec_form(command.strip(), "HEALTHCHECK CMD")), end="")
            return
        timeout = re.search(r"--timeout=(\S+)", options)
        out = [str(seconds(timeout.group(1)) if timeout else 30)]
    elif query == "entrypoint":
        print("\0".join(exec_form(args_of("ENTRYPOINT")[-1], "ENTRYPOINT")), end="")
        return
    else:
        raise SystemExit(f"unknown query {query}")
    print("\n".join(out))


if __name__ == "__main__":
    main()
