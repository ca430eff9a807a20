"""CRE's numbers and texts, each as the literal CRE uses, beside the CRE source it comes from: limits, defaults,
reasons, messages, label keys. Every expectation here is written out, never computed from the constant of
`functions.domain` or decision that carries it, so that changing such a constant fails a test (`make mutation` mutates
them: its `constants` row). Grouped by the CRE source they come from (NVIDIA/cluster-readiness-engine: its Go
files, design records and CRDs); the behaviour is exercised where it can be (a note of 1025 bytes is cut to
1024, a log of 801 lines keeps 800), the constant itself is never read.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from events.emitted import ConditionSummary, FailedNode
from events.types import job_uid_annotation
from functions.domain.attempts import workload_name
from functions.domain.cel import check, node_health, too_long
from functions.domain.deadline import deadline
from functions.domain.kubeevents import cap_note
from functions.domain.launching import LaunchObserved, decide_launch
from functions.domain.measurement_objects import GoodputMeasurement, bandwidth_name, goodput_name, truncate
from functions.domain.placement import enable_mnnvl, gpus_per_node, hardware, target_nodes
from functions.domain.pods import LogSource, failure_log, timeout_container
from functions.domain.running import decide_running
from functions.domain.runspec import (
    InvalidSpec,
    check_workflow_fields,
    job_annotations,
    job_fields,
    mpi_launch,
    nccl_env,
    nic_resources,
    workload_labels,
)
from functions.domain.stall import decide_stall
from functions.domain.thresholds import Verdict, Waiting, decide_validation, measured_values, measurement_timeout
from functions.domain.translation import translate
from functions.nodehealth.decide import hardware_message, merge_failed_nodes, pod_nodes
from functions.runtime.context import Context
from functions.runtime.effects import WriteStatus
from functions.runtime.gateway import Gateway
from functions.runtime.reads import read_tail
from functions.runtime.settings import Settings
from functions.workloadrun.run_conditions import deleted, mirrored
from localstack.cluster.kubelet import tail
from tests.support.helpers import NOW, cond, job, pod

SECOND = timedelta(seconds=1)


def at(delta: timedelta) -> str:
    return (NOW + delta).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- pkg/controller/event_note.go (ADR-080): an Event's note is the message within 1024 bytes ----------------------

@pytest.mark.parametrize(("message", "note"), [
    ("a" * 1024, "a" * 1024),
    ("a" * 1025, "a" * 1009 + "... [truncated]"),  # 1009 + 15 = 1024 bytes
    ("é" * 513, "é" * 504 + "... [truncated]"),  # 1026 bytes; 1009 would cut an "é" in two: 1008 + 15
], ids=["1024-bytes-kept", "1025-bytes-cut-to-1024", "cut-on-a-utf8-boundary"])
def test_event_note_is_capped_at_1024_bytes(message: str, note: str) -> None:
    assert cap_note(message) == note


# -- pkg/naming/naming.go `Truncate`: names over the limit keep limit-6 characters, `-`, 5 hex digits --------------

def test_truncate_matches_cres_golden_case() -> None:
    """pkg/naming/testdata/truncate: `nemotron5-certification-training-nemotron5` at 31."""
    assert truncate("nemotron5-certification-training-nemotron5", 31) == "nemotron5-certification-t-9b1bc"


@pytest.mark.parametrize(("name", "expected"), [
    (goodput_name("j" * 55), "j" * 55 + "-goodput"),  # 63 characters: kept
    (goodput_name("j" * 57), "j" * 57 + "-b0edb"),  # 65: 57 kept, FNV-32a of the full name 0xb0edb0be
    (bandwidth_name("b" * 55), "b" * 55 + "-b-7a301"),  # 65: 57 kept ending in `-`, dropped; 0x7a301439
], ids=["63-kept", "65-truncated-to-63", "trailing-dash-dropped"])
def test_measurement_names_are_truncated_to_63(name: str, expected: str) -> None:
    assert name == expected


def test_trainjob_name_is_truncated_to_44() -> None:
    """`<job>-workload` (44, `Truncate(name, 44)`): 44 characters kept, 45 cut to 38 + `-` + 5 hex digits
    (the digits themselves are CRE's FNV-32a, pinned with the TrainJob names' own tests)."""
    assert workload_name("w" * 35) == "w" * 35 + "-workload"
    cut = workload_name("w" * 36)
    assert len(cut) == 44 and cut[:39] == "w" * 36 + "-w-"


# -- pkg/controller/job_controller.go `captureFailureLog` and pkg/podlogs/fetcher.go: 800 lines, last 32 KiB -------

class KubeletLogs:
    """The transport of a Gateway whose `pods/log` answers as a kubelet does (`localstack.cluster.kubelet`):
    the last `tailLines` lines of the container's log."""

    host = "https://kubelet.test"

    def __init__(self, log: str) -> None:
        self.log = log

    def send(self, method: str, path: str, query: list[tuple[str, Any]], *_: Any) -> LogAnswer:
        return LogAnswer(tail(self.log, int(dict(query)["tailLines"]), None))

    def close(self) -> None:
        pass  # no connection: nothing to close


class LogAnswer:
    """A urllib3 response, as far as the gateway reads one streamed."""

    status = 200

    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, amount: int, decode_content: bool) -> list[bytes]:
        return [self.body[i:i + amount] for i in range(0, len(self.body), amount)]

    def release_conn(self) -> None:
        pass


def failure_tail(log: str) -> str:
    ctx = Context(Settings(), gateway=Gateway(KubeletLogs(log)))
    return read_tail(ctx, "ns", LogSource("llm-workload-node-0-0", "gpu-1", "node", 1, "Error"))


def test_the_failure_log_keeps_the_last_800_lines() -> None:
    lines = [f"line {n}\n" for n in range(1, 802)]
    assert failure_tail("".join(lines)) == "".join(lines[1:])  # 801 lines: the first is dropped
    assert failure_tail("".join(lines[:800])) == "".join(lines[:800])


def test_the_failure_log_keeps_the_last_32_kib() -> None:
    lines = [f"{n:09d}" + "x" * 90 + "\n" for n in range(800)]  # 100 bytes each: 80,000 bytes
    kept = failure_tail("".join(lines))
    assert len(kept.encode()) == 32768 and kept == "".join(lines)[-32768:]


def test_failure_log_without_a_failed_container_says_why_in_cres_words() -> None:
    assert failure_log([], None, "").model_dump(by_alias=True) == {
        "podName": "", "nodeName": "", "exitCode": 0, "reason": "PodNotFound",
        "tail": "no pods for this Job were found when the failure was recorded; the pod was most likely deleted "
                "before its logs could be read"}
    assert failure_log([pod(exits=[("node", 0, "Completed")])], None, "").model_dump(by_alias=True) == {
        "podName": "", "nodeName": "", "exitCode": 0, "reason": "NoTerminatedContainer",
        "tail": "pods for this Job were found, but none had a container terminated with a non-zero exit code"}


# -- pkg/controller/workflow_controller.go `captureTimeoutLog`, `isJobTimedOut`, `failTimedOutJob` -----------------

def test_the_timeout_log_prefers_the_trainer_step_pod() -> None:
    pods = [pod("launcher-0", node="gpu-1", exits=[("launcher", -1, "")]),
            pod("node-0", node="gpu-2", exits=[("node", -1, "")],
                labels={"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"})]
    assert timeout_container(pods) == LogSource("node-0", "gpu-2", "node", 0, "Timeout")


@pytest.mark.parametrize(("started", "message"), [
    (timedelta(hours=24), None),  # strictly longer than the bound
    (timedelta(hours=24) + SECOND, "Job exceeded timeoutPerJob"),
], ids=["24h-not-yet", "24h-and-a-second"])
def test_an_unreadable_timeout_is_cres_default_of_24h(started: timedelta, message: str | None) -> None:
    state = job([cond("InProgress", "True", "WorkloadRunning")], workload_ref=True,
                status={"workloadStartTime": at(-started)}, annotations={"crefn.dev/timeout-per-job": "soon"})
    due = deadline(state, NOW, None)
    assert (due.message if due else None) == message


def test_a_timeout_while_unschedulable_says_so() -> None:
    state = job([cond("InProgress", "True", "WorkloadRunning")], workload_ref=True,
                status={"schedulingBlockedSince": at(-timedelta(hours=2))},
                annotations={"crefn.dev/timeout-per-job": "1h"})
    due = deadline(state, NOW, None)
    assert due is not None and due.message == "Job exceeded timeoutPerJob while its pods were unschedulable"


# -- docs/designs/083-scheduling-stall-visibility.md: `schedulingStallGraceSeconds` defaults to 300 ----------------

@pytest.mark.parametrize(("blocked_for", "condition"), [
    (timedelta(seconds=299), None),
    (timedelta(seconds=300), ConditionSummary(type="InProgress", reason="WorkloadSchedulingBlocked",
                                              message="Workload pods are unschedulable: 0/3 nodes are available")),
], ids=["299s-within-grace", "300s-blocked"])  # `time.Since(marker) >= grace` (checkSchedulingBlocked)
def test_the_scheduling_grace_is_300_seconds(blocked_for: timedelta, condition: ConditionSummary | None) -> None:
    state = job([cond("InProgress", "True", "WorkloadRunning")], workload_ref=True,
                status={"schedulingBlockedSince": at(-blocked_for), "workloadStartTime": at(-timedelta(hours=1))})
    blocked = pod(scheduled=("False", "Unschedulable", "0/3 nodes are available"))
    assert decide_running(state, [blocked], "llm-workload", NOW).condition == condition


# -- pkg/controller/job_controller.go `checkStallTimeout`, `startupStallAnchor` ------------------------------------

def goodput(status: dict[str, Any]) -> GoodputMeasurement:
    return GoodputMeasurement.model_validate({"metadata": {"name": "llm-goodput", "namespace": "ns"},
                                              "spec": {"jobRef": {"kind": "Job", "name": "llm"}}, "status": status})


@pytest.mark.parametrize(("since_start", "message"), [
    (timedelta(seconds=1320), None),  # 1200 s + 2 x 60 s, strictly longer
    (timedelta(seconds=1321), "Workload stalled: no training step observed within startup timeout"),
], ids=["1320s", "1321s"])
def test_the_startup_bound_is_1200s_plus_twice_a_60s_sample_interval(since_start: timedelta,
                                                                     message: str | None) -> None:
    state = job(spec={"stallMultiplier": 2})
    stalled = decide_stall(state.job, goodput({"startTime": at(-since_start)}), None, None, NOW)
    assert (stalled.message if stalled else None) == message


@pytest.mark.parametrize(("since_step", "message"), [
    (timedelta(seconds=140), None),  # 2 x 10 s x 1 + 2 x 60 s
    (timedelta(seconds=141), "Workload stalled: no training step within the configured threshold"),
], ids=["140s", "141s"])
def test_the_training_bound_adds_twice_a_60s_sample_interval(since_step: timedelta, message: str | None) -> None:
    state = job(spec={"stallMultiplier": 2})
    gm = goodput({"startTime": at(-timedelta(hours=1)), "lastStepTimestamp": at(-since_step), "avgStepTimeSec": "10"})
    stalled = decide_stall(state.job, gm, None, None, NOW)
    assert (stalled.message if stalled else None) == message


# -- pkg/controller/job_controller.go `checkNodeHealth`, `mergeFailedNodes`; pkg/nodemonitor/nodes.go --------------

def test_a_node_found_unhealthy_is_listed_in_cres_words() -> None:
    merged = merge_failed_nodes([], ["gpu-2"])
    assert merged.failed_nodes == (FailedNode(name="gpu-2", reason="HardwareFailureDetected",
                                              message="Hardware failure detected by node health check"),)
    assert hardware_message(merged.failed_nodes) == "Hardware failure detected on node(s): [gpu-2]"


def test_the_nodes_checked_are_those_of_running_and_pending_pods() -> None:
    pods = [pod(f"p-{phase}", node=f"node-{phase}", phase=phase) for phase in ("Running", "Pending", "Succeeded",
                                                                              "Failed", "Unknown")]
    assert pod_nodes(pods) == ("node-Pending", "node-Running")


# -- pkg/nodemonitor/cel/detector.go: the Node's defaults and the bool check; the Job CRD's maxLength 2048 ---------

def test_a_bare_node_gets_cres_defaults() -> None:
    assert node_health("size(node.metadata.labels) == 0 && size(node.metadata.annotations) == 0"
                       " && size(node.spec.taints) == 0 && node.spec.unschedulable == false"
                       " && size(node.status.conditions) == 0 && size(node.status.addresses) == 0"
                       " && size(node.status.capacity) == 0 && size(node.status.allocatable) == 0", {})


def test_an_expression_that_is_not_bool_is_refused_in_cres_words() -> None:
    assert check("node.spec.unschedulable", "node") == "CEL expression must return bool, got dyn"
    assert check("value + 1.0", "value") == "expression must return bool, got double"  # pkg/threshold


@pytest.mark.parametrize(("expression", "type_name"), [
    ("null", "null_type"), ('timestamp("2024-01-01T00:00:00Z")', "google.protobuf.Timestamp"),
    ('duration("1s")', "google.protobuf.Duration"), ("[1]", "list(int)"),
])
def test_a_type_is_named_as_cel_go_names_it(expression: str, type_name: str) -> None:
    """The `got <type>` of the message above is cel-go's `Type.String()`, as CRE's detector formats it."""
    assert check(expression, "node") == f"CEL expression must return bool, got {type_name}"


def test_an_expression_is_at_most_2048_characters() -> None:
    """helm/cluster-readiness-engine/crds/nvcre.nvidia.com_jobs.yaml: `nodeHealthMonitor.cel.expression`."""
    assert too_long("x" * 2048) == ""
    assert too_long("x" * 2049) == "should be at most 2048 chars long"


# -- pkg/controller/job_threshold_helpers.go and pkg/threshold/evaluator.go: thresholds ----------------------------

def test_an_unknown_key_names_cres_registry_in_its_order() -> None:
    assert decide_validation({"nope": "value > 1"}, {}, NOW, timedelta(minutes=5), NOW, {}) == Verdict(
        True, "UnknownThresholdKey", "unknown threshold key(s) [nope]; valid keys: "
        "[busBandwidthGBps, algBandwidthGBps, goodputRatio, avgTFLOPsPerGPU, avgStepTimeSec]")


@pytest.mark.parametrize(("waited", "verdict"), [
    (timedelta(minutes=5), Waiting(("goodputRatio",), timedelta(minutes=5), timedelta(0))),
    (timedelta(minutes=5) + SECOND,
     Verdict(True, "MeasurementTimeout", "Measurement data not available within 5m0s for keys: [goodputRatio]")),
], ids=["5m-waits", "5m-and-a-second-times-out"])
def test_the_measurement_timeout_defaults_to_5m(waited: timedelta, verdict: Verdict | Waiting) -> None:
    timeout = measurement_timeout(None)
    assert decide_validation({"goodputRatio": "value > 0.5"}, {}, NOW - waited, timeout, NOW, {}) == verdict


def test_thresholds_met_say_so_in_cres_words() -> None:
    from functions.domain.cel import CelOutcome

    assert decide_validation({"goodputRatio": "value > 0.5"}, {"goodputRatio": 0.9}, NOW, timedelta(minutes=5), NOW,
                             {"goodputRatio": CelOutcome(True)}) == Verdict(
        False, "ThresholdsMet", "All performance thresholds satisfied")


def test_measured_values_come_from_cres_status_fields() -> None:
    complete = [{"type": "Complete", "status": "True", "reason": "JobSucceeded"}]  # final: CRE's bandwidthFinal
    gm = {"spec": {"jobRef": {"name": "llm"}},
          "status": {"conditions": complete, "result": "0.9", "avgTFLOPSPerGPU": "400", "avgStepTimeSec": "2.5"}}
    bm = {"spec": {"jobRef": {"name": "llm"}},
          "status": {"conditions": complete, "results": [{"busBW": "350.5", "algBW": "200"}]}}
    assert measured_values("llm", "job-uid", [gm], [bm], "nvcre.nvidia.com") == {
        "busBandwidthGBps": 350.5, "algBandwidthGBps": 200.0, "goodputRatio": 0.9, "avgTFLOPsPerGPU": 400.0,
        "avgStepTimeSec": 2.5}


# -- the WorkloadRun controller and the WorkloadRun CRD's defaults (ADR-082 for gpusPerNode) -----------------------

def test_a_workload_run_without_orchestration_gets_a_24h_timeout() -> None:
    assert job_annotations({}) == {"crefn.dev/timeout-per-job": "24h"}


def test_the_gang_scheduler_queue_defaults() -> None:
    assert workload_labels({"gangScheduler": {}}) == {"kai.scheduler/queue": "default-queue"}


def test_the_default_node_health_expression() -> None:
    assert job_fields({})["nodeHealthMonitor"] == {"cel": {"expression": "node.spec.unschedulable == true"}}


def test_cres_base_nccl_environment() -> None:
    """`pkg/platform/nccl.go` `BaseNCCLEnvVars`: exactly these nine, in this order (no `NCCL_DEBUG_SUBSYS`)."""
    assert nccl_env({"enableMNNVL": True}, []) == [
        {"name": "NCCL_DEBUG", "value": "INFO"}, {"name": "NCCL_NVLS_ENABLE", "value": "1"},
        {"name": "NCCL_CUMEM_ENABLE", "value": "1"}, {"name": "NCCL_NET_GDR_C2C", "value": "1"},
        {"name": "NCCL_NET_GDR_LEVEL", "value": "PHB"}, {"name": "NCCL_P2P_NET_CHUNKSIZE", "value": "2097152"},
        {"name": "NCCL_SHM_DISABLE", "value": "1"}, {"name": "NCCL_MNNVL_ENABLE", "value": "1"},
        {"name": "NCCL_SOCKET_IFNAME", "value": "eth0"}]


def test_mpirun_is_bounded_by_an_hour_with_cres_ssh_options() -> None:
    """`buildJobTemplate`: `timeout 3600 <mpirunPath> -N <gpus> --allow-run-as-root --mca plm_rsh_args "<ssh>"`."""
    command, args = mpi_launch({"mpirunPath": "/usr/bin/mpirun", "binary": "/bench"}, 8, [])
    assert command == ["timeout", "3600", "/usr/bin/mpirun"]
    assert args == ["-N", "8", "--allow-run-as-root", "--mca", "plm_rsh_args",
                    "-o StrictHostKeyChecking=no -o ConnectionAttempts=10", "/bench"]


def workloadrun(name: str, framework: dict[str, Any], **spec: Any) -> dict[str, Any]:
    """A WorkloadRun `name` of image `img` on one node (unless `spec` says otherwise) running `framework`."""
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "WorkloadRun",
            "metadata": {"name": name, "namespace": "ns", "uid": "u"},
            "spec": {"image": "img", "numNodes": 1, **spec, "framework": framework}}


def test_mpi_ranks_get_the_whole_merged_environment() -> None:
    """`MPIEnvArgs` (testdata `mpi-forwards-env-to-ranks`, `mpi-keeps-spec-env`): the base NCCL set and the
    user's `env` forwarded to the ranks in the merged order; a variable the user's mpiArgs `-x` is theirs."""
    run = workloadrun("bench", {"mpi": {"mpirunPath": "/usr/bin/mpirun", "binary": "/bench",
                                        "mpiArgs": ["-x", "NCCL_IB_HCA"]}}, numNodes=2, gpusPerNode=4,
                      env=[{"name": "NCCL_IB_HCA", "value": "mlx5"}, {"name": "NCCL_DEBUG", "value": "WARN"}])
    args = translate(run).job["spec"]["workload"]["trainJob"]["trainer"]["args"]
    assert args == ["-N", "4", "--allow-run-as-root", "--mca", "plm_rsh_args",
                    "-o StrictHostKeyChecking=no -o ConnectionAttempts=10",
                    "-x", "NCCL_NVLS_ENABLE=1", "-x", "NCCL_CUMEM_ENABLE=1", "-x", "NCCL_NET_GDR_C2C=1",
                    "-x", "NCCL_NET_GDR_LEVEL=PHB", "-x", "NCCL_P2P_NET_CHUNKSIZE=2097152", "-x", "NCCL_SHM_DISABLE=1",
                    "-x", "NCCL_MNNVL_ENABLE=0", "-x", "NCCL_SOCKET_IFNAME=eth0", "-x", "NCCL_DEBUG=WARN",
                    "-x", "NCCL_IB_HCA", "/bench"]
    launcher, worker = translate(run).runtime["spec"]["template"]["spec"]["replicatedJobs"]
    for replicated in (launcher, worker):  # the sshd workers and the launcher alike carry the merged env
        (container,) = replicated["template"]["spec"]["template"]["spec"]["containers"]
        assert [e["name"] for e in container["env"]][-2:] == ["NCCL_IB_HCA", "NCCL_DEBUG"]


def test_an_exec_script_in_the_config_can_run() -> None:
    """`buildWorkflowSpec`: the config volume `config-volume`, from `<run>-config`, mode 0755, at `/config`, writable
    mount (not read-only), so that `/config/run.sh` runs."""
    run = workloadrun("bench", {"exec": {"command": ["/config/run.sh"]}},
                      config={"inline": {"run.sh": "#!/bin/sh\necho ok\n"}})
    (replicated,) = translate(run).runtime["spec"]["template"]["spec"]["replicatedJobs"]
    pod = replicated["template"]["spec"]["template"]["spec"]
    assert {"name": "config-volume", "configMap": {"name": "bench-config", "defaultMode": 0o755}} in pod["volumes"]
    assert {"name": "config-volume", "mountPath": "/config"} in pod["containers"][0]["volumeMounts"]


def test_a_runs_job_is_named_as_cre_names_it() -> None:
    """`getGroupJobName` (testdata `get-group-job-name/unpinned-single-group`): `<run>-job`."""
    run = workloadrun("nccl-allreduce", {"exec": {"command": ["true"]}})
    assert translate(run).job["metadata"]["name"] == "nccl-allreduce-job"


def test_rdma_nics_default_to_mlnxnics() -> None:
    """The CRD's `mlnxPerNode`: a count of `nvidia.com/mlnxnics` unless `nicResourceName` names another."""
    assert nic_resources({"mlnxPerNode": 2}) == {"nvidia.com/mlnxnics": "2"}


@pytest.mark.parametrize(("field", "default", "other"), [
    ("testScale", "full-scale", "intra-node"), ("repeatCount", 1, 2), ("repeatCount", 1, 0),
    ("maxConcurrent", 0, 1), ("maxConcurrent", 0, -1), ("placement", "Unpinned", "Pinned"),
])
def test_the_workflow_fields_are_accepted_only_at_their_single_job_value(field: str, default: object,
                                                                        other: object) -> None:
    check_workflow_fields({"orchestration": {field: default}})
    with pytest.raises(InvalidSpec, match=f"spec.orchestration.{field}: "):
        check_workflow_fields({"orchestration": {field: other}})


def test_gpus_per_node_default_to_4_when_the_architecture_is_unknown() -> None:
    """The GPU catalog's `fallbackGpusPerNode` (4): no node found, none naming its GPU, or an unlisted product."""
    run = workloadrun("run", {"exec": {"command": ["true"]}})
    unlabelled = [{"metadata": {"name": f"n{i}", "labels": {"nvidia.com/gpu.present": "true"}}} for i in (1, 2)]
    gh200 = [{"metadata": {"name": f"n{i}", "labels": {"nvidia.com/gpu.present": "true",
                                                      "nvidia.com/gpu.product": "NVIDIA-GH200-480GB"}}} for i in (1, 2)]
    for nodes in (None, [], unlabelled, gh200):
        (replicated,) = translate(run, nodes=nodes).runtime["spec"]["template"]["spec"]["replicatedJobs"]
        (container,) = replicated["template"]["spec"]["template"]["spec"]["containers"]
        assert container["resources"]["limits"]["nvidia.com/gpu"] == "4"


@pytest.mark.parametrize(("product", "gpus", "mnnvl"), [
    ("NVIDIA-H100-80GB-HBM3", 8, False), ("NVIDIA-A100-SXM4-80GB", 8, False), ("NVIDIA-GB200-NVL72", 4, True),
    ("NVIDIA-GB300-NVL72", 4, True), ("NVIDIA-B300", 8, False),
], ids=["h100", "a100", "gb200", "gb300", "hgx-b300"])
def test_gpus_per_node_and_mnnvl_from_the_gpu_product(product: str, gpus: int, mnnvl: bool) -> None:
    """The WorkloadRun CRD (`gpusPerNode`: "8 for H100/A100, 4 for GB200/GB300"; `enableMNNVL`: "enabled for
    GB200/GB300"), `helpers.go` `DefaultEnableMNNVL` (`gpuArch == "gb200" || gpuArch == "gb300"`; HGX B300
    stays false, ADR-094), `pkg/gpu/product.go` `ParseProduct`; nodes selected by `nvidia.com/gpu.present`."""
    found = hardware(target_nodes({}, [{"metadata": {"name": "n", "labels": {
        "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": product}}}]))
    assert (gpus_per_node({}, found), enable_mnnvl({}, found)) == (gpus, mnnvl)


def test_the_bandwidth_measurement_names_its_jobs_uid() -> None:
    """`job_controller.go` `annotationJobUID`: the BandwidthMeasurement's annotation naming the Job's uid."""
    assert job_uid_annotation("nvcre.nvidia.com") == "nvcre.nvidia.com/job-uid"


def test_workflow_conditions_in_cres_words() -> None:
    assert deleted() == ConditionSummary(type="Failed", reason="WorkflowDeleted", message="Workflow was deleted")
    assert mirrored("run", [cond("Succeeded", "True", "WorkloadCompleted", "done")]) == ConditionSummary(
        type="Succeeded", reason="WorkflowSucceeded", message="Workflow completed successfully")
    hardware = [cond("Failed", "True", "WorkloadFailed", "boom"), cond("HardwareFailed", "True", "H", "")]
    assert mirrored("run", hardware) == ConditionSummary(
        type="Failed", reason="WorkflowFailed",
        message="1 groups failed across 1 iterations; hardware failures occurred on one or more nodes")
    assert mirrored("run", [cond("Succeeded", "True", "WorkloadCompleted", "done"),
                            cond("ValidationFailed", "True", "ThresholdViolation", "x")]) == ConditionSummary(
        type="Failed", reason="WorkflowValidationFailed", message="1 groups failed across 1 iterations")


# -- pkg/workload, the workload builder: a Job whose workload names no type ----------------------------------------

def test_a_job_without_a_workload_type_fails_in_cres_words() -> None:
    plan = decide_launch(LaunchObserved(job(train_job=False), None), Settings(), NOW, "launch", None)
    (write,) = [e for e in plan.effects if isinstance(e, WriteStatus)]
    (failed,) = [c for c in write.status["conditions"] if c["status"] == "True"]
    assert (failed["type"], failed["reason"], failed["message"]) == (
        "Failed", "WorkloadCreationError", "Unsupported workload type: no workload type specified in WorkloadSpec")
