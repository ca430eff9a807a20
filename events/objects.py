"""Pydantic models of the Kubernetes objects the functions read (SPEC §2).

Only the fields the code uses are declared; unknown fields are ignored, because Trainer and CRE
releases differ (`runtimePatches` vs `podTemplateOverrides`, the early `Created` condition, ...).
Models are frozen: a decision never mutates what it read.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from events.emitted import FailedNode, FailureLog, WorkloadRef


class KubeModel(BaseModel):
    """Base of every Kubernetes model: camelCase on the wire, unknown fields ignored, frozen."""

    # defer_build: a model's validator is built on its first use, so a served function pays only for the
    # models its handler uses (the cold start), not for the whole catalog at import
    # an empty list's or dict's factory is a lambda, not `list` or `dict`: pydantic asks each factory's signature,
    # and a builtin's is parsed from its text by the tokenizer, whose patterns take 4 ms to compile on first use
    model_config = ConfigDict(
        frozen=True, extra="ignore", alias_generator=to_camel, populate_by_name=True, defer_build=True
    )


class OwnerReference(KubeModel):
    api_version: str
    kind: str
    name: str
    uid: str = ""
    controller: bool = False


class ObjectMeta(KubeModel):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    creation_timestamp: datetime | None = None
    labels: dict[str, str] = Field(default_factory=lambda: {})
    annotations: dict[str, str] = Field(default_factory=lambda: {})
    owner_references: list[OwnerReference] = Field(default_factory=lambda: [])
    deletion_timestamp: datetime | None = None
    finalizers: list[str] = Field(default_factory=lambda: [])


class Condition(KubeModel):
    type: str
    status: str
    reason: str = ""
    message: str = ""
    observed_generation: int | None = None
    last_transition_time: datetime | None = None


class KubeObject(KubeModel):
    """Any object: enough to tell what it is and who owns it."""

    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    def controller_owner(self) -> OwnerReference | None:
        return next((ref for ref in self.metadata.owner_references if ref.controller), None)


class TrainJobSpec(KubeModel):
    suspend: bool = False
    managed_by: str = ""


class TrainJobStatus(KubeModel):
    conditions: list[Condition] = Field(default_factory=lambda: [])


class TrainJob(KubeObject):
    """Kubeflow Trainer v2 TrainJob: only what the adapter reads (SPEC §3)."""

    spec: TrainJobSpec = Field(default_factory=TrainJobSpec)
    status: TrainJobStatus = Field(default_factory=TrainJobStatus)


class Checkpoint(KubeModel):
    pvc_name: str
    max_restarts: int = 0


class WorkloadMetadata(KubeModel):
    labels: dict[str, str] = Field(default_factory=lambda: {}, max_length=32)


class JobWorkload(KubeModel):
    train_job: dict[str, Any] | None = None


class GoodputMeasurementSpec(KubeModel):
    log_profile_ref: str = ""
    sample_interval: str = ""
    """A Go duration (`60s`, `1m30s`); CRE's default is 60s."""


class BandwidthMeasurementSpec(GoodputMeasurementSpec):
    test_type: str = ""


class CelExpression(KubeModel):
    expression: str


class NodeHealthMonitor(KubeModel):
    cel: CelExpression | None = None


class JobSpec(KubeModel):
    workload: JobWorkload = Field(default_factory=JobWorkload)
    checkpoint: Checkpoint | None = None
    workload_metadata: WorkloadMetadata = Field(default_factory=WorkloadMetadata)
    goodput_measurement: GoodputMeasurementSpec | None = None
    bandwidth_measurement: BandwidthMeasurementSpec | None = None
    stall_multiplier: int | None = None
    startup_stall_timeout_seconds: int | None = None
    node_health_monitor: NodeHealthMonitor | None = None
    thresholds: dict[str, str] = Field(default_factory=lambda: {})
    measurement_timeout: str | None = None
    scheduling_stall_grace_seconds: int | None = None
    """How long pods may stay unschedulable before the Job says so (CRE's default: 300)."""


class JobStatus(KubeModel):
    conditions: list[Condition] = Field(default_factory=lambda: [])
    workload_ref: WorkloadRef | None = None
    workload_start_time: datetime | None = None
    restart_count: int = 0
    failed_nodes: list[FailedNode] = Field(default_factory=lambda: [])
    failure_log: FailureLog | None = None
    scheduling_blocked_since: datetime | None = None
    scheduling_resumed_time: datetime | None = None


class CreJob(KubeObject):
    """CRE `Job` (group `nvcre.nvidia.com`, or `cre.nvidia.com` in early releases)."""

    spec: JobSpec = Field(default_factory=JobSpec)
    status: JobStatus = Field(default_factory=JobStatus)


class ContainerTerminated(KubeModel):
    exit_code: int = 0
    reason: str = ""


class ContainerState(KubeModel):
    terminated: ContainerTerminated | None = None


class ContainerStatus(KubeModel):
    name: str
    state: ContainerState = Field(default_factory=ContainerState)


class PodSpec(KubeModel):
    node_name: str = ""


class PodStatus(KubeModel):
    phase: str = ""
    conditions: list[Condition] = Field(default_factory=lambda: [])
    container_statuses: list[ContainerStatus] = Field(default_factory=lambda: [])


class Pod(KubeObject):
    """A workload's pod: placement, scheduling condition and container exits."""

    spec: PodSpec = Field(default_factory=PodSpec)
    status: PodStatus = Field(default_factory=PodStatus)


class WorkloadRunStatus(KubeModel):
    conditions: list[Condition] = Field(default_factory=lambda: [])


class WorkloadRun(KubeObject):
    """CRE `WorkloadRun`: the spec is kept raw here; the translator validates it field by field."""

    spec: dict[str, Any] = Field(default_factory=lambda: {})
    status: WorkloadRunStatus = Field(default_factory=WorkloadRunStatus)
