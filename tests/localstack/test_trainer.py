"""`localstack.trainer.apply_action` with the cluster's stand-in kubelet: the attempt's pods the way
JobSet, the scheduler and the kubelet keep them (`localstack.cluster.pods.apply_pods`), read back through the
session's real API server; and which pods a TrainJob has (`attempt_pods`, pure)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from events.types import ATTEMPT_LABEL, CONTROLLER_MANAGER, MANAGED_LABEL
from functions.domain.goodput_logs import Window, parse_window
from functions.domain.gotime import NS, RFC3339_NANO, parse
from functions.domain.logprofile import goodput_profile
from functions.runtime.gateway import Gateway
from functions.runtime.resources import PODS, TRAINJOBS
from localstack.cluster.apiserver import LocalCluster
from localstack.cluster.kubelet import served
from localstack.cluster.pods import (
    OOM_LINE,
    TRACEBACK,
    UNSCHEDULABLE,
    Megatron,
    attempt_pods,
    last_saved,
    megatron_time,
)
from localstack.trainer import apply_action
from tests.support.logprofiles import megatron_training

JOB_LABEL = "nvcre.nvidia.com/job"
STEP = {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}


def jobset(replicated_job: str) -> dict[str, str]:
    """JobSet's labels on the first pod of a replicatedJob of the JobSet `llm-workload` (its TrainJob's name)."""
    return {"jobset.sigs.k8s.io/jobset-name": "llm-workload", "jobset.sigs.k8s.io/replicatedjob-name": replicated_job,
            "batch.kubernetes.io/job-completion-index": "0", "jobset.sigs.k8s.io/restart-attempt": "0"}


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
     [("llm-workload-node-0-0-a0", "node", {**labels(0), **STEP, **jobset("node")}, "gpu-node-1", True)]),
    ("mpi: workers and the launcher", trainjob(3, [patch(["node", "launcher"], 3)]),
     [("llm-workload-node-0-0-a3", "node", {**labels(3), **STEP, **jobset("node")}, "gpu-node-1", True),
      ("llm-workload-launcher-0-0-a3", "launcher", {**labels(3), **jobset("launcher")}, "gpu-node-2", False)]),
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
    assert pod["metadata"]["labels"] == {**labels(0), **STEP, **jobset("node")}
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
    assert gateway.read_log(namespace, launcher["metadata"]["name"], "launcher", 800, 32 * 1024, 5).startswith(
        "using world size: 16, data-parallel size: 2, ")  # it logs on


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


# -- the stand-in workload's log, as CRE's megatron-training profile reads it (pure) -----------------------

def read(lines: list[tuple[int, str]]) -> Window:
    """The lines as the kubelet serves them with `timestamps=true`, parsed by CRE's `megatron-training`."""
    served_lines = served([(at, text + "\n") for at, text in lines], None, None, True, None).decode().splitlines()
    return parse_window(goodput_profile(megatron_training()), served_lines)


START = parse(RFC3339_NANO, "2026-12-06T10:00:00Z")


@pytest.mark.parametrize(("restored", "steps", "checkpoint", "loaded"), [
    (0, [10, 20], 20, None), (40, [50, 60], 60, "/ckpt/iter_0000040")])
def test_the_workload_logs_its_start_steps_and_saves_as_megatron_does(restored: int, steps: list[int],
                                                                       checkpoint: int, loaded: str | None) -> None:
    """Started at 10:00:00: the first step at +0.5 s, one every 100 ms, every 10th logged, every 20th saved (in
    50 ms); read 3 s in, as CRE's `megatron-training` reads it."""
    window = read(Megatron(START, restored).lines(START + 3 * NS))
    assert [(s.iteration, s.timestamp - START, s.step_timing) for s in window.steps] == [
        (steps[0], 1_500_000_000, 0.1), (steps[1], 2_500_000_000, 0.1)]
    assert [(c.step, c.timestamp - START, c.path, c.save_duration) for c in window.checkpoints] == [
        (checkpoint, 2_551_000_000, "/ckpt", 0.05)]
    assert window.application_start == START and window.last_log_timestamp == START + 2_551_000_000
    assert (window.restore.path if window.restore else None) == loaded
    assert last_saved(Megatron(START, restored).lines(START + 3 * NS)) == checkpoint


def test_a_save_under_way_is_pending_and_nothing_is_written_ahead_of_time() -> None:
    lines = Megatron(START).lines(START + 2_520_000_000)  # saving at +2.501 s, not yet scheduled
    assert lines[-1] == (START + 2_501_000_000, "[2026-12-06 10:00:02.501000] saving checkpoint at iteration 20 to "
                                                "/ckpt")
    window = read(lines)
    assert window.pending_save is not None and window.pending_save.step == 20 and not window.checkpoints
    assert Megatron(START).lines(START - 1) == [] and last_saved(None) == 0


def test_a_failed_attempt_stops_writing_and_ends_in_cudas_out_of_memory_error(
        cluster: LocalCluster, gateway: Gateway, namespace: str) -> None:
    """The next attempt resumes from the last checkpoint the failed one saved."""
    began = time.time_ns() - 20 * NS
    tj = create(gateway, namespace, 0, ["node"])
    apply_action(gateway, tj, "run", cluster.kubelet, clock=lambda: began)
    apply_action(gateway, tj, "fail", cluster.kubelet, clock=lambda: began + 5 * NS)
    lines = cluster.kubelet.lines_of(namespace, "llm-workload-node-0-0-a0", "node")
    assert lines == [(at, f"{text}\n") for at, text in Megatron(began).lines(began + 5 * NS)] + [
        (began + 5 * NS, f"{text}\n") for text in TRACEBACK]
    assert last_saved(lines) == 40  # steps 10 to 40 by +4.5 s
    apply_action(gateway, tj, "delete", cluster.kubelet)  # the restart's: its pods stay
    second = create(gateway, namespace, 1, ["node"])
    apply_action(gateway, second, "run", cluster.kubelet, clock=lambda: began + 9 * NS)
    resumed = cluster.kubelet.lines_of(namespace, "llm-workload-node-0-0-a1", "node")
    assert resumed is not None and resumed[1][1] == "Loading checkpoint from /ckpt/iter_0000040\n"
    assert any(text.startswith(f"[{megatron_time(began + 10_500_000_000)}] iteration       50/") for _, text in resumed)
