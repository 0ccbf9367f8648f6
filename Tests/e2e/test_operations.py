"""Operations: configuration errors, JSON logs, retention, the metrics scrape, the staging
directory's file system, and the settings table."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from e2e_support import sample, scrape, wait_for

BAD_CONFIGURATIONS = [
    ({"FETCHD_LISTEN": "nowhere"}, "FETCHD_LISTEN"),
    ({"FETCHD_LISTEN": "127.0.0.1:99999"}, "FETCHD_LISTEN"),
    ({"FETCHD_LISTEN": "203.0.113.7:0"}, "203.0.113.7"),  # not an address of this machine
    ({"FETCHD_MAX_TRANSFERS": "0"}, "FETCHD_MAX_TRANSFERS"),
    ({"FETCHD_MAX_ATTEMPTS": "many"}, "FETCHD_MAX_ATTEMPTS"),
    ({"FETCHD_RETRY_BASE_DELAY": "soon"}, "FETCHD_RETRY_BASE_DELAY"),
    ({"FETCHD_STALL_TIMEOUT": "-5s"}, "FETCHD_STALL_TIMEOUT"),
    ({"FETCHD_RETENTION": "7 days"}, "FETCHD_RETENTION"),
    ({"FETCHD_WEBHOOK_SECRET": "not-base64!"}, "FETCHD_WEBHOOK_SECRET"),
    ({"FETCHD_WEBHOOK_URL": "gopher://x/"}, "FETCHD_WEBHOOK_URL"),
    ({"FETCHD_WEBHOOK_RETRY_SCHEDULE": "0,later"}, "FETCHD_WEBHOOK_RETRY_SCHEDULE"),
    ({"FETCHD_ALLOW_NETWORKS": "10.0.0.0/40"}, "FETCHD_ALLOW_NETWORKS"),
    ({"FETCHD_DISCRETIONARY_WINDOW": "nightly"}, "FETCHD_DISCRETIONARY_WINDOW"),
    ({"FETCHD_DISCRETIONARY_MAX_SHARE": "2"}, "FETCHD_DISCRETIONARY_MAX_SHARE"),
    ({"FETCHD_DISK_RESERVE": "lots"}, "FETCHD_DISK_RESERVE"),
    ({"FETCHD_MAX_DOWNLOAD_BYTES": "1TB"}, "FETCHD_MAX_DOWNLOAD_BYTES"),
    ({"FETCHD_LOG_FORMAT": "xml"}, "FETCHD_LOG_FORMAT"),
    ({"FETCHD_API_TOKENS_FILE": "/nonexistent/tokens"}, "FETCHD_API_TOKENS_FILE"),
    ({"FETCHD_MAX_BANDWIDTH": "fast"}, "FETCHD_MAX_BANDWIDTH"),
    ({"FETCHD_MAX_BANDWIDTH": "08:00-18:00=2MiB,12:00-20:00=off"}, "FETCHD_MAX_BANDWIDTH"),
    ({"FETCHD_DATABASE_URL": "mysql://fetchd@db/fetchd"}, "FETCHD_DATABASE_URL"),
    ({"FETCHD_DATABASE_URL": "postgresql://nobody@/nodb?host=/nonexistent-fetchd-socket-dir"}, "FETCHD_DATABASE_URL"),
    ({"FETCHD_NODE_NAME": "no spaces please"}, "FETCHD_NODE_NAME"),
]


def start_up_error(fd) -> str:
    """Runs fd's binary, which must stop at start with exit code 2 and one line: returns it."""
    run = subprocess.run([str(fd.binary)], env=fd.env(), capture_output=True, timeout=20)
    assert run.returncode == 2
    lines = run.stderr.decode().strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize("env,named", BAD_CONFIGURATIONS, ids=[next(iter(e)) + "=" + next(iter(e.values())) for e, _ in BAD_CONFIGURATIONS])
def test_a_bad_configuration_stops_start_up_with_one_line_and_exit_code_2(fetchd, env, named):
    fd = fetchd(env=env, start=False)
    assert named in start_up_error(fd)


@pytest.mark.parametrize("setting,flag", [("FETCHD_DATA_DIR", "--data-dir"), ("FETCHD_DOWNLOAD_ROOT", "--download-root")])
@pytest.mark.parametrize("where", ["under /proc", "under a file"])
def test_a_directory_that_cannot_be_made_stops_start_up_naming_the_setting_and_the_os_reason(fetchd, tmp_path, setting, flag, where):
    if where == "under a file":
        (tmp_path / "a-file").write_bytes(b"not a directory")
        path = tmp_path / "a-file" / "fetchd"
    else:
        path = Path("/proc/fetchd-cannot-be-here/fetchd")
    try:  # the operating system's reason, whichever it is for this path and this user
        os.makedirs(path)
        pytest.fail(f"{path} could be created")
    except OSError as e:
        reason = e.strerror
    fd = fetchd(env={setting: str(path)}, start=False)
    line = start_up_error(fd)
    for part in (setting, flag, str(path), reason):
        assert part in line, f"{part!r} missing from {line!r}"


def test_a_data_dir_holding_something_that_is_not_a_database_stops_start_up_naming_the_setting(fetchd):
    fd = fetchd(start=False)
    fd.data_dir.mkdir(parents=True)
    (fd.data_dir / "fetchd.sqlite").write_bytes(b"these are not the pages you are looking for" * 200)
    line = start_up_error(fd)
    assert "FETCHD_DATA_DIR" in line and "not a database" in line, line


def test_an_unknown_flag_is_a_usage_error(fetchd_bin):
    run = subprocess.run([str(fetchd_bin), "--max-transfer", "4"], capture_output=True, timeout=20)
    assert run.returncode == 2
    assert b"--max-transfer" in run.stderr


def test_json_logs_parse_line_by_line(fetchd, origin):
    fd = fetchd(env={"FETCHD_LOG_FORMAT": "json"})
    origin.add("/logged", b"logged")
    job = fd.api.submit({"url": origin.url("/logged"), "destination": "logged.bin"})
    fd.api.wait_state(job["id"], "completed")
    fd.stop()

    records = [json.loads(line) for line in fd.log_text(max_lines=10_000).splitlines() if line.startswith("{")]
    assert records and all({"time", "level", "message"} <= record.keys() for record in records)
    assert any(r["message"] == "download completed" and r.get("download.id") == job["id"] for r in records)


def test_with_retention_0_finished_jobs_are_pruned(fetchd, origin):
    fd = fetchd(env={"FETCHD_RETENTION": "0"})
    origin.add("/brief", b"brief")
    job = fd.api.submit({"url": origin.url("/brief"), "destination": "brief.bin"})
    fd.api.wait_state(job["id"], "completed")

    wait_for(lambda: fd.api.get(f"/downloads/{job['id']}").status == 404, timeout=10, message="the job to be pruned")
    assert fd.dest("brief.bin").read_bytes() == b"brief"  # the file is the user's; only the record goes


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool (Debian package prometheus) is not installed")
def test_a_scrape_mid_workload_passes_promtool_and_matches_the_api(fetchd, origin, receiver):
    fd = fetchd(env={"FETCHD_WEBHOOK_URL": receiver.url, "FETCHD_MAX_TRANSFERS": "2"})
    for i in range(6):
        origin.add(f"/m{i}", os.urandom(200_000), rate=400_000)
        fd.api.submit({"url": origin.url(f"/m{i}"), "destination": f"m/{i}"})
    fd.api.submit({"url": origin.url("/absent"), "destination": "m/absent"})
    fd.api.submit({"url": origin.url("/m0"), "destination": "m/later", "earliestBeginDate": "2099-01-01T00:00:00Z"})
    wait_for(lambda: fd.api.get("/sessions/default").json()["counts"]["running"] == 2)

    text = scrape(fd)
    check = subprocess.run(["promtool", "check", "metrics"], input=text.encode(), capture_output=True, timeout=30)
    assert check.returncode == 0, check.stdout.decode() + check.stderr.decode()

    # Between two identical reads of the API's counts, the scrape must agree with them.
    def consistent():
        before = fd.api.get("/sessions/default").json()["counts"]
        text = scrape(fd)
        after = fd.api.get("/sessions/default").json()["counts"]
        return (before, text) if before == after else None
    counts, text = wait_for(consistent)
    for state, count in counts.items():
        assert sample(text, "fetchd_downloads", f'state="{state}"') == count
    assert sample(text, "fetchd_queue_depth", 'waiting_for="earliestBeginDate"') == 1
    assert sample(text, "fetchd_http_requests_total", 'route="/downloads",method="POST",status="201"') == 8


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_staging_directory_on_another_file_system_is_refused_at_start(fetchd):
    fd = fetchd(start=False)
    fd.data_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(fd.data_dir)], check=True)
    try:
        run = subprocess.run([str(fd.binary)], env=fd.env(), capture_output=True, timeout=20)
        assert run.returncode == 2
        lines = run.stderr.decode().strip().splitlines()
        assert len(lines) == 1 and "FETCHD_STAGING_DIR" in lines[0], lines
        fd.extra_env["FETCHD_STAGING_DIR"] = str(fd.root / ".fetchd-partial")
        fd.start()  # staged on the root's file system, the same layout starts
        fd.stop()
    finally:
        subprocess.run(["umount", str(fd.data_dir)], check=False)


@pytest.mark.skipif(os.geteuid() != 0, reason="bind mounts need root")
def test_two_mounts_of_one_file_system_are_refused_too(fetchd, tmp_path):
    """Like two container volumes on one disk: same device, but a hard link between them fails."""
    fd = fetchd(start=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    fd.root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "--bind", str(elsewhere), str(fd.root)], check=True)
    try:
        run = subprocess.run([str(fd.binary)], env=fd.env(), capture_output=True, timeout=20)
        assert run.returncode == 2
        assert "FETCHD_STAGING_DIR" in run.stderr.decode()
    finally:
        subprocess.run(["umount", str(fd.root)], check=False)


def test_the_configuration_page_lists_every_setting_as_help_does(fetchd_bin):
    """docs/configuration.md and `fetchd --help` come from the one settings table; this keeps the
    page true as settings are added (`make docs` regenerates it; test_docs.py compares it whole)."""
    help_text = subprocess.run([str(fetchd_bin), "--help"], capture_output=True, text=True, timeout=20).stdout
    flags = set(re.findall(r"^\s+(--[a-z-]+) ", help_text, re.M))
    page = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text()
    rows = set(re.findall(r"^\| `FETCHD_[A-Z_]+` \| `(--[a-z-]+)` \|", page, re.M))
    assert flags and flags == rows, f"missing from docs/configuration.md: {sorted(flags - rows)}; not settings: {sorted(rows - flags)}"
