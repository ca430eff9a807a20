"""`localstack.trainer.apply_action` with the cluster's stand-in kubelet: the attempt's pods the way
JobSet, the scheduler and the kubelet keep them (`localstack.cluster.pods.apply_pods`), read back through the
session's real API server; and which pods a TrainJob has (`attempt_pods`, pure)."""

from __future__ import annotations

from typing import Any

import pytest

from events.types import ATTEMPT_LABEL, CONTROLLER_MANAGER, MANAGED_LABEL
from functions.runtime.gateway import Gateway
from functions.runtime.resources import PODS, TRAINJOBS
from localstack.cluster.apiserver import LocalCluster
from localstack.cluster.pods import OOM_LINE, UNSCHEDULABLE, attempt_pods
from localstack.trainer import apply_action

JOB_LABEL = "nvcre.nvidia.com/job"
STEP = {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}


def labels(attempt: int) -> dict[str, str]:
    return {JOB_LABEL: "llm", MANAGED_LABEL: "true", ATTEMPT_LABEL: str(attempt)}


def patch(replicated_jobs: list[str], attempt: int, manager: str = CONTROLLER_MANAGER) -> dict[str, Any]:
    """A runtime patch of the shape `functions.launch.decide` writes."""
    return {"manager": manager, "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
        {"name": name, "template": {"spec": {"template": {"metadata": {"labels": labels(attempt)}}}}}
        for name in replicated_jobs]}}}}


def trainjob(attempt: int = 0, patches: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"runtimeRef": {"name": "torch-distributed"}}
    if patches is not None:
        spec["runtimePatches"] = patches
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "llm-workload", "namespace": "ml", "labels": {JOB_LABEL: "llm", **labels(attempt)}},
            "spec": spec}


# -- which pods (pure) -------------------------------------------------------------------------------

PODS_OF = [
    ("no runtime patch", trainjob(), []),
    ("only someone else's patch", trainjob(patches=[patch(["node"], 0, manager="someone")]), []),
    ("torch: one worker", trainjob(patches=[patch(["node"], 0)]),
     [("llm-workload-node-0-0-a0", "node", {**labels(0), **STEP}, "gpu-node-1", True)]),
    ("mpi: workers and the launcher", trainjob(3, [patch(["node", "launcher"], 3)]),
     [("llm-workload-node-0-0-a3", "node", {**labels(3), **STEP}, "gpu-node-1", True),
      ("llm-workload-launcher-0-0-a3", "launcher", labels(3), "gpu-node-2", False)]),
]


@pytest.mark.parametrize(("what", "tj", "expected"), PODS_OF, ids=[p[0] for p in PODS_OF])
def test_attempt_pods(what: str, tj: dict[str, Any], expected: list[tuple[Any, ...]]) -> None:
    assert [(p.name, p.container, p.labels, p.node, p.worker) for p in attempt_pods(tj)] == expected


# -- through the API server ------------------------------------------------------------------------

def create(gateway: Gateway, namespace: str, attempt: int, replicated_jobs: list[str]) -> dict[str, Any]:
    body = trainjob(attempt, [patch(replicated_jobs, attempt)])
    body["metadata"]["namespace"] = namespace
    return gateway.create(TRAINJOBS, namespace, body)


def pods_of(gateway: Gateway, namespace: str, attempt: int | None = None) -> dict[str, dict[str, Any]]:
    selector = f"{ATTEMPT_LABEL}={attempt}" if attempt is not None else ""
    return {p["metadata"]["name"]: p for p in gateway.list_all(PODS, namespace, label_selector=selector)}


def scheduled(pod: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")


def state(pod: dict[str, Any]) -> dict[str, Any]:
    (status,) = pod["status"]["containerStatuses"]
    return dict(status["state"])


def test_block_run_fail(cluster: LocalCluster, gateway: Gateway, namespace: str) -> None:
    tj = create(gateway, namespace, 0, ["node"])
    name = "llm-workload-node-0-0-a0"

    apply_action(gateway, tj, "block", cluster.kubelet)
    pod = pods_of(gateway, namespace)[name]
    assert not pod["spec"].get("nodeName") and pod["status"]["phase"] == "Pending"
    assert {k: scheduled(pod).get(k) for k in ("status", "reason", "message")} == {
        "status": "False", "reason": "Unschedulable", "message": UNSCHEDULABLE}
    assert pod["metadata"]["labels"] == {**labels(0), **STEP}
    status = gateway.get(TRAINJOBS, namespace, "llm-workload")["status"]  # type: ignore[index]
    assert not status.get("conditions") and status["jobsStatus"][0]["active"] == 2

    apply_action(gateway, tj, "run", cluster.kubelet)
    pod = pods_of(gateway, namespace)[name]
    assert pod["spec"]["nodeName"] == "gpu-node-1" and pod["status"]["phase"] == "Running"
    assert scheduled(pod)["status"] == "True" and "running" in state(pod)

    apply_action(gateway, tj, "fail", cluster.kubelet)
    pod = pods_of(gateway, namespace)[name]
    assert pod["status"]["phase"] == "Failed"
    ended = state(pod)["terminated"]
    assert (ended["exitCode"], ended["reason"]) == (137, "OOMKilled")
    log = gateway.read_log(namespace, name, "node", tail_lines=800, keep_bytes=32 * 1024, timeout_seconds=5)
    assert log.splitlines()[-1] == OOM_LINE
    assert OOM_LINE.startswith("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate ")
    status = gateway.get(TRAINJOBS, namespace, "llm-workload")["status"]  # type: ignore[index]
    assert [c["reason"] for c in status["conditions"]] == ["JobsFailed"]


def test_fail_ends_the_first_worker_and_the_rest_keep_running(cluster: LocalCluster, gateway: Gateway,
                                                              namespace: str) -> None:
    apply_action(gateway, create(gateway, namespace, 0, ["node", "launcher"]), "fail", cluster.kubelet)
    pods = pods_of(gateway, namespace)
    worker, launcher = pods["llm-workload-node-0-0-a0"], pods["llm-workload-launcher-0-0-a0"]
    assert (worker["status"]["phase"], launcher["status"]["phase"]) == ("Failed", "Running")
    assert [c["name"] for c in launcher["spec"]["containers"]] == ["launcher"]
    assert launcher["spec"]["nodeName"] == "gpu-node-2"
    assert gateway.read_log(namespace, launcher["metadata"]["name"], "launcher", 1, 1000, 5).startswith("[")


def test_complete_ends_every_container_with_0(cluster: LocalCluster, gateway: Gateway, namespace: str) -> None:
    apply_action(gateway, create(gateway, namespace, 0, ["node", "launcher"]), "complete", cluster.kubelet)
    pods = pods_of(gateway, namespace).values()
    assert [(p["status"]["phase"], state(p)["terminated"]["exitCode"]) for p in pods] == [("Succeeded", 0)] * 2


def test_pods_of_an_older_attempt_stay_beside_the_new_ones(cluster: LocalCluster, gateway: Gateway,
                                                           namespace: str) -> None:
    first = create(gateway, namespace, 0, ["node"])
    apply_action(gateway, first, "fail", cluster.kubelet)
    apply_action(gateway, first, "delete", cluster.kubelet)
    apply_action(gateway, create(gateway, namespace, 1, ["node"]), "run", cluster.kubelet)
    assert {n: p["status"]["phase"] for n, p in pods_of(gateway, namespace).items()} == {
        "llm-workload-node-0-0-a0": "Failed", "llm-workload-node-0-0-a1": "Running"}
    assert list(pods_of(gateway, namespace, attempt=1)) == ["llm-workload-node-0-0-a1"]


def test_suspend_deletes_the_pods(cluster: LocalCluster, gateway: Gateway, namespace: str) -> None:
    tj = create(gateway, namespace, 0, ["node"])
    apply_action(gateway, tj, "run", cluster.kubelet)
    apply_action(gateway, tj, "suspend", cluster.kubelet)
    assert pods_of(gateway, namespace) == {}


@pytest.mark.parametrize(("patched", "with_kubelet"), [(False, True), (True, False)],
                         ids=["no runtime patch", "no kubelet"])
def test_otherwise_only_the_trainjob_changes(cluster: LocalCluster, gateway: Gateway, namespace: str, patched: bool,
                                             with_kubelet: bool) -> None:
    body = trainjob(0, [patch(["node"], 0)] if patched else None)
    body["metadata"]["namespace"] = namespace
    tj = gateway.create(TRAINJOBS, namespace, body)
    apply_action(gateway, tj, "run", cluster.kubelet if with_kubelet else None)
    assert pods_of(gateway, namespace) == {}
    status = gateway.get(TRAINJOBS, namespace, "llm-workload")["status"]  # type: ignore[index]
    assert status["jobsStatus"][0]["active"] == 2
