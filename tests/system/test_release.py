"""The release as a maintainer makes it (`make release`, scripts/release.sh), into a temporary directory: one install
YAML per folder of knative/installs/, each that install rendered with the release's image (its tag, or a digest
given), the dashboard, the CHANGELOG section, and a SHA256SUMS that `sha256sum -c` checks. Each bundle file is then
applied to the test API server with the Knative CRDs loaded and asked what it grants (tests.support.grants). A
VERSION other than pyproject.toml's, a version without a CHANGELOG section and an image without tag or digest are
refused with one line and exit code 2, and nothing is written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from functions.runtime.gateway import Gateway
from localstack.cluster.apiserver import LocalCluster
from localstack.manifests import compose, installs, kubectl, render
from localstack.processes import run
from tests.support.grants import assert_applies_and_grants_as_promised
from tests.support.helpers import released
from tests.support.paths import REPO

pytestmark = pytest.mark.process  # the release script runs, and kubectl under it

DIGEST = "registry.example.com:5000/crefn/cre-functions@sha256:" + "0123456789abcdef" * 4


def release(dist: Path, repo: Path = REPO, **env: str) -> subprocess.CompletedProcess[str]:
    """scripts/release.sh of `repo` writing into `dist`, with the venv's kubectl and `env` (VERSION, IMAGE)."""
    clean = {k: v for k, v in os.environ.items() if k not in ("VERSION", "IMAGE", "DIST", "KUBECTL")}
    return run(["bash", str(repo / "scripts" / "release.sh")], timeout=300, text=True,
               env={**clean, "DIST": str(dist), "KUBECTL": kubectl(), **env})


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    """The release with the defaults: pyproject.toml's version, the shipped image at that tag."""
    dist = tmp_path_factory.mktemp("dist")
    return release(dist), dist / f"cre-functions-{released()}"


@pytest.fixture(scope="module")
def bundle(made: tuple[subprocess.CompletedProcess[str], Path]) -> Path:
    result, path = made
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    return path


def objects(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def images(docs: list[dict[str, Any]]) -> set[str]:
    return {c["image"] for d in docs for c in (((d.get("spec") or {}).get("template") or {}).get("spec") or {}).get(
        "containers", [])}


def test_the_bundle_is_one_file_per_install_the_dashboard_the_changelog_section_and_their_sums(
        made: tuple[subprocess.CompletedProcess[str], Path], bundle: Path) -> None:
    names = sorted(installs())
    assert {"default", "closed", "observe-monitoring", "kafka-closed"} <= set(names)
    assert sorted(p.name for p in bundle.iterdir()) == sorted(
        [f"{n}.yaml" for n in names] + ["CHANGELOG.md", "SHA256SUMS", "cre-functions.json"])
    lines = made[0].stdout.splitlines()
    image = f"ghcr.io/crefn/cre-functions:{released()}"
    assert lines == [f"release: rendering {n}.yaml (knative/installs/{n}, image {image})" for n in names] + [
        f"release: wrote {bundle}: {len(names)} installs, the dashboard, CHANGELOG.md, SHA256SUMS"]
    assert [p.name for p in bundle.parent.iterdir()] == [bundle.name]  # no work directory left beside it
    notes = (bundle / "CHANGELOG.md").read_text()
    assert notes.startswith(f"## {released()}\n") and notes.count("\n## ") == 0
    assert notes.strip() in (REPO / "CHANGELOG.md").read_text()
    dashboard = REPO / "knative" / "components" / "monitoring" / "dashboards" / "cre-functions.json"
    assert (bundle / "cre-functions.json").read_bytes() == dashboard.read_bytes()
    assert json.loads(dashboard.read_text())["panels"]


def test_sha256sums_checks_every_file_and_catches_a_changed_one(bundle: Path, tmp_path: Path) -> None:
    checked = run(["sha256sum", "-c", "SHA256SUMS"], cwd=bundle, text=True, timeout=60)
    assert (checked.returncode, checked.stderr) == (0, "")
    assert sorted(checked.stdout.splitlines()) == sorted(
        f"{p.name}: OK" for p in bundle.iterdir() if p.name != "SHA256SUMS")
    copy = shutil.copytree(bundle, tmp_path / "copy")
    (copy / "default.yaml").write_text((copy / "default.yaml").read_text().replace("crefn-phase", "crefn-phaze", 1))
    tampered = run(["sha256sum", "--quiet", "-c", "SHA256SUMS"], cwd=copy, text=True, timeout=60)
    assert (tampered.returncode, tampered.stdout) == (1, "default.yaml: FAILED\n")


@pytest.mark.parametrize("install", sorted(installs()))
def test_each_file_is_its_install_rendered_with_the_release_image(bundle: Path, install: str) -> None:
    path = bundle / f"{install}.yaml"
    assert path.read_text().splitlines()[:2] == [
        f"# cre-functions {released()}, install {install} (knative/installs/{install}), "
        f"image ghcr.io/crefn/cre-functions:{released()}",
        f"# kubectl apply -f {install}.yaml; what it holds and how to change it: docs/operating.md"]
    docs = objects(path)
    assert docs == render(f"installs/{install}")
    assert images(docs) == {f"ghcr.io/crefn/cre-functions:{released()}"}


def test_an_image_given_by_digest_is_every_container_s(tmp_path: Path) -> None:
    result = release(tmp_path, IMAGE=DIGEST)
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    for install in ("default", "closed-observe", "kafka"):
        path = tmp_path / f"cre-functions-{released()}" / f"{install}.yaml"
        assert images(objects(path)) == {DIGEST}


@pytest.mark.upstream  # applied with Knative's own CRDs loaded
@pytest.mark.parametrize("install", sorted(installs()))
def test_each_file_applies_and_grants_what_its_components_promise(bundle: Path, install: str, cluster: LocalCluster,
                                                                 gateway: Gateway, namespace: str,
                                                                 tmp_path: Path) -> None:
    assert_applies_and_grants_as_promised(objects(bundle / f"{install}.yaml"), installs()[install], cluster,
                                          gateway, namespace, tmp_path / "install.yaml")


def without_the_section(repo: Path) -> Path:
    """A copy of the scripts and pyproject.toml, with a CHANGELOG whose sections are other versions'."""
    shutil.copytree(REPO / "scripts", repo / "scripts")
    shutil.copy(REPO / "pyproject.toml", repo / "pyproject.toml")
    (repo / "CHANGELOG.md").write_text(f"# Changelog\n\n## {released()}-rc1\n\nA candidate.\n\n## 0.1.0\n\nFirst.\n")
    return repo


@pytest.mark.parametrize(("case", "env", "line"), [
    ("another-version", {"VERSION": "9.9.9"},
     "release: VERSION 9.9.9 is not pyproject.toml's version {v}: bump pyproject.toml first"),
    ("no-section", {}, 'release: CHANGELOG.md has no section "## {v}": write what changed first'),
    ("no-tag", {"IMAGE": "registry.example.com/crefn/cre-functions"},
     "release: IMAGE registry.example.com/crefn/cre-functions has neither a tag nor a digest: a release names one"),
    ("bad-digest", {"IMAGE": "registry.example.com/crefn/cre-functions@sha256:0123"},
     "release: the digest of registry.example.com/crefn/cre-functions@sha256:0123 is not sha256: and 64 lower-case "
     "hex digits"),
], ids=["another-version", "no-section", "no-tag", "bad-digest"])
def test_refused_with_one_line_and_nothing_written(case: str, env: dict[str, str], line: str,
                                                   tmp_path: Path) -> None:
    repo = without_the_section(tmp_path / "repo") if case == "no-section" else REPO
    result = release(tmp_path / "dist", repo, **env)
    assert (result.returncode, result.stdout, result.stderr) == (2, "", line.format(v=released()) + "\n")
    assert not (tmp_path / "dist").exists()


def test_make_deploy_refuses_the_same_malformed_digest() -> None:
    """scripts/images.sh's check serves scripts/compose.sh (`make deploy`) too."""
    with pytest.raises(RuntimeError, match=r"compose\.sh observe failed: compose\.sh: the digest of "
                                           r"registry\.example\.com/crefn/fn@sha256:0123 is not sha256: and 64"):
        compose(["observe"], "registry.example.com/crefn/fn@sha256:0123")
