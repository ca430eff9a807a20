"""The failure log on the real API server (CRE's `captureFailureLog`): pods and their logs read through the
stand-in kubelet, the container a restart or a failure records, its tail, and what is written when there is
no log to read. The choice of container, pure: tests/domain/test_pods.py."""

from __future__ import annotations

from collections.abc import Callable

from functions.runtime.resources import TRAINJOBS
from localstack.cluster.apiserver import LocalCluster
from localstack.cluster.pods import create_pod, set_running, terminate
from tests.support.world import World

# -- on the real API server: the verdicts that record it, the log read through `pods/log` -----------

LABELS = {"nvcre.nvidia.com/job": "llm", "crefn.dev/attempt": "0", "crefn.dev/managed": "true"}
OOM_LINE = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"


def failed_world(world: Callable[..., World], max_restarts: int = 0) -> World:
    w = world()
    w.create_job(max_restarts=max_restarts)
    w.checkpoint_evidence()
    w.settle()
    return w


def fail_trainjob(w: World) -> None:
    """The Trainer's verdict on the TrainJob, the pods left as the test made them."""
    w.gw.patch(TRAINJOBS, w.ns, "llm-workload", {"status": {"conditions": [
        {"type": "Failed", "status": "True", "reason": "JobsFailed", "message": "jobset failed",
         "lastTransitionTime": "2026-12-01T00:00:00Z"}]}}, status=True)
    w.settle()


def test_the_oomkilled_container_and_the_end_of_its_log(world: Callable[..., World], cluster: LocalCluster) -> None:
    w = failed_world(world)
    cluster.kubelet.register_node(w.gw, "gpu-node-7")
    create_pod(w.gw, w.ns, "llm-workload-node-0-0", LABELS, node="gpu-node-6")
    terminate(w.gw, w.ns, "llm-workload-node-0-0", {"node": (1, "Error")})
    create_pod(w.gw, w.ns, "llm-workload-node-1-0", LABELS, node="gpu-node-7")
    terminate(w.gw, w.ns, "llm-workload-node-1-0", {"node": (137, "OOMKilled")})
    lines = [f"step {i:05d} loss {1 / (i + 1):.6f} tokens/s 123456.7 " + "x" * 20 for i in range(1000)]
    cluster.kubelet.set_log(w.ns, "llm-workload-node-1-0", "node", "\n".join([*lines, OOM_LINE]) + "\n")
    fail_trainjob(w)
    log = w.job()["status"]["failureLog"]
    assert (log["podName"], log["nodeName"], log["exitCode"], log["reason"]) == (
        "llm-workload-node-1-0", "gpu-node-7", 137, "OOMKilled")
    tail = log["tail"]
    assert tail.endswith(OOM_LINE + "\n") and len(tail.encode()) <= 32 * 1024
    assert "step 00199 " not in tail  # beyond the last 800 lines
    assert len(tail.encode()) > 30 * 1024  # the 800 lines are longer: the last 32 KiB are kept
    changed = [o.reply for o in w.answers("restart") if o.reply]
    assert changed[-1]["data"]["failure"] == {"podName": "llm-workload-node-1-0", "nodeName": "gpu-node-7",
                                              "exitCode": 137, "reason": "OOMKilled"}


def test_a_log_that_cannot_be_read_leaves_the_tail_empty(world: Callable[..., World]) -> None:
    """The pod's node has no kubelet to ask: the verdict and the failure log are written all the same."""
    w = failed_world(world)
    create_pod(w.gw, w.ns, "llm-workload-node-0-0", LABELS, node="no-such-node")
    terminate(w.gw, w.ns, "llm-workload-node-0-0", {"node": (2, "Error")})
    fail_trainjob(w)
    status = w.job()["status"]
    assert status["failureLog"] == {"podName": "llm-workload-node-0-0", "nodeName": "no-such-node", "exitCode": 2,
                                    "reason": "Error", "tail": ""}
    assert next(c for c in status["conditions"] if c["type"] == "Failed")["status"] == "True"


def test_no_pods_and_no_failed_container(world: Callable[..., World]) -> None:
    w = failed_world(world)
    fail_trainjob(w)
    assert w.job()["status"]["failureLog"]["reason"] == "PodNotFound"
    w2 = world()
    w2.create_job("other", max_restarts=0)
    w2.settle()
    create_pod(w2.gw, w2.ns, "other-pod", {**LABELS, "nvcre.nvidia.com/job": "other"}, node="gpu-node-1")
    set_running(w2.gw, w2.ns, "other-pod")
    w2.gw.patch(TRAINJOBS, w2.ns, "other-workload", {"status": {"conditions": [
        {"type": "Failed", "status": "True", "reason": "JobsFailed", "message": "x",
         "lastTransitionTime": "2026-12-01T00:00:00Z"}]}}, status=True)
    w2.settle()
    log = w2.job("other")["status"]["failureLog"]
    assert (log["reason"], log["podName"], log["nodeName"], log["exitCode"]) == ("NoTerminatedContainer", "", "", 0)


def test_a_deleted_workload_records_one_too(world: Callable[..., World]) -> None:
    w = failed_world(world)
    w.gw.delete(TRAINJOBS, w.ns, "llm-workload")
    w.settle()
    status = w.job()["status"]
    assert status["failureLog"]["reason"] == "PodNotFound"
    assert next(c for c in status["conditions"] if c["status"] == "True")["reason"] == "WorkloadFailed"


def test_a_restart_reports_the_failed_container_but_records_nothing(world: Callable[..., World]) -> None:
    w = failed_world(world, max_restarts=2)
    create_pod(w.gw, w.ns, "llm-workload-node-0-0", LABELS, node="gpu-node-2")
    terminate(w.gw, w.ns, "llm-workload-node-0-0", {"node": (137, "OOMKilled")})
    fail_trainjob(w)
    status = w.job()["status"]
    assert status["restartCount"] == 1 and "failureLog" not in status
    restarted = [o.reply for o in w.answers("restart") if o.reply]
    assert restarted[0]["attributes"]["type"] == "dev.crefn.job.restarted"
    assert restarted[0]["data"]["failure"] == {"podName": "llm-workload-node-0-0", "nodeName": "gpu-node-2",
                                               "exitCode": 137, "reason": "OOMKilled"}


def test_a_creation_error_records_pod_not_found(world: Callable[..., World]) -> None:
    w = world()
    w.gw.create(TRAINJOBS, w.ns, {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                  "metadata": {"name": "llm-workload"}, "spec": {"runtimeRef": {"name": "t"}}})
    w.create_job(max_restarts=0)
    w.settle()
    status = w.job()["status"]
    assert next(c for c in status["conditions"] if c["status"] == "True")["reason"] == "WorkloadCreationError"
    assert status["failureLog"]["reason"] == "PodNotFound"


def test_a_job_without_group_nodes_attributes_the_nodes_its_pods_were_placed_on(world: Callable[..., World]) -> None:
    """CRE (ADR-089, `job_controller.go:groupNodeNames` → `nodemonitor.DiscoverPlacedNodesForJob`,
    `backfill_group_nodes_test.go`): with no group-nodes annotation, every node the Job's pods were bound
    to, any phase, de-duplicated and sorted; a pod never placed names none. The first attribution wins."""
    w = failed_world(world)
    create_pod(w.gw, w.ns, "llm-workload-node-0-0", LABELS, node="gpu-node-9")
    terminate(w.gw, w.ns, "llm-workload-node-0-0", {"node": (1, "Error")})
    create_pod(w.gw, w.ns, "llm-workload-node-1-0", LABELS, node="gpu-node-3")
    set_running(w.gw, w.ns, "llm-workload-node-1-0")
    create_pod(w.gw, w.ns, "llm-workload-node-2-0", LABELS, node="gpu-node-9")
    create_pod(w.gw, w.ns, "llm-workload-node-3-0", LABELS)
    fail_trainjob(w)
    message = "Workload TrainJob/llm-workload failed: jobset failed"
    assert w.job()["status"]["failedNodes"] == [{"name": n, "reason": "WorkloadFailed", "message": message}
                                                for n in ("gpu-node-3", "gpu-node-9")]


def test_a_creation_error_attributes_the_placed_nodes_too(world: Callable[..., World]) -> None:
    """`WorkloadCreationError` is one of the verdicts CRE attributes nodes for (`setJobFailed`)."""
    w = world()
    w.gw.create(TRAINJOBS, w.ns, {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                  "metadata": {"name": "llm-workload"}, "spec": {"runtimeRef": {"name": "t"}}})
    create_pod(w.gw, w.ns, "llm-workload-node-0-0", LABELS, node="gpu-node-4")
    w.create_job(max_restarts=0)
    w.settle()
    status = w.job()["status"]
    failed = next(c for c in status["conditions"] if c["status"] == "True")
    assert failed["reason"] == "WorkloadCreationError"
    assert status["failedNodes"] == [{"name": "gpu-node-4", "reason": "WorkloadFailed", "message": failed["message"]}]
