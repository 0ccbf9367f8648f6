"""schemathesis generates requests from openapi.yaml — valid ones, and ones that break every
rule of the schema — against a real fetchd, and checks that none is answered with a 5xx.

The event streams are run apart with a short request timeout: a stream of a live job or of
all jobs does not end, so schemathesis can only check the status line before it gives up
waiting (a timeout is not a finding). A fixed seed keeps the run reproducible; a finding is
shown with the curl command that reproduces it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

OPENAPI = Path(__file__).resolve().parents[2] / "openapi.yaml"


def run_schemathesis(base_url: str, *selection: str, max_examples: int, request_timeout: float) -> None:
    # One worker: hypothesis names its filters with ast.parse, which CPython 3.11.7 does not
    # survive from two threads at once ("SystemError: AST constructor recursion depth mismatch").
    command = [sys.executable, "-m", "schemathesis.cli", "run", str(OPENAPI),
               "--url", base_url, "--checks", "not_a_server_error",
               "--max-examples", str(max_examples), "--seed", "20261123",
               "--request-timeout", str(request_timeout), "--workers", "1",
               "--no-color", *selection]
    result = subprocess.run(command, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, f"schemathesis found a server error:\n{result.stdout[-6000:]}\n{result.stderr[-2000:]}"


def test_no_request_the_schema_allows_or_forbids_gets_a_5xx(shared_fetchd):
    run_schemathesis(shared_fetchd.base_url, "--exclude-path-regex", "events$",
                     max_examples=15, request_timeout=10)


def test_event_streams_answer_every_request_without_a_5xx(shared_fetchd):
    run_schemathesis(shared_fetchd.base_url, "--include-path-regex", "events$",
                     max_examples=5, request_timeout=1)
