#!/usr/bin/env python3
"""Writes the package's files that list fetchd's settings, from the table built into the binary
(`fetchd --settings-markdown`, the one `fetchd --help` prints and docs/configuration.md shows):

    env  /etc/fetchd/fetchd.env, the unit's EnvironmentFile: every setting, commented, with its
         meaning and default; the few the package sets (its directories) set.
    man  fetchd(8) in roff.

    python3 scripts/package/settings_files.py --fetchd BIN env|man OUTPUT"""

import argparse
import html
import re
import subprocess
import sys
from pathlib import Path

# What the package sets, unlike the embedded defaults: its directories. The unit's
# ReadWritePaths= and deploy/debian/tmpfiles.conf name the same ones (Tests/e2e/test_package.py).
PACKAGE_VALUES = {
    "FETCHD_DATA_DIR": "/var/lib/fetchd",
    "FETCHD_DOWNLOAD_ROOT": "/srv/fetchd",
    "FETCHD_STAGING_DIR": "/srv/fetchd/.fetchd-partial",
}

ROW = re.compile(r"^\| `(FETCHD_[A-Z0-9_]+)` \| `(--[a-z0-9-]+)` \| (?:`(.*?)`|none) \| (.*) \|$")


def settings(binary: str) -> list[dict]:
    result = subprocess.run([binary, "--settings-markdown"], capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        raise SystemExit(f"{binary} --settings-markdown gave exit code {result.returncode}:\n{result.stderr}")
    rows = []
    for line in result.stdout.splitlines()[2:]:
        match = ROW.match(line)
        if not match:
            raise SystemExit(f"cannot read this row of {binary} --settings-markdown: {line}")
        env, flag, default, meaning = match.groups()
        rows.append({"env": env, "flag": flag, "default": default, "meaning": html.unescape(meaning.replace("\\|", "|"))})
    missing = set(PACKAGE_VALUES) - {row["env"] for row in rows}
    if missing:
        raise SystemExit(f"the package sets {', '.join(sorted(missing))}, which fetchd no longer has")
    return rows


def env_file(rows: list[dict]) -> str:
    lines = [
        "# fetchd's settings, read by fetchd.service (EnvironmentFile=). Uncomment a line to change it,",
        "# then `systemctl restart fetchd`. Every setting is also described in fetchd(8).",
        "#",
        "# fetchd listens on the sockets of fetchd.socket (ListenStream=, 127.0.0.1:8080): FETCHD_LISTEN",
        "# applies only when it is started without them. On any other address than loopback it needs",
        "# FETCHD_API_TOKENS or FETCHD_API_TOKENS_FILE. This file is readable by root only: secrets",
        "# (tokens, FETCHD_WEBHOOK_SECRET, a password in FETCHD_DATABASE_URL) may go here.",
    ]
    for row in rows:
        lines.append("")
        lines.append(f"# {row['meaning']}")
        if row["env"] in PACKAGE_VALUES:
            lines.append(f"# (fetchd's own default: {row['default'] or 'none'})")
            lines.append(f"{row['env']}={PACKAGE_VALUES[row['env']]}")
        else:
            lines.append(f"#{row['env']}={row['default'] or ''}")
    return "\n".join(lines) + "\n"


def roff(text: str) -> str:
    """Escapes text for a roff line: backslashes, and a leading dot or quote."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text[:1] in (".", "'") else text


def man_page(rows: list[dict], version: str) -> str:
    out = [
        f'.TH FETCHD 8 "" "fetchd {version}" "System Administration"',
        ".SH NAME", "fetchd \\- a self-hosted download queue",
        ".SH SYNOPSIS", ".B fetchd", ".RI [ --setting \" value\" ...]", ".br", ".B fetchd --help",
        ".SH DESCRIPTION",
        "fetchd takes download jobs over an HTTP API, keeps them in SQLite (or PostgreSQL for many nodes),",
        "fetches them with libcurl when they are due, resumes them after any crash, places each file",
        "atomically under the download root and posts signed webhooks when they end.",
        "The API is described in /usr/share/doc/fetchd/openapi.yaml.",
        ".PP",
        "As a service it runs as",
        ".BR fetchd.service ,",
        "reading", ".I /etc/fetchd/fetchd.env", "and listening on the sockets of", ".BR fetchd.socket .",
        ".SH OPTIONS",
        "Every setting is a flag and an environment variable; a flag wins over the environment.",
        "Durations take ms, s, m, h or d; sizes B, KiB, MiB or GiB. A bad value stops start-up with",
        "one line naming the setting, and exit status 2.",
    ]
    for row in rows:
        out += [".TP", f".BI {roff(row['flag'])} \" value\"", f"({roff(row['env'])}) {roff(row['meaning'])}."]
        if row["default"]:
            out.append(f"Default: {roff(row['default'])}.")
    out += [
        ".SH ENVIRONMENT",
        "Besides the settings, fetchd reads what a service manager passes (see sd_notify(3), sd_listen_fds(3)):",
        ".TP", ".B NOTIFY_SOCKET",
        "READY=1 once fetchd listens and has recovered; STATUS= with the running and queued jobs; STOPPING=1 at SIGTERM.",
        ".TP", ".B WATCHDOG_USEC",
        "WATCHDOG=1 every half of it, while the scheduler and the database writer answer.",
        ".TP", ".BR LISTEN_FDS \", \" LISTEN_PID",
        "listening sockets to serve instead of binding \\-\\-listen.",
        ".SH SIGNALS",
        ".TP", ".BR SIGTERM \", \" SIGINT",
        "Stop accepting, stop transfers keeping their partial data, exit 0 within \\-\\-shutdown\\-timeout.",
        ".TP", ".B SIGHUP", "Re-read \\-\\-api\\-tokens\\-file.",
        ".SH FILES",
        ".TP", ".I /etc/fetchd/fetchd.env", "the service's settings",
        ".TP", ".I /var/lib/fetchd", "the SQLite database",
        ".TP", ".I /srv/fetchd", "the download root; partial files in its .fetchd\\-partial",
        ".SH SEE ALSO",
        "systemctl(1), journalctl(1), systemd.service(5), systemd.socket(5)",
    ]
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fetchd", required=True)
    parser.add_argument("--version", default="")
    parser.add_argument("kind", choices=["env", "man"])
    parser.add_argument("output", type=Path)
    args = parser.parse_args()
    rows = settings(args.fetchd)
    args.output.write_text(env_file(rows) if args.kind == "env" else man_page(rows, args.version), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
