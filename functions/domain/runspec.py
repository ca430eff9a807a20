"""The WorkloadRun fields beyond the workload itself, as CRE's WorkloadRun controller reads them. Pure.

Every field of the WorkloadRun CRD is carried into what the project generates, or refused with
`InvalidSpec` naming the field and why — nothing is dropped silently: carried onto the Job
(`thresholds`, the measurements, `workloadMetadata`, `nodeHealthMonitor`, `orchestration.timeoutPerJob`),
carried into every pod of the TrainingRuntime (scheduler, init containers, RDMA NICs, CRE's NCCL
environment, the target's node affinity: `functions.domain.placement`), or refused unless left at their
single-Job default, because their meaning needs CRE's Workflow tier. `gpusPerNode` and `enableMNNVL`
default from the target nodes' GPU architecture; NICs are requested only when `mlnxPerNode` is set.
The field table: docs/functions.md#workloadruns-torch-mpi-exec
"""

from __future__ import annotations

import re
from typing import Any

from events.types import TIMEOUT_ANNOTATION
from functions.runtime.durations import parse_go_duration

DEFAULT_TIMEOUT = "24h"
DEFAULT_QUEUE = "default-queue"
DEFAULT_QUEUE_LABEL = "kai.scheduler/queue"
DEFAULT_NIC_RESOURCE = "nvidia.com/mlnxnics"
NODE_HEALTH_DEFAULT = "node.spec.unschedulable == true"
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
BASE_NCCL_ENV = (
    ("NCCL_DEBUG", "INFO"), ("NCCL_NVLS_ENABLE", "1"), ("NCCL_CUMEM_ENABLE", "1"), ("NCCL_NET_GDR_C2C", "1"),
    ("NCCL_NET_GDR_LEVEL", "PHB"), ("NCCL_P2P_NET_CHUNKSIZE", "2097152"), ("NCCL_SHM_DISABLE", "1"),
    ("NCCL_MNNVL_ENABLE", None), ("NCCL_SOCKET_IFNAME", "eth0"),
)
"""CRE's `BaseNCCLEnvVars`, in its order; `NCCL_MNNVL_ENABLE` is the run's (`mnnvl`)."""
MPI_TIMEOUT_SECONDS = 3600
SSH_OPTIONS = "-o StrictHostKeyChecking=no -o ConnectionAttempts=10"
WORKFLOW_DEFAULTS: tuple[tuple[str, object], ...] = (
    ("testScale", "full-scale"), ("repeatCount", 1), ("maxConcurrent", 0), ("placement", "Unpinned"),
)
WORKFLOW_ONLY = "needs CRE's Workflow tier (many Jobs over a node inventory); a WorkloadRun here runs one Job"


class InvalidSpec(ValueError):
    """A WorkloadRun spec that cannot be translated; the message names the field."""


def check_workflow_fields(spec: dict[str, Any]) -> None:
    orchestration = spec.get("orchestration") or {}
    for key, default in WORKFLOW_DEFAULTS:
        if key in orchestration and orchestration[key] != default:
            raise InvalidSpec(f"spec.orchestration.{key}: {orchestration[key]!r} {WORKFLOW_ONLY} "
                              f"(leave it unset or {default!r})")
    if spec.get("overrides"):
        raise InvalidSpec(f"spec.overrides {WORKFLOW_ONLY} (leave it unset)")
    timeout = orchestration.get("timeoutPerJob", DEFAULT_TIMEOUT)
    try:
        if parse_go_duration(str(timeout)).total_seconds() <= 0:
            raise ValueError(timeout)
    except ValueError:
        raise InvalidSpec(f"spec.orchestration.timeoutPerJob: {timeout!r} is not a positive duration "
                          "(e.g. 30m, 24h)") from None
    if spec.get("nicResourceName") and spec.get("mlnxPerNode") is None:
        raise InvalidSpec("spec.nicResourceName needs spec.mlnxPerNode (the count per node): it cannot be "
                          "detected from the GPU architecture here")


def workload_labels(spec: dict[str, Any]) -> dict[str, str]:
    """`workloadMetadata.labels`, plus the gang scheduler's queue label; a conflicting value is refused."""
    labels = dict((spec.get("workloadMetadata") or {}).get("labels") or {})
    gang = spec.get("gangScheduler")
    if gang is None:
        return labels
    key = gang.get("queueLabelKey") or DEFAULT_QUEUE_LABEL
    queue = gang.get("queue") or DEFAULT_QUEUE
    if not LABEL_VALUE.match(queue) or len(queue) > 63:
        raise InvalidSpec(f"spec.gangScheduler.queue: {queue!r} is not a label value")
    if key in labels and labels[key] != queue:
        raise InvalidSpec(f"spec.workloadMetadata.labels[{key!r}]: {labels[key]!r} conflicts with the gang "
                          f"scheduler's queue {queue!r}")
    return {**labels, key: queue}


def job_fields(spec: dict[str, Any]) -> dict[str, Any]:
    """What the generated Job's spec carries besides the workload and the checkpoint."""
    fields: dict[str, Any] = {key: spec[key] for key in ("thresholds", "goodputMeasurement", "bandwidthMeasurement")
                              if spec.get(key) is not None}
    if labels := workload_labels(spec):
        fields["workloadMetadata"] = {"labels": labels}
    fields["nodeHealthMonitor"] = {"cel": {"expression": NODE_HEALTH_DEFAULT}}
    return fields


def job_annotations(spec: dict[str, Any]) -> dict[str, str]:
    return {TIMEOUT_ANNOTATION: str((spec.get("orchestration") or {}).get("timeoutPerJob") or DEFAULT_TIMEOUT)}


def mnnvl(spec: dict[str, Any]) -> str:
    return "1" if spec.get("enableMNNVL") else "0"


def nccl_env(spec: dict[str, Any], user_env: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """CRE's `MergeEnvVars`: the base NCCL variables the user does not set, in their order, then the user's."""
    mine = {e.get("name") for e in user_env}
    base = [{"name": k, "value": mnnvl(spec) if v is None else v} for k, v in BASE_NCCL_ENV if k not in mine]
    return base + user_env


def nic_resources(spec: dict[str, Any]) -> dict[str, str]:
    count = spec.get("mlnxPerNode")
    if not count:
        return {}  # unset: no catalog to derive it from; 0: an opt-out
    return {str(spec.get("nicResourceName") or DEFAULT_NIC_RESOURCE): str(count)}


def pod_fields(spec: dict[str, Any]) -> dict[str, Any]:
    """What every pod of the workload carries besides its containers and volumes."""
    fields: dict[str, Any] = {}
    if spec.get("imagePullSecrets"):
        fields["imagePullSecrets"] = list(spec["imagePullSecrets"])
    if spec.get("initContainers"):
        fields["initContainers"] = list(spec["initContainers"])
    if (spec.get("gangScheduler") or {}).get("schedulerName"):
        fields["schedulerName"] = spec["gangScheduler"]["schedulerName"]
    return fields


def mpi_launch(fw: dict[str, Any], gpus: int, env: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """mpirun as CRE launches it (`buildJobTemplate`): bounded by `timeout 3600`, `-N` ranks per node, as root,
    ssh options for the workers, every variable of the run's merged `env` forwarded to the ranks (which start
    under sshd with a fresh environment), then the user's mpiArgs, the binary and its args."""
    mpi_args = list(fw.get("mpiArgs") or [])
    args = ["-N", str(gpus), "--allow-run-as-root", "--mca", "plm_rsh_args", SSH_OPTIONS,
            *forwarded(env, mpi_args), *mpi_args, fw["binary"], *list(fw.get("args") or [])]
    return ["timeout", str(MPI_TIMEOUT_SECONDS), fw["mpirunPath"]], args


def forwarded(env: list[dict[str, Any]], mpi_args: list[str]) -> list[str]:
    """CRE's `MPIEnvArgs`: `-x NAME=value` for each variable (a `valueFrom` one by its bare name, which mpirun
    reads from the launcher's own resolved environment), skipping a name the mpiArgs already `-x`."""
    own = {mpi_args[i + 1].split("=", 1)[0] for i in range(len(mpi_args) - 1) if mpi_args[i] == "-x"}
    return [arg for e in env if e["name"] not in own
            for arg in ("-x", e["name"] if "valueFrom" in e else f"{e['name']}={e.get('value', '')}")]
