"""CRE fidelity on the real API server: failed nodes from the Job, Kubernetes Events per transition
(as `kubectl describe` shows them), refused creates retried without failing the Job, precedence."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from functions.gateway import Gateway
from functions.resources import TRAINJOBS
from functions.transport import send
from localstack.apiserver import LocalCluster
from localstack.manifests import kubectl
from tests.support.webhook import DenyingWebhook
from tests.support.world import JOBS, World, make_world

GROUP_NODES = "nvcre.nvidia.com/group-nodes"


def job_events(gateway: Gateway, namespace: str, job: str = "llm") -> list[dict[str, Any]]:
    """The Events regarding a Job, oldest first (the core view `kubectl describe` reads)."""
    items = gateway.request("GET", f"/api/v1/namespaces/{namespace}/events",
                            query=[("fieldSelector", f"involvedObject.name={job}")])["items"]
    return sorted(items, key=lambda e: e.get("eventTime") or e["metadata"]["creationTimestamp"])


def job_record(world: World, job: str = "llm") -> dict[str, Any]:
    from localstack.apisource import apiserver_record

    return apiserver_record("update", world.job(job), JOBS, world.gw.host)


def annotate_nodes(gateway: Gateway, namespace: str, nodes: str, job: str = "llm") -> None:
    gateway.patch(JOBS, namespace, job, {"metadata": {"annotations": {GROUP_NODES: nodes}}})


def test_fail_restart_exhausted_events_and_failed_nodes(functions: Callable[..., dict[str, str]], gateway: Gateway,
                                                        cluster: LocalCluster, namespace: str) -> None:
    world = make_world(gateway, namespace, functions(), duplicate=True)  # every event twice: still one Event each
    world.create_job(max_restarts=1)
    annotate_nodes(gateway, namespace, " gpu-node-11,gpu-node-07, gpu-node-11")
    world.checkpoint_evidence()
    world.settle()
    for step in ("run", "fail", "run", "fail"):
        world.trainer(step)
        world.settle()
    status = world.job()["status"]
    assert world.final() == ("Failed", "WorkloadFailed", 1)
    message = "Workload TrainJob/llm-workload failed: jobset node-0 failed: exit code 137"
    assert status["failedNodes"] == [{"name": "gpu-node-07", "reason": "WorkloadFailed", "message": message},
                                     {"name": "gpu-node-11", "reason": "WorkloadFailed", "message": message}]
    events = job_events(gateway, namespace)
    assert [(e["type"], e["reason"], e["message"]) for e in events] == [
        ("Normal", "WorkloadCreated", "Workload TrainJob/llm-workload created and is starting"),
        ("Warning", "WorkloadFailed", message)]
    assert {e["reportingComponent"] for e in events} == {"crefn.dev/controller"}
    described = subprocess.run([kubectl(), "--kubeconfig", str(cluster.kubeconfig), "-n", namespace, "describe",
                                "jobs.nvcre.nvidia.com", "llm"], capture_output=True, text=True, check=True).stdout
    section = described.split("Events:", 1)[1]
    assert "WorkloadCreated" in section and "WorkloadFailed" in section and "Warning" in section


def test_first_attribution_wins_and_a_deleted_workload_attributes_nodes(functions: Callable[..., dict[str, str]],
                                                                       gateway: Gateway, namespace: str) -> None:
    world = make_world(gateway, namespace, functions())
    world.create_job(max_restarts=None)
    annotate_nodes(gateway, namespace, "gpu-node-03")
    world.settle()
    world.trainer("delete")
    world.settle()
    status = world.job()["status"]
    assert world.final() == ("Failed", "WorkloadFailed", 0)
    assert status["failedNodes"] == [{"name": "gpu-node-03", "reason": "WorkloadFailed",
                                      "message": "Workload TrainJob/llm-workload was deleted"}]

    world.create_job(name="hw", max_restarts=None)
    annotate_nodes(gateway, namespace, "gpu-node-03,gpu-node-04", job="hw")
    world.settle()
    earlier = [{"name": "gpu-node-09", "reason": "HardwareFailureDetected", "message": "xid 79"}]
    gateway.patch(JOBS, namespace, "hw", {"status": {"failedNodes": earlier}}, status=True)
    world.trainer("fail", job="hw")
    world.settle()
    assert world.final("hw")[:2] == ("Failed", "WorkloadFailed")
    assert world.job("hw")["status"]["failedNodes"] == earlier


def test_a_refused_create_is_retried_with_a_warning_and_never_fails_the_job(
        functions: Callable[..., dict[str, str]], gateway: Gateway, namespace: str, relay: Any,
        tmp_path: Path) -> None:
    urls = functions()
    world = make_world(gateway, namespace, urls, poll=False)
    job = f"refused-{uuid.uuid4().hex[:6]}"
    world.create_job(name=job)
    webhook = DenyingWebhook(gateway, tmp_path, f"deny-{job}", object_selector={
        "matchLabels": {"nvcre.nvidia.com/job": job}}, message="TrainingRuntime torch-distributed is not ready",
        rules=[{"operations": ["CREATE"], "apiGroups": ["trainer.kubeflow.org"], "apiVersions": ["v1alpha1"],
                "resources": ["trainjobs"]}])
    try:
        record = job_record(world, job)
        for _ in range(2):  # Knative's retries: the same answer, one Event
            answer = send(urls["launch"], record)
            assert answer.status == 503, answer.text
            assert f"Failed to create TrainJob/{job}-workload:" in answer.text
            assert "TrainingRuntime torch-distributed is not ready" in answer.text
        assert len(webhook.reviews) == 2
        events = job_events(gateway, namespace, job)
        assert [(e["type"], e["reason"]) for e in events] == [("Warning", "WorkloadCreationError")]
        assert events[0]["message"].startswith(f"Failed to create TrainJob/{job}-workload: ")
        status = world.job(job).get("status") or {}
        assert not status.get("conditions") and gateway.get(TRAINJOBS, namespace, f"{job}-workload") is None
    finally:
        webhook.remove()
    relay.attach(world)
    world.resync_url = urls["resync"]
    world.tick()  # the resync tick retries the create once the webhook is gone
    assert gateway.get(TRAINJOBS, namespace, f"{job}-workload") is not None
    assert world.final(job)[0] == "InProgress"
    assert [e["reason"] for e in job_events(gateway, namespace, job)] == ["WorkloadCreationError", "WorkloadCreated"]


def test_a_foreign_object_fails_the_job_with_its_event(functions: Callable[..., dict[str, str]], gateway: Gateway,
                                                       namespace: str) -> None:
    urls = functions()
    world = make_world(gateway, namespace, urls, poll=False)
    world.create_job()
    annotate_nodes(gateway, namespace, "gpu-node-01")
    gateway.create(TRAINJOBS, namespace, {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                          "metadata": {"name": "llm-workload"}, "spec": {"runtimeRef": {"name": "x"}}})
    answer = send(urls["launch"], job_record(world))
    assert answer.status == 200 and answer.ce["jobcondition"] == "Failed"
    assert world.final()[:2] == ("Failed", "WorkloadCreationError")
    assert world.job()["status"]["failedNodes"] == [{  # the CRD's reasons: a creation error is a failed workload
        "name": "gpu-node-01", "reason": "WorkloadFailed",
        "message": "TrainJob llm-workload already exists and is not owned by Job llm"}]
    assert [(e["type"], e["reason"]) for e in job_events(gateway, namespace)] == [
        ("Warning", "WorkloadCreationError")]


def test_a_dual_true_job_reads_failed(functions: Callable[..., dict[str, str]], gateway: Gateway,
                                      namespace: str) -> None:
    """Older CRE wrote InProgress=True and Failed=True on a timeout: the functions read Failed."""
    urls = functions()
    world = make_world(gateway, namespace, urls, poll=False)
    world.create_job()
    stamp = "2026-11-30T10:00:00Z"
    gateway.patch(JOBS, namespace, "llm", {"status": {"conditions": [
        {"type": "InProgress", "status": "True", "reason": "WorkloadRunning", "message": "",
         "lastTransitionTime": stamp},
        {"type": "Failed", "status": "True", "reason": "JobTimedOut", "message": "Job exceeded timeoutPerJob",
         "lastTransitionTime": stamp}]}}, status=True)
    answer = send(urls["launch"], job_record(world))
    assert (answer.status, answer.text) == (202, "")  # terminal: Failed wins over InProgress
    assert gateway.get(TRAINJOBS, namespace, "llm-workload") is None


def test_workload_metadata_labels_reach_the_trainjob(functions: Callable[..., dict[str, str]], gateway: Gateway,
                                                    namespace: str) -> None:
    """The refreshed Job CRD has spec.workloadMetadata: the labels are stored and carried, not pruned."""
    urls = functions()
    world = make_world(gateway, namespace, urls, poll=False)
    job = world.create_job()
    gateway.delete(JOBS, namespace, "llm")
    spec = {**job["spec"], "workloadMetadata": {"labels": {"kueue.x-k8s.io/queue-name": "team-a"}}}
    gateway.create(JOBS, namespace, {"apiVersion": job["apiVersion"], "kind": "Job",
                                     "metadata": {"name": "llm", "labels": {"crefn.dev/managed": "true"}},
                                     "spec": spec})
    assert world.job()["spec"]["workloadMetadata"] == {"labels": {"kueue.x-k8s.io/queue-name": "team-a"}}
    assert send(urls["launch"], job_record(world)).status == 200
    trainjob = gateway.get(TRAINJOBS, namespace, "llm-workload") or {}
    assert trainjob["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a"


def test_restart_grace_is_twice_the_goodput_sample_interval(functions: Callable[..., dict[str, str]],
                                                           gateway: Gateway, namespace: str) -> None:
    urls = functions(CREFN_RESTART_GRACE_SECONDS="0")
    world = make_world(gateway, namespace, urls)
    for name, interval in (("sampled", "45s"), ("unsampled", None)):
        body: dict[str, Any] = {
            "apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "labels": {"crefn.dev/managed": "true"}},
            "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "torch-distributed"}}},
                     "checkpoint": {"pvcName": "p", "maxRestarts": 1}}}
        if interval:
            body["spec"]["goodputMeasurement"] = {"logProfileRef": "default", "sampleInterval": interval}
        gateway.create(JOBS, namespace, body)
        world.checkpoint_evidence(job=name)
    world.settle()
    for name in ("sampled", "unsampled"):
        world.trainer("fail", job=name)
    world.settle()
    restarted = {o.record["attributes"]["job"] for o in world.broker.outcomes
                 if o.reply and o.reply["attributes"]["type"] == "dev.crefn.job.restarted"}
    assert set(restarted) == {"sampled", "unsampled"}
    now = datetime.now(UTC)
    ahead = {name: (datetime.fromisoformat(world.job(name)["metadata"]["annotations"]["crefn.dev/restart-not-before"]
                                           .replace("Z", "+00:00")) - now).total_seconds()
             for name in ("sampled", "unsampled")}
    assert 45 < ahead["sampled"] <= 91 and ahead["unsampled"] <= 1, ahead
    assert world.job("sampled")["status"]["restartCount"] == 1
    assert gateway.get(TRAINJOBS, namespace, "sampled-workload") is None  # still within its 90 s grace
