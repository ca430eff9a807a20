"""Data models of every event this project emits (SPEC §4.2): the public contract.

JSON field names are camelCase. `make schemas` writes their JSON Schemas into `events/schemas/`;
a test keeps the committed files in step with these models.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from events.types import EventType, Phase


class EventData(BaseModel):
    # defer_build: a model's validator is built on its first use, so a served function pays only for the
    # models its handler uses (the cold start), not for the whole catalog at import
    # an empty list's or dict's factory is a lambda, not `list` or `dict`: pydantic asks each factory's signature,
    # and a builtin's is parsed from its text by the tokenizer, whose patterns take 4 ms to compile on first use
    model_config = ConfigDict(
        frozen=True, extra="ignore", alias_generator=to_camel, populate_by_name=True, defer_build=True
    )


class JobRef(EventData):
    name: str
    namespace: str


class WorkloadRef(EventData):
    """A workload: as a Job's `status.workloadRef` holds it (apiVersion, kind, name, namespace), and as
    events carry it (with the TrainJob's uid, resourceVersion and attempt label)."""

    api_version: str
    kind: str
    name: str
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    attempt: int | None = Field(default=None, description="the crefn.dev/attempt label, when present")


class ConditionSummary(EventData):
    type: str
    reason: str = ""
    message: str = ""


class FailedNode(EventData):
    """A Job's `status.failedNodes` entry."""

    name: str
    reason: str
    message: str = ""


class FailureInfo(EventData):
    """Which container failed the workload, where, and how (a Job's `failureLog` without its log; the
    CRD requires podName, nodeName and exitCode, so they are always sent)."""

    pod_name: str
    node_name: str
    exit_code: int
    reason: str = ""


class FailureLog(FailureInfo):
    """A Job's `status.failureLog`: the failed container and the end of its log."""

    tail: str = ""


class WorkloadPhaseData(EventData):
    """`dev.crefn.workload.phase`: the WorkloadPhase of a Job's TrainJob."""

    job: JobRef
    workload: WorkloadRef
    phase: Phase
    reason: str = ""
    message: str = ""
    observed_at: AwareDatetime
    failed_before: bool | None = Field(default=None, description="for a deleted TrainJob: whether its last state "
                                                                 "was Failed (its failure was reported then); "
                                                                 "absent when not known")
    created: bool | None = Field(default=None, description="true for the TrainJob's creation, before anything has "
                                                           "written its status: the function that created it "
                                                           "decides its first phase; absent otherwise")


class WorkloadCreatedData(EventData):
    """`dev.crefn.workload.created`: launch created or adopted a Job's TrainJob."""

    job: JobRef
    workload: WorkloadRef
    attempt: int
    adopted: bool
    measurements: list[Literal["goodput", "bandwidth"]] | None = Field(
        default=None, description="the measurements the Job's spec asks for (none: `measurements` has nothing to "
                                  "do); absent from earlier releases' events")


class JobConditionChangedData(EventData):
    """`dev.crefn.job.condition.changed`: the True exclusive condition of a Job or its reason changed."""

    job: JobRef
    previous: ConditionSummary | None = None
    new: ConditionSummary
    restart_count: int = 0
    workload: WorkloadRef | None = None
    failed_nodes: list[FailedNode] = Field(default_factory=lambda: [])
    failure: FailureInfo | None = Field(default=None, description="for a Failed verdict: the Job's failureLog "
                                                                  "without its log tail")
    workload_run: str | None = Field(default=None, description="the WorkloadRun that controls the Job, '' when "
                                                               "none; absent from earlier releases' events")


class JobRestartedData(EventData):
    """`dev.crefn.job.restarted`: a Job's failed TrainJob was deleted for a checkpoint restart."""

    job: JobRef
    attempt: int
    max_restarts: int
    previous_workload: WorkloadRef
    not_before: datetime
    failure: FailureInfo | None = Field(default=None, description="the failed attempt's container, as a "
                                                                  "failureLog would record it")


class JobDeadlineData(EventData):
    """`dev.crefn.job.deadline`: a Job's wall-clock bound (`crefn.dev/timeout-per-job`) has run out."""

    job: JobRef
    attempt: int
    elapsed_seconds: float
    timeout_seconds: float
    blocked: bool = Field(description="the pods were scheduling-blocked when the time ran out")


class JobCheckData(EventData):
    """`dev.crefn.job.check`: the resync tick asks for a Job's clock-driven checks (node health, thresholds,
    the measurements' existence)."""

    job: JobRef
    attempt: int
    checks: list[Literal["nodehealth", "validation", "measurements"]]


class WorkloadStalledData(EventData):
    """`dev.crefn.workload.stalled`: the running-path decision found the attempt's training stalled."""

    job: JobRef
    workload: WorkloadRef
    mode: Literal["startup", "training"]
    elapsed_seconds: float
    threshold_seconds: float
    message: str


class JobHardwareFailedData(EventData):
    """`dev.crefn.job.hardware.failed`: a node of the Job's pods failed its health expression."""

    job: JobRef
    nodes: list[str] = Field(description="the nodes newly found unhealthy")
    failed_nodes: list[FailedNode] = Field(default_factory=lambda: [],
                                           description="the Job's failedNodes after the write")
    message: str
    action: Literal["report", "restart"] = "report"


class JobValidationData(EventData):
    """`dev.crefn.job.validation`: a Succeeded Job's thresholds were decided (`ValidationFailed`)."""

    job: JobRef
    failed: bool
    reason: str
    message: str
    failed_nodes: list[FailedNode] = Field(default_factory=lambda: [])


class AlertData(EventData):
    """`dev.crefn.alert`: an alert as the `alert` function sends it to a CloudEvents sink (not the Broker)."""

    alertname: str
    status: Literal["firing", "resolved"]
    severity: Literal["critical", "warning"]
    job: JobRef
    reason: str
    summary: str
    description: str
    starts_at: datetime
    ends_at: datetime | None = None
    labels: dict[str, str] = Field(default_factory=lambda: {})


class ParityField(EventData):
    """One verdict field of a parity check: CRE's value (as the Job says it) and the functions'."""

    field: str
    result: Literal["agree", "differ"]
    cre: str
    functions: str


class ParityCheckedData(EventData):
    """`dev.crefn.parity.checked`: a verdict CRE wrote on a Job, compared field by field with the functions'
    (observe mode). `check` is the same for the same verdicts on the same Job (a redelivery checks nothing new)."""

    job: JobRef
    check: str
    verdict: str
    result: Literal["agree", "differ"]
    fields: list[ParityField]
    inputs: dict[str, str] = Field(default_factory=lambda: {})
    """The resourceVersions the check was decided on, by kind."""
    observed_at: datetime


DATA_MODELS: dict[EventType, type[EventData]] = {
    EventType.WORKLOAD_PHASE: WorkloadPhaseData,
    EventType.WORKLOAD_CREATED: WorkloadCreatedData,
    EventType.JOB_CONDITION_CHANGED: JobConditionChangedData,
    EventType.JOB_RESTARTED: JobRestartedData,
    EventType.JOB_DEADLINE: JobDeadlineData,
    EventType.JOB_CHECK: JobCheckData,
    EventType.WORKLOAD_STALLED: WorkloadStalledData,
    EventType.JOB_HARDWARE_FAILED: JobHardwareFailedData,
    EventType.JOB_VALIDATION: JobValidationData,
    EventType.ALERT: AlertData,
    EventType.PARITY_CHECKED: ParityCheckedData,
}

EXTENSIONS: dict[EventType, tuple[str, ...]] = {
    EventType.WORKLOAD_PHASE: ("workloadphase", "namespace", "job", "partitionkey"),
    EventType.WORKLOAD_CREATED: ("namespace", "job", "partitionkey"),
    EventType.JOB_CONDITION_CHANGED: ("namespace", "job", "jobcondition", "partitionkey"),
    EventType.JOB_RESTARTED: ("namespace", "job", "partitionkey"),
    EventType.JOB_DEADLINE: ("namespace", "job", "partitionkey"),
    EventType.JOB_CHECK: ("namespace", "job", "partitionkey"),
    EventType.WORKLOAD_STALLED: ("namespace", "job", "partitionkey"),
    EventType.JOB_HARDWARE_FAILED: ("namespace", "job", "partitionkey"),
    EventType.JOB_VALIDATION: ("namespace", "job", "partitionkey"),
    EventType.ALERT: ("namespace", "job", "partitionkey", "alertname", "alertstatus", "severity"),
    EventType.PARITY_CHECKED: ("namespace", "job", "partitionkey", "parityresult"),
}
"""The extension attributes every emitted event of a type carries."""
