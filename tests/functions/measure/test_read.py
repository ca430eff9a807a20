"""`measure` served as its ServiceAccount against the real API server, its pods' logs through the stand-in
kubelet (`sinceTime`, `timestamps`): a tick samples a running managed Job's GoodputMeasurement from the log of
its workload's worker (CRE's Megatron profile), so the checkpoint evidence a restart needs comes from the
functions themselves; a second tick counts nothing twice; a missing LogProfile is CRE's condition and Warning;
a Job that ended freezes its measurement; observe mode writes nothing."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from functions.domain.gotime import RFC3339_NANO, parse
from functions.runtime.client import send
from functions.runtime.gateway import Gateway
from functions.runtime.resources import EVENTS, cre_goodput, cre_jobs, cre_logprofiles
from localstack.cluster.apiserver import LocalCluster
from localstack.cluster.pods import create_pod, set_running
from localstack.manifests import service_account_user
from tests.support.logprofiles import megatron_training

GROUP = "nvcre.nvidia.com"
JOBS, GOODPUT, PROFILES = cre_jobs(GROUP), cre_goodput(GROUP), cre_logprofiles(GROUP)
PING = {"attributes": {"specversion": "1.0", "id": "tick", "source": "/apis/v1/namespaces/crefn-system/pingsources/"
                       "crefn-measure", "type": "dev.knative.sources.ping"}, "data": {}}


def at(text: str) -> int:
    return parse(RFC3339_NANO, text)


def second(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def megatron(when: str, iteration: int, ms: str) -> str:
    return (f"[{when}] iteration {iteration:>8}/  500000 | consumed samples: {iteration * 512:>10} | elapsed time per "
            f"iteration (ms): {ms} | throughput per GPU (TFLOP/s/GPU): 372.1 | learning rate: 3.000000E-04 | lm loss:"
            f" 9.500000E+00 | loss scale: 1.0 |")


@pytest.fixture
def measure(serve: Callable[..., Any], cluster: LocalCluster) -> Callable[..., str]:
    def url(**settings: str) -> str:
        kubeconfig = str(cluster.kubeconfig_for(service_account_user("crefn-measure")))
        return str(serve("measure", CREFN_KUBECONFIG=kubeconfig, CREFN_LOG_LEVEL="WARNING", **settings).url)
    return url


@pytest.fixture
def profile(gateway: Gateway) -> str:
    """CRE's `megatron-training` LogProfile (cluster-scoped), shared by the session."""
    if gateway.get(PROFILES, None, "megatron-training") is None:
        gateway.create(PROFILES, None, megatron_training())
    return "megatron-training"


def running_job(gateway: Gateway, cluster: LocalCluster, namespace: str, verdict: str = "InProgress",
                reason: str = "WorkloadRunning") -> None:
    """A managed Job running its workload `llm-workload`: worker-0 on gpu-node-1 (JobSet's labels), Running."""
    gateway.create(JOBS, namespace, {"apiVersion": f"{GROUP}/v1alpha1", "kind": "Job", "metadata": {
        "name": "llm", "labels": {"crefn.dev/managed": "true"}}, "spec": {"workload": {"trainJob": {
            "runtimeRef": {"name": "torch-distributed"}}}}})
    conditions = [{"type": t, "status": "True" if t == verdict else "False",
                   "reason": reason if t == verdict else "NotApplicable", "message": "",
                   "lastTransitionTime": "2026-01-22T18:30:00Z"} for t in ("InProgress", "Succeeded", "Failed")]
    gateway.patch(JOBS, namespace, "llm", {"status": {"conditions": conditions, "restartCount": 0, "workloadRef": {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "llm-workload"}}}, status=True)
    cluster.node("gpu-node-1")
    create_pod(gateway, namespace, "llm-workload-node-0-0", {
        "jobset.sigs.k8s.io/jobset-name": "llm-workload", "batch.kubernetes.io/job-completion-index": "0",
        "crefn.dev/attempt": "0"}, node="gpu-node-1")
    set_running(gateway, namespace, "llm-workload-node-0-0")


def goodput(gateway: Gateway, namespace: str, profile: str) -> None:
    gateway.create(GOODPUT, namespace, {"apiVersion": f"{GROUP}/v1alpha1", "kind": "GoodputMeasurement",
                                        "metadata": {"name": "llm-goodput"},
                                        "spec": {"jobRef": {"kind": "Job", "name": "llm"}, "logProfileRef": profile}})


def status_of(gateway: Gateway, namespace: str) -> dict[str, Any]:
    found = gateway.get(GOODPUT, namespace, "llm-goodput")
    assert found is not None
    return dict(found.get("status") or {})


def test_a_tick_samples_the_running_workers_log_and_counts_nothing_twice(
        measure: Callable[..., str], gateway: Gateway, cluster: LocalCluster, namespace: str, profile: str) -> None:
    running_job(gateway, cluster, namespace)
    goodput(gateway, namespace, profile)
    base = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=10)  # within CRE's 30 minutes back

    def line(seconds: float, text: str) -> tuple[int, str]:
        when = base + timedelta(seconds=seconds)
        return at(when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")), text.replace("{t}", when.strftime("%Y-%m-%d %H:%M:%S.%f"))

    log = [line(1, "using world size: 16, data-parallel size: 2, context-parallel size: 1, hierarchical "
                   "context-parallel sizes: None, tensor-model-parallel size: 8, pipeline-model-parallel size: 1"),
           line(60, megatron("{t}", 10, "6000.0")), line(120, megatron("{t}", 20, "6000.0")),
           line(150, "[{t}] saving checkpoint at iteration 20 to /ckpt"),
           line(152.5, "[{t}] scheduled an async checkpoint save at iteration 20 to /ckpt")]
    cluster.kubelet.write(namespace, "llm-workload-node-0-0", "node", log)
    answer = send(measure(), PING)
    assert answer.status == 202, answer.text
    status = status_of(gateway, namespace)
    assert (status["currentStep"], status["lastCheckpointStep"], status["checkpointSaveTimeSec"]) == (
        20, 20, "2.500000")
    assert (status["applicationStartTime"], status["lastCheckpointTime"], status["logInterval"]) == (
        second(base + timedelta(seconds=1)), second(base + timedelta(seconds=152)), 10)
    assert status["resumeTimeSec"] == "59.000000"  # the first step 59 s after the start
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("Measuring", "True", "JobRunning")]
    again = send(measure(), PING)
    assert again.status == 202, again.text
    after = status_of(gateway, namespace)
    assert (after["checkpointSaveTimeSec"], after["resumeTimeSec"], after["lastCheckpointStep"]) == (
        "2.500000", "59.000000", 20)


def test_a_missing_log_profile_is_cre_s_condition_and_warning(
        measure: Callable[..., str], gateway: Gateway, cluster: LocalCluster, namespace: str) -> None:
    running_job(gateway, cluster, namespace)
    goodput(gateway, namespace, "typo-does-not-exist")
    assert send(measure(), PING).status == 202
    (measuring,) = status_of(gateway, namespace)["conditions"]
    assert (measuring["type"], measuring["status"], measuring["reason"]) == ("Measuring", "False",
                                                                             "LogProfileNotFound")
    assert measuring["message"].startswith('LogProfile "typo-does-not-exist" could not be resolved: ')
    events = gateway.list_all(EVENTS, namespace)
    assert [(e["type"], e["reason"], e["regarding"]["name"]) for e in events] == [
        ("Warning", "LogProfileNotFound", "llm-goodput")]


def test_a_succeeded_job_freezes_its_measurement(measure: Callable[..., str], gateway: Gateway,
                                                 cluster: LocalCluster, namespace: str, profile: str) -> None:
    running_job(gateway, cluster, namespace, "Succeeded", "WorkloadCompleted")
    goodput(gateway, namespace, profile)
    gateway.patch(GOODPUT, namespace, "llm-goodput", {"status": {"startTime": "2026-01-22T18:00:00Z",
                                                                 "warmupBaseStep": 10, "currentStep": 90}},
                  status=True)
    assert send(measure(), PING).status == 202
    status = status_of(gateway, namespace)
    assert (status["completionTime"], status["trainingTimeSec"], status["result"]) == (
        "2026-01-22T18:30:00Z", "1800.000000", "1.000000")
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("Complete", "True", "JobSucceeded"), ("Measuring", "False", "JobSucceeded")]


def test_observe_mode_writes_nothing(measure: Callable[..., str], gateway: Gateway, cluster: LocalCluster,
                                     namespace: str, profile: str) -> None:
    running_job(gateway, cluster, namespace)
    goodput(gateway, namespace, profile)
    now = datetime.now(UTC)
    cluster.kubelet.write(namespace, "llm-workload-node-0-0", "node",
                          [(at(second(now)), megatron(now.strftime("%Y-%m-%d %H:%M:%S.%f"), 10, "6000.0"))])
    assert send(measure(CREFN_MODE="observe"), PING).status == 202
    assert status_of(gateway, namespace) == {}
