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
from functions.runtime.context import Context
from functions.runtime.errors import Unavailable
from functions.runtime.gateway import Gateway
from functions.runtime.logreads import read_log_all
from functions.runtime.resources import EVENTS, Resource, cre_goodput, cre_jobs, cre_logprofiles
from functions.runtime.settings import Settings
from localstack.cluster.apiserver import LocalCluster
from localstack.cluster.pods import create_pod, set_running, terminate
from localstack.manifests import service_account_user
from tests.support.logprofiles import megatron_training, nccl_bandwidth

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


@pytest.mark.parametrize(("last_runs", "step"), [(True, 30), (False, 10)], ids=["last-running", "last-pending"])
def test_a_multi_profile_reads_the_steps_of_the_last_worker_once_it_runs(
        measure: Callable[..., str], gateway: Gateway, cluster: LocalCluster, namespace: str, profile: str,
        last_runs: bool, step: int) -> None:
    """CRE's `Multi` worker strategy (the Megatron profile: the run's life from the first pod, the training steps
    from the last): worker-0's log gives the start, the last worker's the steps once that worker runs (until
    then, worker-0's log alone)."""
    running_job(gateway, cluster, namespace)
    create_pod(gateway, namespace, "llm-workload-node-0-1", {
        "jobset.sigs.k8s.io/jobset-name": "llm-workload", "batch.kubernetes.io/job-completion-index": "1",
        "crefn.dev/attempt": "0"}, node="gpu-node-1")
    if last_runs:
        set_running(gateway, namespace, "llm-workload-node-0-1")
    goodput(gateway, namespace, profile)
    base = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=10)

    def line(seconds: float, text: str) -> tuple[int, str]:
        when = base + timedelta(seconds=seconds)
        return at(when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")), text.replace("{t}", when.strftime("%Y-%m-%d %H:%M:%S.%f"))

    cluster.kubelet.write(namespace, "llm-workload-node-0-0", "node", [
        line(1, "using world size: 16, data-parallel size: 2, context-parallel size: 1, hierarchical "
                "context-parallel sizes: None, tensor-model-parallel size: 8, pipeline-model-parallel size: 1"),
        line(60, megatron("{t}", 10, "6000.0"))])
    cluster.kubelet.write(namespace, "llm-workload-node-0-1", "node", [
        line(60, megatron("{t}", 10, "6000.0")), line(120, megatron("{t}", 20, "6000.0")),
        line(180, megatron("{t}", 30, "6000.0"))])
    answer = send(measure(), PING)
    assert answer.status == 202, answer.text
    status = status_of(gateway, namespace)
    assert (status["currentStep"], status["applicationStartTime"]) == (step, second(base + timedelta(seconds=1)))


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


BANDWIDTH = Resource(GROUP, "v1alpha1", "bandwidthmeasurements", "BandwidthMeasurement")
NCCL = ["NCCL INFO Using network IB",
        "         8             2     float     sum      -1    58.31    0.00    0.00       0    58.40    0.00    0.00"
        "       0",
        "1073741824     268435456     float     sum      -1  1558.51  688.95  1291.78       0  1557.77  689.28  1292.40"
        "       0"]


def nccl_job(gateway: Gateway, cluster: LocalCluster, namespace: str, verdict: str, phase: str) -> dict[str, Any]:
    """A managed Job whose NCCL test ran in its workload's launcher pod (JobSet's labels), the pod `phase`, with its
    BandwidthMeasurement (made for the Job: the job-uid annotation)."""
    reason = {"InProgress": "WorkloadRunning", "Succeeded": "WorkloadCompleted"}[verdict]
    running_job(gateway, cluster, namespace, verdict, reason)
    create_pod(gateway, namespace, "llm-workload-launcher-0-0", {
        "jobset.sigs.k8s.io/jobset-name": "llm-workload", "jobset.sigs.k8s.io/replicatedjob-name": "launcher",
        "batch.kubernetes.io/job-completion-index": "0"}, node="gpu-node-1", containers=("launcher",))
    set_running(gateway, namespace, "llm-workload-launcher-0-0", ("launcher",))
    if phase == "Succeeded":
        terminate(gateway, namespace, "llm-workload-launcher-0-0", {"launcher": (0, "Completed")})
    now = datetime.now(UTC)
    cluster.kubelet.write(namespace, "llm-workload-launcher-0-0", "launcher",
                          [(at(second(now - timedelta(seconds=30 - i))), line) for i, line in enumerate(NCCL)])
    job = gateway.get(JOBS, namespace, "llm")
    assert job is not None
    gateway.create(BANDWIDTH, namespace, {
        "apiVersion": f"{GROUP}/v1alpha1", "kind": "BandwidthMeasurement",
        "metadata": {"name": "llm-bandwidth", "annotations": {f"{GROUP}/job-uid": job["metadata"]["uid"]}},
        "spec": {"jobRef": {"kind": "Job", "name": "llm"}, "logProfileRef": "nccl-bandwidth"}})
    return job


@pytest.fixture
def nccl_profile(gateway: Gateway) -> str:
    if gateway.get(PROFILES, None, "nccl-bandwidth") is None:
        gateway.create(PROFILES, None, nccl_bandwidth())
    return "nccl-bandwidth"


def bandwidth_status(gateway: Gateway, namespace: str) -> dict[str, Any]:
    found = gateway.get(BANDWIDTH, namespace, "llm-bandwidth")
    assert found is not None
    return dict(found.get("status") or {})


def test_a_running_nccl_test_is_sampled_then_its_succeeded_log_read_in_full_is_final(
        measure: Callable[..., str], gateway: Gateway, cluster: LocalCluster, namespace: str,
        nccl_profile: str) -> None:
    nccl_job(gateway, cluster, namespace, "InProgress", "Running")
    assert send(measure(), PING).status == 202
    status = bandwidth_status(gateway, namespace)
    assert (status["results"], status["transport"]) == (
        [{"sizeBytes": 8, "algBW": "0.00", "busBW": "0.00", "samples": 1},
         {"sizeBytes": 1073741824, "algBW": "688.95", "busBW": "1291.78", "samples": 1}], ["IB"])
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("Measuring", "True", "JobRunning")]
    terminate(gateway, namespace, "llm-workload-launcher-0-0", {"launcher": (0, "Completed")})
    conditions = [{"type": t, "status": "True" if t == "Succeeded" else "False",
                   "reason": "WorkloadCompleted" if t == "Succeeded" else "NotApplicable", "message": "",
                   "lastTransitionTime": "2026-01-22T18:40:00Z"} for t in ("InProgress", "Succeeded", "Failed")]
    gateway.patch(JOBS, namespace, "llm", {"status": {"conditions": conditions}}, status=True)
    assert send(measure(), PING).status == 202
    final = bandwidth_status(gateway, namespace)
    assert (final["results"], final["completionTime"]) == (status["results"], "2026-01-22T18:40:00Z")
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in final["conditions"]] == [
        ("Measuring", "False", "JobSucceeded", "Job succeeded"), ("Complete", "True", "JobSucceeded", "Job succeeded")]


def test_a_log_is_read_in_full_page_by_page(gateway: Gateway, cluster: LocalCluster, namespace: str) -> None:
    """CRE's `ReadAll` with pages of 200 bytes: each page from the second of its last complete line, the lines of
    that second already read skipped, a line cut by the limit read again whole."""
    cluster.node("gpu-node-1")
    create_pod(gateway, namespace, "p", {"app": "x"}, node="gpu-node-1")
    base = datetime.now(UTC).replace(microsecond=0)
    lines = [(at(second(base + timedelta(seconds=i // 3))) + i, f"line {i:02d} " + "x" * 30) for i in range(20)]
    cluster.kubelet.write(namespace, "p", "node", lines)
    ctx = Context(Settings(kubeconfig=str(cluster.kubeconfig)))
    try:
        read = read_log_all(ctx, {"metadata": {"namespace": namespace, "name": "p"}}, "node", page=200)
    finally:
        ctx.gateway.close()
    assert [line.split(" ", 1)[1] for line in read] == [text for _, text in lines]


def test_a_failed_measurement_is_named_by_namespace_and_name_with_its_error() -> None:
    """How the tick's line and its 503 name a measurement whose sample failed."""
    from functions.measure.read import named
    from functions.runtime.apply import Each

    listed = {"kind": "GoodputMeasurement", "metadata": {"namespace": "ml", "name": "llm-goodput"}}
    assert named(Each(listed, error=Unavailable("the API server is unavailable"))) == (
        "ml/llm-goodput: the API server is unavailable")


@pytest.mark.parametrize("kind", ["GoodputMeasurement", "BandwidthMeasurement"])
def test_a_listed_measurement_is_sampled_from_the_list_then_read_again_after_a_conflict(
        kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first sample takes the list's copy as it is (no read); each one after it (a write refused on a changed
    resourceVersion) reads the measurement again, by its kind."""
    from functions.measure import read as measure_read

    listed = {"kind": kind, "metadata": {"namespace": "ml", "name": "m"}}
    fresh = {**listed, "spec": {"jobRef": {"name": "llm"}}}
    read_again: list[tuple[str, str, str]] = []
    sampled: list[dict[str, Any]] = []

    def again(_: Context, namespace: str, name: str, kind: str = kind) -> dict[str, Any]:
        read_again.append((kind, namespace, name))
        return fresh

    def one(_: Context, measurement: dict[str, Any]) -> Any:
        sampled.append(measurement)
        return measurement

    for name in ("read_goodput", "read_bandwidth"):
        monkeypatch.setattr(measure_read, name, again)
    for name in ("read_one", "read_bandwidth_one"):
        monkeypatch.setattr(measure_read, name, one)
    next_read = measure_read.reads(Context(Settings()), listed)
    assert next_read() is listed and read_again == []
    assert next_read() is fresh and read_again == [(kind, "ml", "m")]
    assert sampled == [listed, fresh]


@pytest.mark.parametrize("verdict", ["InProgress", "Failed"])
def test_a_workload_with_no_pod_yet_is_sampled_with_nothing_read(verdict: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Job's workload listed no pod of its attempt (not created yet, or gone): the sample has no window to
    merge and no end of worker-0, and no log is read."""
    from functions.domain.logprofile import goodput_profile
    from functions.measure import read as measure_read
    from tests.support.helpers import cond, job

    listed: list[tuple[str, str]] = []

    def no_pods(_: Context, namespace: str, name: str) -> list[dict[str, Any]]:
        listed.append((namespace, name))
        return []

    monkeypatch.setattr(measure_read, "read_workload_pods", no_pods)
    state = job([cond(verdict, "True", "WorkloadRunning")], workload_ref=True)
    measurement = {"metadata": {"namespace": "ns", "name": "llm-goodput"}, "spec": {"jobRef": {"name": "llm"}}}
    sample = measure_read.sampled(Context(Settings()), measurement, state, verdict, None,
                                  goodput_profile(megatron_training()))
    assert listed == [("ns", "llm-workload")]
    assert (sample.verdict, sample.window, sample.terminated) == (verdict, None, None)


def test_a_goodput_that_names_no_job_is_skipped_unread() -> None:
    """A GoodputMeasurement whose jobRef names no Job measures nothing: no Job is read for it."""
    from functions.domain.jobs import Skipped
    from functions.measure.read import read_one

    measurement = {"kind": "GoodputMeasurement", "metadata": {"namespace": "ml", "name": "gm"},
                   "spec": {"jobRef": {"kind": "Job"}, "logProfileRef": "megatron-training"}}
    ctx = Context(Settings(kubeconfig="/nonexistent/kubeconfig"))  # any API call would fail
    assert read_one(ctx, measurement) == Skipped("GoodputMeasurement ml/gm: no managed Job '' to measure")


@pytest.mark.parametrize(("verdict", "error"), [
    ("InProgress", None), ("Succeeded", "job llm has no workload reference"),
    ("Failed", "job llm has no workload reference"),
])
def test_a_bandwidth_of_a_job_without_a_workload_waits_while_it_runs_else_says_why(verdict: str,
                                                                                   error: str | None) -> None:
    """No workload recorded: nothing to read while the Job runs; once it ended, CRE's error, with nothing read."""
    from functions.domain.nccl import bandwidth_parser
    from functions.measure.read import launcher_log
    from functions.runtime.errors import PermanentError
    from tests.support.helpers import cond, job

    state = job([cond(verdict, "True", "WorkloadRunning")])
    ctx = Context(Settings(kubeconfig="/nonexistent/kubeconfig"))  # any API call would fail
    parser = bandwidth_parser(nccl_bandwidth())
    if error is None:
        assert launcher_log(ctx, state, verdict, parser) is None
    else:
        with pytest.raises(PermanentError) as raised:
            launcher_log(ctx, state, verdict, parser)
        assert str(raised.value) == error


def test_the_bandwidth_of_an_ended_job_whose_launcher_still_runs_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the Job ended, its launcher's log is read only when the launcher finished: one still running is CRE's
    error, naming the pod and its phase (no log read)."""
    from functions.domain.nccl import bandwidth_parser
    from functions.measure import read as measure_read
    from functions.runtime.errors import PermanentError
    from tests.support.helpers import cond, job

    launcher = {"metadata": {"name": "llm-workload-launcher-0-0",
                             "labels": {"jobset.sigs.k8s.io/replicatedjob-name": "launcher"}},
                "status": {"phase": "Running"}}
    monkeypatch.setattr(measure_read, "read_workload_pods", lambda _ctx, _namespace, _name: [launcher])
    state = job([cond("Succeeded", "True", "WorkloadCompleted")], workload_ref=True)
    ctx = Context(Settings(kubeconfig="/nonexistent/kubeconfig"))  # any API call would fail
    with pytest.raises(PermanentError) as raised:
        measure_read.launcher_log(ctx, state, "Succeeded", bandwidth_parser(nccl_bandwidth()))
    assert str(raised.value) == "pod llm-workload-launcher-0-0 has not finished (Running)"
