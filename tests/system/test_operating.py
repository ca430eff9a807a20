"""docs/operating.md's steps that need no cluster, run as the page writes them: the kustomization of your own that
chooses the tenant namespaces (rendered beside a checkout, its files taken from the page's code blocks), and no step
of the page or the README asks to edit, copy into or write a file of the checkout. The prune of "Changing an install"
is run by tests/system/test_installs.py, the bundle of "Install" by tests/system/test_release.py. The
kustomization of "Changing an install" that keeps a function warm is rendered here too."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from localstack.manifests import build, render
from tests.support.docs import outside_code, section
from tests.support.paths import REPO

SOURCES = {"crefn-trainjobs", "crefn-jobs", "crefn-workloadruns", "crefn-pods", "crefn-goodput"}


def recipe_files() -> dict[str, str]:
    """The YAML code blocks of "What each component grants" whose first line names their file: path → text."""
    text = section("operating.md", "### What each component grants")
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.DOTALL)
    return {match[1]: block for block in blocks if (match := re.match(r"# (my-install/\S+)", block))}


@pytest.mark.process  # kubectl kustomize renders it
def test_the_tenant_namespaces_of_your_own_replace_the_examples(tmp_path: Path) -> None:
    files = recipe_files()
    assert sorted(files) == ["my-install/kustomization.yaml", "my-install/tenants/kustomization.yaml",
                             "my-install/tenants/ml-team/kustomization.yaml"]
    (tmp_path / "cre-functions").symlink_to(REPO)  # the checkout beside it, as the page has it
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    ml_team = files["my-install/tenants/ml-team/kustomization.yaml"]
    (tmp_path / "my-install/tenants/ml-infra").mkdir()  # "the same for ml-infra, with its name for ml-team"
    (tmp_path / "my-install/tenants/ml-infra/kustomization.yaml").write_text(ml_team.replace("ml-team", "ml-infra"))

    docs = build(tmp_path / "my-install")
    closed = render("installs/closed")
    bindings = [d for d in docs if d["kind"] == "RoleBinding"]
    per_tenant = len([d for d in closed if d["kind"] == "RoleBinding"]) // 2  # the examples' team-a and team-b
    assert per_tenant == 14
    assert sorted({b["metadata"]["namespace"] for b in bindings}) == ["ml-infra", "ml-team"]
    assert len(bindings) == 2 * per_tenant
    assert all(b["metadata"]["labels"] == {"app.kubernetes.io/part-of": "cre-functions"} and
               "annotations" not in b["metadata"] for b in bindings)
    selectors = {d["metadata"]["name"]: d["spec"].get("namespaceSelector") for d in docs
                 if d["kind"] == "ApiServerSource"}
    assert {name: s for name, s in selectors.items() if name in SOURCES} == {name: {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["ml-team", "ml-infra"]}]}
        for name in SOURCES}
    assert "team-a" not in yaml.safe_dump_all(docs) and "team-b" not in yaml.safe_dump_all(docs)
    assert others(docs) == others(closed)  # the rest of the closed install, unchanged


def others(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] not in ("RoleBinding", "ApiServerSource")]


WRITES_INTO_THE_CHECKOUT = re.compile(
    r"sed -i\b|\b(?:cp|mv|ln|tee|touch|rm)\b[^|;&]*\b(?:knative|scripts|functions|events)/|>\s*(?:knative|scripts)/|"
    r"\b(?:edit|change|list)\b[^.]*\bin `?knative/", re.IGNORECASE)


@pytest.mark.parametrize("page", [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))],
                         ids=lambda p: p.name)
def test_no_step_edits_a_file_of_the_checkout(page: Path) -> None:
    lines = outside_code(page.read_text())
    steps = [line for line, prose in lines if not prose]  # the shell and YAML blocks
    assert [line for line in steps if WRITES_INTO_THE_CHECKOUT.search(line)] == []
    prose = " ".join(line for line, is_prose in lines if is_prose)
    assert [m[0] for m in re.finditer(r"[^.]*\bedit(?:ing)? `?knative/[^.]*", prose)] == []


@pytest.mark.process  # kubectl kustomize renders it
def test_the_kustomization_that_keeps_phase_warm_changes_its_scale_alone(tmp_path: Path) -> None:
    text = section("operating.md", "### Changing an install")
    (block,) = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.DOTALL) if b.startswith("# my-install/")]
    (tmp_path / "cre-functions").symlink_to(REPO)
    (tmp_path / "my-install").mkdir()
    (tmp_path / "my-install/kustomization.yaml").write_text(block)

    docs = build(tmp_path / "my-install")
    scales = {d["metadata"]["name"]: d["spec"]["template"]["metadata"]["annotations"]
              ["autoscaling.knative.dev/min-scale"] for d in docs if d["kind"] == "Service" and
              d["apiVersion"] == "serving.knative.dev/v1"}
    assert scales.pop("crefn-phase") == "1"
    assert scales.pop("crefn-metrics") == "1"  # one pod, always up, in every install
    assert set(scales.values()) == {"0"} and len(scales) == 12
    phase = {"apiVersion": "serving.knative.dev/v1", "kind": "Service", "name": "crefn-phase"}
    assert [d for d in docs if identity(d) != phase] == [d for d in render("installs/default") if identity(d) != phase]


def identity(doc: dict[str, Any]) -> dict[str, str]:
    return {"apiVersion": doc["apiVersion"], "kind": doc["kind"], "name": doc["metadata"]["name"]}
