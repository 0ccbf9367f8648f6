"""The Kubernetes manifests in deploy/kubernetes: valid against the Kubernetes schemas
(kubernetes-validate, strict: an unknown field fails), and saying what fetchd understands."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from e2e_support import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "scripts" / "package"))
import settings_files  # noqa: E402

MANIFESTS = sorted((REPO_ROOT / "deploy" / "kubernetes").rglob("*.yaml"))
# The oldest Kubernetes the manifests are for (preStop sleep is on by default from 1.30), and the newest.
VERSIONS = ["1.30.0", None]


def validate(path: Path, version: str | None) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "kubernetes_validate", "--strict", "--quiet"] + (["-k", version] if version else [])
    return subprocess.run(command + [str(path)], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_the_manifest_validates(path, version):
    result = validate(path, version)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_misspelt_field_fails_validation(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text((REPO_ROOT / "deploy/kubernetes/sqlite/fetchd.yaml").read_text().replace("replicas: 1", "replica: 1"))
    assert validate(broken, None).returncode != 0


def containers():
    for path in MANIFESTS:
        for document in yaml.safe_load_all(path.read_text()):
            if document and document["kind"] in ("StatefulSet", "Deployment"):
                yield document, document["spec"]["template"]["spec"]["containers"][0]


def test_every_variable_is_a_setting_and_the_probes_and_grace_fit(fetchd_bin):
    rows = settings_files.settings(str(fetchd_bin))
    known = {row["env"] for row in rows}
    shutdown = next(row["default"] for row in rows if row["env"] == "FETCHD_SHUTDOWN_TIMEOUT")
    found = 0
    for workload, container in containers():
        found += 1
        assert {variable["name"] for variable in container["env"]} <= known
        assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
        assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
        pause = container["lifecycle"]["preStop"]["sleep"]["seconds"]
        grace = workload["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        assert grace > pause + int(shutdown.removesuffix("s"))
    assert found == 2
