"""The prune of docs/operating.md ("Changing an install"), run as the page gives it: `closed` applied over `default`
keeps base's cluster-wide writes without it, and loses them with it. Every install applied for real and asked what
it grants is tests/system/test_release.py's, on the release bundle's files (the machinery: tests.support.grants)."""

from __future__ import annotations

import shlex
import uuid
from pathlib import Path

import pytest

from functions.gateway import Gateway
from localstack.cluster.apiserver import LocalCluster
from localstack.manifests import render
from tests.support.docs import section
from tests.support.grants import WRITE_VERBS, apply, granted, isolated, ours

pytestmark = pytest.mark.upstream  # applied with Knative's own CRDs loaded: without them, nothing to apply to


def documented_prune() -> list[str]:
    """The `kubectl apply --prune` command of docs/operating.md, "Changing an install", as arguments."""
    block = section("operating.md", "### Changing an install").split("```sh", 1)[1].split("```", 1)[0]
    return shlex.split(block.replace("\\\n", " "))


def test_applying_an_install_with_the_documented_prune_leaves_nothing_of_the_previous_grants(
        cluster: LocalCluster, gateway: Gateway, namespace: str, tmp_path: Path) -> None:
    argv = documented_prune()
    assert argv[:4] == ["kubectl", "apply", "-k", "knative/installs/closed"]
    flags = argv[4:]
    selector = flags.index("-l") + 1
    assert "--prune" in flags and flags[selector] == "app.kubernetes.io/part-of=cre-functions"
    tag = uuid.uuid4().hex[:6]
    flags[selector] += f"-{tag}"
    system = f"crefn-system-{tag}"

    default = isolated(render("installs/default"), tag)

    def writes_elsewhere() -> set[tuple[str, str]]:
        return {(account, r[1]) for account in ("crefn-phase", "crefn-launch", "crefn-restart")
                for r in ours(granted(cluster, system, account, namespace), default) if r[2] in WRITE_VERBS}

    apply(cluster, default, tmp_path / "default.yaml")
    assert ("crefn-launch", "trainjobs") in writes_elsewhere()
    closed = isolated(render("installs/closed"), tag)
    apply(cluster, closed, tmp_path / "closed.yaml")  # without the prune: base's bindings stay
    assert ("crefn-launch", "trainjobs") in writes_elsewhere()
    apply(cluster, closed, tmp_path / "closed.yaml", *flags)
    assert writes_elsewhere() == set()
    label = f"app.kubernetes.io/part-of=cre-functions-{tag}"
    held = gateway.request("GET", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
                           query=[("labelSelector", label)])["items"]
    assert sorted(b["metadata"]["name"] for b in held) == sorted(
        d["metadata"]["name"] for d in closed if d["kind"] == "ClusterRoleBinding")
