"""`functions.runtime.gateway` on a real API server: optimistic locking, schemas, pruning, subresources,
watches, finalizers, pagination, RBAC — as a cluster behaves, with the errors mapped to the error
kinds the server answers with."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from functions.runtime.errors import AlreadyExists, Conflict, Forbidden, NotFound, PermanentError
from functions.runtime.gateway import Gateway
from functions.runtime.resources import TRAINJOBS, cre_jobs
from localstack.cluster.apiserver import LocalCluster
from localstack.eventing.apisource import watch as watch_objects

JOBS = cre_jobs("nvcre.nvidia.com")


def job_body(name: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "metadata": {"name": name, **extra},
            "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "torch"}}}}}


def trainjob_body(name: str, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": name, **meta},
            "spec": {"runtimeRef": {"name": "torch-distributed"}}}


def test_stale_resource_version_is_409(gateway: Gateway, namespace: str) -> None:
    job = gateway.create(JOBS, namespace, job_body("a"))
    old = job["metadata"]["resourceVersion"]
    gateway.patch(JOBS, namespace, "a", {"metadata": {"labels": {"x": "1"}}}, resource_version=old)
    with pytest.raises(Conflict) as err:
        gateway.patch(JOBS, namespace, "a", {"metadata": {"labels": {"x": "2"}}}, resource_version=old)
    assert not isinstance(err.value, AlreadyExists) and "409 Conflict" in str(err.value)
    with pytest.raises(Conflict):
        gateway.patch(JOBS, namespace, "a", {"status": {"restartCount": 1}}, resource_version=old, status=True)


def test_create_twice_is_409_already_exists(gateway: Gateway, namespace: str) -> None:
    gateway.create(TRAINJOBS, namespace, trainjob_body("tj"))
    with pytest.raises(AlreadyExists):
        gateway.create(TRAINJOBS, namespace, trainjob_body("tj"))


def test_missing_objects(gateway: Gateway, namespace: str) -> None:
    assert gateway.get(TRAINJOBS, namespace, "nope") is None
    assert gateway.delete(TRAINJOBS, namespace, "nope") is False
    with pytest.raises(NotFound):
        gateway.patch(TRAINJOBS, namespace, "nope", {"metadata": {"labels": {"a": "b"}}})


def test_schema_violation_is_422_permanent(gateway: Gateway, namespace: str) -> None:
    body = job_body("bad")
    body["spec"]["checkpoint"] = {"maxRestarts": 2}  # pvcName is required
    with pytest.raises(PermanentError, match="422 Invalid"):
        gateway.create(JOBS, namespace, body)
    gateway.create(TRAINJOBS, namespace, trainjob_body("tj"))
    with pytest.raises(PermanentError, match="422"):
        gateway.patch(TRAINJOBS, namespace, "tj", {"status": {"conditions": [
            {"type": "Failed", "status": "Maybe", "reason": "X", "message": "",
             "lastTransitionTime": "2026-11-02T09:00:00Z"}]}}, status=True)


def test_server_applies_upstream_defaults(gateway: Gateway, namespace: str) -> None:
    tj = gateway.create(TRAINJOBS, namespace, trainjob_body("tj"))
    assert tj["spec"]["managedBy"] == "trainer.kubeflow.org/trainjob-controller"
    assert tj["spec"]["runtimeRef"] == {"name": "torch-distributed", "apiGroup": "trainer.kubeflow.org",
                                        "kind": "ClusterTrainingRuntime"}


def test_status_subresource_isolation(gateway: Gateway, namespace: str) -> None:
    gateway.create(JOBS, namespace, job_body("iso"))
    gateway.patch(JOBS, namespace, "iso", {"status": {"restartCount": 3}})  # main resource: status ignored
    assert (gateway.get(JOBS, namespace, "iso") or {}).get("status", {}).get("restartCount") is None
    gateway.patch(JOBS, namespace, "iso", {"spec": {"checkpoint": {"pvcName": "p"}}, "status": {"restartCount": 1}},
                  status=True)  # status subresource: spec ignored
    job = gateway.get(JOBS, namespace, "iso") or {}
    assert job["status"]["restartCount"] == 1 and "checkpoint" not in job["spec"]


def test_unknown_status_field_is_pruned(gateway: Gateway, namespace: str) -> None:
    gateway.create(JOBS, namespace, job_body("prune"))
    written = gateway.patch(JOBS, namespace, "prune", {"status": {"phase": "Running", "restartCount": 0,
                                                                  "workloadRef": {"apiVersion": "v", "kind": "K",
                                                                                  "name": "n", "extra": 1}}},
                            status=True)
    assert "phase" not in written["status"] and "extra" not in written["status"]["workloadRef"]
    assert written["status"]["restartCount"] == 0


def test_empty_strings_are_strings(gateway: Gateway, namespace: str) -> None:
    """Conditions with an empty message (CRE's NotApplicable siblings) are stored, as on a real cluster."""
    gateway.create(JOBS, namespace, job_body("empty"))
    written = gateway.patch(JOBS, namespace, "empty", {"status": {"conditions": [
        {"type": "Failed", "status": "False", "reason": "NotApplicable", "message": "", "observedGeneration": 1,
         "lastTransitionTime": "2026-11-02T09:00:00Z"}]}}, status=True)
    assert written["status"]["conditions"][0]["message"] == ""
    with pytest.raises(PermanentError, match="should be at least 1 chars long"):
        gateway.create(JOBS, namespace, {**job_body("empty2"), "spec": {
            "workload": {"trainJob": {"runtimeRef": {"name": "t"}}}, "checkpoint": {"pvcName": ""}}})


def test_watch_sees_added_modified_deleted(gateway: Gateway, namespace: str) -> None:
    seen: list[tuple[str, str]] = []
    rv = gateway.request("GET", TRAINJOBS.path(namespace))["metadata"]["resourceVersion"]

    def watch() -> None:
        for kind, obj in watch_objects(gateway, TRAINJOBS, namespace, rv, 10):
            seen.append((kind, obj["metadata"]["name"]))
            if kind == "DELETED":
                return

    thread = threading.Thread(target=watch)
    thread.start()
    gateway.create(TRAINJOBS, namespace, trainjob_body("w"))
    gateway.patch(TRAINJOBS, namespace, "w", {"spec": {"suspend": True}})
    gateway.delete(TRAINJOBS, namespace, "w")
    thread.join(timeout=15)
    assert seen == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]


def test_create_while_old_object_terminates_is_409(gateway: Gateway, namespace: str) -> None:
    old = gateway.create(TRAINJOBS, namespace, trainjob_body("tj", finalizers=["example.com/hold"]))
    assert gateway.delete(TRAINJOBS, namespace, "tj", uid=old["metadata"]["uid"])
    terminating = gateway.get(TRAINJOBS, namespace, "tj") or {}
    assert terminating["metadata"].get("deletionTimestamp")
    with pytest.raises(Conflict):
        gateway.create(TRAINJOBS, namespace, trainjob_body("tj"))
    gateway.patch(TRAINJOBS, namespace, "tj", {"metadata": {"finalizers": None}})
    deadline = time.monotonic() + 10
    while gateway.get(TRAINJOBS, namespace, "tj") is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert gateway.create(TRAINJOBS, namespace, trainjob_body("tj"))["metadata"]["uid"] != old["metadata"]["uid"]


def test_delete_with_wrong_uid_precondition_is_409(gateway: Gateway, namespace: str) -> None:
    gateway.create(TRAINJOBS, namespace, trainjob_body("tj"))
    with pytest.raises(Conflict):
        gateway.delete(TRAINJOBS, namespace, "tj", uid="00000000-0000-0000-0000-000000000000")
    assert gateway.get(TRAINJOBS, namespace, "tj") is not None


def test_list_is_paginated(gateway: Gateway, namespace: str) -> None:
    for i in range(7):
        gateway.create(JOBS, namespace, job_body(f"j{i}", labels={"crefn.dev/managed": "true" if i % 2 else "no"}))
    assert sorted(j["metadata"]["name"] for j in gateway.list_all(JOBS, namespace, page_size=2)) == [
        f"j{i}" for i in range(7)]
    managed = gateway.list_all(JOBS, namespace, label_selector="crefn.dev/managed=true", page_size=2)
    assert sorted(j["metadata"]["name"] for j in managed) == ["j1", "j3", "j5"]
    assert all(j["kind"] == "Job" and j["apiVersion"] == "nvcre.nvidia.com/v1alpha1" for j in managed)


def test_rbac_denies_unbound_users(cluster: LocalCluster, namespace: str) -> None:
    nobody = cluster.gateway("nobody")
    try:
        with pytest.raises(Forbidden, match="403 Forbidden"):
            nobody.get(TRAINJOBS, namespace, "anything")
    finally:
        nobody.close()
