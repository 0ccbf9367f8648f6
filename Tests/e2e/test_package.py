"""The Debian package's files that need no package built: the units pass `systemd-analyze
verify` without a warning and rate 2.5 or lower in `systemd-analyze security`; the environment
file and the man page list every setting of the binary's table; the directories the unit may
write are the ones tmpfiles.d makes and fetchd.env names. (`make package-check` builds the .deb,
runs lintian and installs it into a Debian root.)"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from e2e_support import REPO_ROOT

DEB = REPO_ROOT / "deploy" / "debian"
sys.path.insert(0, str(REPO_ROOT / "scripts" / "package"))
import settings_files  # noqa: E402

needs_systemd_analyze = pytest.mark.skipif(shutil.which("systemd-analyze") is None,
                                           reason="systemd-analyze (Debian package systemd) is not installed")


def unit_values(name: str, key: str) -> list[str]:
    return [line.split("=", 1)[1] for line in (DEB / name).read_text().splitlines() if line.startswith(key + "=")]


@pytest.fixture(scope="module")
def rows(fetchd_bin):
    return settings_files.settings(str(fetchd_bin))


@needs_systemd_analyze
def test_the_units_verify_without_a_warning(fetchd_bin, tmp_path):
    # A root with the host's units (the targets the service is ordered after), ours and the binary.
    units = tmp_path / "lib" / "systemd" / "system"
    shutil.copytree("/lib/systemd/system", units, symlinks=True)
    for name in ("fetchd.service", "fetchd.socket"):
        shutil.copy(DEB / name, units / name)
    (tmp_path / "usr" / "bin").mkdir(parents=True)
    shutil.copy(fetchd_bin, tmp_path / "usr" / "bin" / "fetchd")
    result = subprocess.run(["systemd-analyze", "verify", "--man=no", f"--root={tmp_path}", "fetchd.service", "fetchd.socket"],
                            capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


@needs_systemd_analyze
def test_the_service_rates_at_most_2_5_in_systemd_analyze_security():
    result = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--no-pager", str(DEB / "fetchd.service")],
                            capture_output=True, text=True, timeout=60)
    match = re.search(r"Overall exposure level for fetchd\.service: ([0-9.]+)", result.stdout)
    assert match, result.stdout + result.stderr
    assert float(match.group(1)) <= 2.5, result.stdout


def test_the_unit_writes_only_where_fetchd_env_and_tmpfiles_point(rows):
    writable = set(" ".join(unit_values("fetchd.service", "ReadWritePaths")).split())
    made = {line.split()[1] for line in (DEB / "tmpfiles.conf").read_text().splitlines() if line.startswith("d ")}
    directories = {settings_files.PACKAGE_VALUES[name] for name in ("FETCHD_DATA_DIR", "FETCHD_DOWNLOAD_ROOT")}
    assert writable == directories
    assert set(settings_files.PACKAGE_VALUES.values()) <= made
    assert all(any(path.startswith(top) for top in writable) for path in made)


def test_the_stop_timeout_is_above_fetchds(rows):
    shutdown = next(row["default"] for row in rows if row["env"] == "FETCHD_SHUTDOWN_TIMEOUT")
    assert shutdown.endswith("s") and unit_values("fetchd.service", "TimeoutStopSec")[0].endswith("s")
    assert int(unit_values("fetchd.service", "TimeoutStopSec")[0][:-1]) > int(shutdown[:-1])
    assert unit_values("fetchd.service", "Type") == ["notify"] and unit_values("fetchd.service", "WatchdogSec")


def test_the_environment_file_lists_every_setting_with_its_default(rows):
    text = settings_files.env_file(rows)
    for row in rows:
        if row["env"] in settings_files.PACKAGE_VALUES:
            assert f"\n{row['env']}={settings_files.PACKAGE_VALUES[row['env']]}\n" in text
        else:
            assert f"\n# {row['meaning']}\n#{row['env']}={row['default'] or ''}\n" in text
    assignments = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert len(assignments) == len(settings_files.PACKAGE_VALUES)


@pytest.mark.skipif(shutil.which("man") is None, reason="man (Debian package man-db) is not installed")
def test_the_man_page_renders_every_setting(rows, tmp_path):
    page = tmp_path / "fetchd.8"
    page.write_text(settings_files.man_page(rows, "1.0"))
    result = subprocess.run(["man", "--warnings", "-l", str(page)], capture_output=True, text=True, timeout=60,
                            env={"MANWIDTH": "200", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
    assert result.returncode == 0 and result.stderr == "", result.stderr
    for row in rows:
        assert row["flag"] in result.stdout and row["env"] in result.stdout
