"""`localstack.cluster.apiserver.LocalCluster`, the API server of the tests and the dev stack: the upstream
CRDs it installs, the fallback CRDs (installed without the upstream ones; structural, pruning) and a
failed start that stops what it started."""

from __future__ import annotations

import io
import os
import time
from pathlib import Path
from typing import Any

import pytest

from functions.runtime.errors import CrefnError
from functions.runtime.gateway import Gateway
from functions.runtime.resources import CRDS, Resource
from localstack.cluster.apiserver import ClusterError, LocalCluster
from localstack.cluster.crds import fallback_crds


def job_body(name: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "metadata": {"name": name, **extra},
            "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "torch"}}}}}


@pytest.mark.upstream  # where they are: without them the session's API server has the fallback ones
def test_crds_come_from_upstream(cluster: LocalCluster, gateway: Gateway) -> None:
    assert cluster.crd_source.startswith("upstream CRDs")
    assert gateway.get(CRDS, None, "jobs.cre.nvidia.com") is not None  # the legacy group, for its tests
    crd = gateway.get(CRDS, None, "jobs.nvcre.nvidia.com")
    assert crd is not None
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert "failureLog" in schema["properties"]["status"]["properties"]


@pytest.mark.parametrize("upstream", ["missing", "empty"])
def test_without_upstream_crds_the_fallback_ones_are_installed_and_said(tmp_path: Path, upstream: str) -> None:
    if upstream == "empty":
        (tmp_path / upstream).mkdir()
    log = io.StringIO()
    crds = LocalCluster(tmp_path / "cluster", tmp_path / upstream, log=log,
                        cre_groups=("nvcre.nvidia.com", "cre.nvidia.com")).load_crds()
    names = {c["metadata"]["name"] for c in crds}
    assert {c["metadata"]["name"] for c in fallback_crds()} < names
    assert {"jobs.cre.nvidia.com", "goodputmeasurements.cre.nvidia.com"} < names  # the legacy group's copies
    assert log.getvalue() == (f"[local-cluster] warning: no CRD found in {tmp_path / upstream}; installing the "
                              "project's fallback CRDs\n")


def test_fallback_crds_are_structural_and_prune(gateway: Gateway, namespace: str) -> None:
    group = "fallback.crefn.dev"
    for crd in fallback_crds(group):
        if crd["spec"]["group"] == group:
            gateway.create(CRDS, None, crd)
    jobs = Resource(group, "v1alpha1", "jobs", "Job")
    deadline = time.monotonic() + 20
    while True:
        try:
            gateway.create(jobs, namespace, {**job_body("f"), "apiVersion": f"{group}/v1alpha1"})
            break
        except CrefnError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    written = gateway.patch(jobs, namespace, "f", {"status": {
        "phase": "x", "restartCount": 1, "conditions": [{"type": "InProgress", "status": "True", "reason": "R",
                                                         "message": "", "observedGeneration": 1,
                                                         "lastTransitionTime": "2026-11-02T09:00:00Z"}]}},
        status=True)
    assert "phase" not in written["status"] and written["status"]["restartCount"] == 1


@pytest.mark.kube  # it starts an API server of its own (and needs the binary)
def test_a_failed_start_stops_what_it_started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """etcd that exits at once: the start fails with the logs' tails, and kube-apiserver is stopped by PID."""
    monkeypatch.setenv("ETCD", "/bin/false")
    cluster = LocalCluster(tmp_path, log=io.StringIO())
    with pytest.raises(ClusterError, match="etcd exited"):
        cluster.start()
    for pid in cluster.started_pids.values():
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert set(cluster.started_pids) == {"etcd", "kube-apiserver"}


def test_the_audit_log_has_every_trainjob_create_and_delete(cluster: LocalCluster, gateway: Gateway,
                                                             namespace: str) -> None:
    from functions.runtime.resources import TRAINJOBS

    body = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "audited"},
            "spec": {"runtimeRef": {"name": "t"}}}
    created = gateway.create(TRAINJOBS, namespace, body)
    with pytest.raises(CrefnError):
        gateway.create(TRAINJOBS, namespace, body)  # 409: audited too, with its code
    gateway.delete(TRAINJOBS, namespace, "audited", uid=created["metadata"]["uid"])
    deadline = time.monotonic() + 10
    mine: list[tuple[str, int]] = []
    while time.monotonic() < deadline and len(mine) < 3:
        mine = [(e["verb"], e["responseStatus"]["code"]) for verb in ("create", "delete")
                for e in cluster.audited(verb, "trainjobs") if e["objectRef"].get("namespace") == namespace]
        time.sleep(0.1)
    assert sorted(mine) == [("create", 201), ("create", 409), ("delete", 200)]


def test_the_audit_log_has_every_request_of_an_audited_user(tmp_path: Path) -> None:
    from functions.runtime.resources import NAMESPACES

    with LocalCluster(tmp_path, users=("reader",), audit_users=("reader",), log=io.StringIO()) as cluster:
        reader = cluster.gateway("reader")
        with pytest.raises(CrefnError):
            reader.get(NAMESPACES, None, "default")  # refused (no RBAC): audited with its code
        admin = cluster.gateway()
        admin.list_all(NAMESPACES)  # the admin is not audited
        admin.close()
        reader.close()
        deadline = time.monotonic() + 10
        entries: list[dict[str, Any]] = []
        while time.monotonic() < deadline and not entries:
            entries = [e for e in cluster.audit_entries() if e["objectRef"].get("resource") == "namespaces"]
            time.sleep(0.1)
        assert [(e["user"]["username"], e["verb"], e["responseStatus"]["code"]) for e in entries] == [
            ("reader", "get", 403)]
        assert cluster.audit_entries(cluster.audit_lines()) == []
