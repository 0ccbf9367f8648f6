"""SSRF, live, for every blocked range besides loopback: RFC 1918, link-local and the
metadata address, CGNAT, 0/8, 198.18/15, 240/4, multicast, ULA, fe80::/10 (with a zone), the
IPv6 forms that embed IPv4, and ::. test_security.py covers loopback in every spelling.

Such addresses must never be reached from a test on this machine's real network, so
ssrf_namespace_probe.py runs in network and mount namespaces of its own, where lo is the only
interface and carries one address of each range; it runs once for the module and each test reads
its case from the report. Every test has a control: a fetchd that allows the range reaches the
same listener with the same request, so a refusal cannot pass for an unreachable address.

- 240.0.0.1: Linux lets lo have it and connects to it like any other address.
- 224.0.0.1: no TCP connection to a multicast address is possible (ENETUNREACH), so the control
  expects a network error there, and the refusal must be blocked_address instead.
- 0.0.0.0 and ::: Linux connects them to a local listener (127.0.0.1, ::1).

Needs root for the namespaces (skipped otherwise) and `ip` (iproute2)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ssrf_namespace_probe import CASES, Case

PROBE = Path(__file__).with_name("ssrf_namespace_probe.py")
UNSHARE = ["unshare", "--net", "--mount"]


@pytest.fixture(scope="module")
def report(fetchd_bin, tmp_path_factory):
    try:
        trial = subprocess.run(UNSHARE + ["true"], capture_output=True, text=True)
        refusal = trial.stderr.strip() if trial.returncode else None
    except FileNotFoundError:
        refusal = "unshare (util-linux) not found"
    if refusal:
        pytest.skip(f"cannot make namespaces for the probe (needs root with CAP_SYS_ADMIN): {refusal}")
    if shutil.which("ip") is None:
        pytest.fail("`ip` not found: install iproute2", pytrace=False)
    workdir = tmp_path_factory.mktemp("ssrf")
    run = subprocess.run(UNSHARE + [sys.executable, str(PROBE), str(workdir)], capture_output=True, text=True,
                         env={**os.environ, "FETCHD_BIN": str(fetchd_bin)}, timeout=300)
    assert run.returncode == 0, f"the probe failed:\n{run.stderr}"
    return json.loads(run.stdout)


def observed(report: dict, case: Case, kind: str) -> tuple[dict, dict]:
    """What the blocked and the control fetchd did with the case's download or webhook."""
    phases = report["cases"][case.name]
    for phase in phases.values():
        assert "probe_error" not in phase, f"{phase['probe_error']}; fetchd logs: {report['logs']}"
    return tuple({**phases[name][kind], "accepted": phases[name]["accepted"][kind]} for name in ("blocked", "control"))


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_a_download_from_a_blocked_range_fails_without_connecting(report, case):
    blocked, control = observed(report, case, "download")

    assert blocked["state"] == "failed", blocked
    assert blocked["error"] == {"code": "blocked_address", "message": f"connecting to {case.address} is not allowed"}
    assert blocked["attempts"] == 1 and not blocked["file"], blocked
    assert blocked["refused"] == [case.address], blocked
    assert blocked["accepted"] == 0, blocked

    if case.reachable:
        assert control["state"] == "completed" and control["file"], control
        assert control["accepted"] >= 1, control
    else:  # the kernel's refusal, which the blocked fetchd must not have met
        assert control["state"] == "failed" and control["error"]["code"] == "network", control
        assert control["accepted"] == 0, control


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_a_webhook_to_a_blocked_range_is_never_delivered(report, case):
    blocked, control = observed(report, case, "webhook")

    assert blocked["literal_status"] == 400, "a literal blocked address is refused at submit"
    assert blocked["accepted"] == 0, blocked
    if case.webhook_host != case.host:  # delivery to a name that resolves into the range
        # download.completed and session.finished: each refused once, for good (not retried)
        assert blocked["refused"] == [case.address] * 2, blocked
        assert (blocked["failed"], blocked["retry"], blocked["delivered"]) == (2, 0, 0), blocked

    if case.reachable:
        assert (control["delivered"], control["verified"]) == (2, 1), control
        assert control["accepted"] >= 1, control
    else:  # a network error is retried, unlike a refusal
        assert control["delivered"] == 0 and control["retry"] > 0, control
        assert control["accepted"] == 0, control
