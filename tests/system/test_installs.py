"""The prune of docs/operating.md ("Changing an install"), run as the page gives it: `closed` applied over `default`
keeps base's cluster-wide writes without it, and loses them with it; a settings change applied with it keeps the
previous settings ConfigMap, which a revision rolled back to names. Every install applied for real and asked what
it grants is tests/system/test_release.py's, on the release bundle's files (the machinery: tests.support.grants)."""

from __future__ import annotations

import shlex
import uuid
from pathlib import Path

import pytest

from functions.runtime.gateway import Gateway
from functions.runtime.resources import CONFIGMAPS, KSERVICES
from localstack.cluster.apiserver import LocalCluster
from localstack.manifests import render, with_settings
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



def test_a_settings_change_applied_with_the_documented_prune_keeps_the_settings_a_rollback_needs(
        cluster: LocalCluster, gateway: Gateway, tmp_path: Path) -> None:
    flags = documented_prune()[4:]
    tag = uuid.uuid4().hex[:6]
    label = f"app.kubernetes.io/part-of=cre-functions-{tag}"
    flags[flags.index("-l") + 1] = label
    system = f"crefn-system-{tag}"

    def held() -> tuple[set[str], set[str]]:
        """The settings ConfigMaps held, and the ones the Services name."""
        maps = {c["metadata"]["name"] for c in gateway.list_all(CONFIGMAPS, system, label_selector=label)}
        named = {s["spec"]["template"]["spec"]["containers"][0]["envFrom"][0]["configMapRef"]["name"]
                 for s in gateway.list_all(KSERVICES, system)}
        return maps, named

    default = isolated(render("installs/default"), tag)
    apply(cluster, default, tmp_path / "default.yaml", *flags)
    (first,) = [d["metadata"]["name"] for d in default if d["kind"] == "ConfigMap"]
    assert held() == ({first}, {first})
    observe = isolated(with_settings("installs/default", {"CREFN_MODE": "observe"}), tag)
    apply(cluster, observe, tmp_path / "observe.yaml", *flags)
    (second,) = [d["metadata"]["name"] for d in observe if d["kind"] == "ConfigMap"]
    assert second != first and second.startswith("crefn-settings-")
    assert held() == ({first, second}, {second})  # the new revisions read the new one; the old one stays
    assert (gateway.get(CONFIGMAPS, system, first) or {})["data"]["CREFN_MODE"] == "manage"
    assert (gateway.get(CONFIGMAPS, system, second) or {})["data"]["CREFN_MODE"] == "observe"
    assert "ConfigMap" not in " ".join(flags)
