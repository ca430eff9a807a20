"""Event types, phases and the fixed names of SPEC §2 and §4, as str-enums and constants."""

from enum import StrEnum
from typing import Final


class ApiServerType(StrEnum):
    """Types sent by Knative's ApiServerSource (Resource and Reference modes) and PingSource."""

    RESOURCE_ADD = "dev.knative.apiserver.resource.add"
    RESOURCE_UPDATE = "dev.knative.apiserver.resource.update"
    RESOURCE_DELETE = "dev.knative.apiserver.resource.delete"
    REF_ADD = "dev.knative.apiserver.ref.add"
    REF_UPDATE = "dev.knative.apiserver.ref.update"
    REF_DELETE = "dev.knative.apiserver.ref.delete"
    PING = "dev.knative.sources.ping"


class EventType(StrEnum):
    """Types this project emits (SPEC §4.2)."""

    WORKLOAD_PHASE = "dev.crefn.workload.phase"
    WORKLOAD_CREATED = "dev.crefn.workload.created"
    JOB_CONDITION_CHANGED = "dev.crefn.job.condition.changed"
    JOB_RESTARTED = "dev.crefn.job.restarted"
    JOB_DEADLINE = "dev.crefn.job.deadline"
    JOB_CHECK = "dev.crefn.job.check"
    WORKLOAD_STALLED = "dev.crefn.workload.stalled"
    JOB_HARDWARE_FAILED = "dev.crefn.job.hardware.failed"
    JOB_VALIDATION = "dev.crefn.job.validation"
    ALERT = "dev.crefn.alert"
    PARITY_CHECKED = "dev.crefn.parity.checked"


class Phase(StrEnum):
    """The WorkloadPhase computed by the workload adapter (SPEC §3)."""

    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


TRAINER_GROUP: Final = "trainer.kubeflow.org"
TRAINER_VERSION: Final = "v1alpha1"
TRAINJOB_API_VERSION: Final = f"{TRAINER_GROUP}/{TRAINER_VERSION}"
TRAINJOB_KIND: Final = "TrainJob"

CRE_GROUP_DEFAULT: Final = "nvcre.nvidia.com"
CRE_VERSION: Final = "v1alpha1"
JOB_KIND: Final = "Job"
WORKLOADRUN_KIND: Final = "WorkloadRun"

EVENT_SOURCE_PREFIX: Final = "/crefn/"
"""`source` of every emitted event is `/crefn/<function>`."""

MANAGED_LABEL: Final = "crefn.dev/managed"
ATTEMPT_LABEL: Final = "crefn.dev/attempt"
MANAGED_BY_LABEL: Final = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE: Final = "nvcre"
"""CRE's own value (`managedByValue`) on every object the functions make as CRE makes it: the TrainJob, the
measurements, what a WorkloadRun becomes. Which TrainJob the functions created, and for which attempt, their
`crefn.dev/attempt` label says; a TrainJob of the Job without it is CRE's, and is adopted (docs/functions.md)."""
FINISHED_LABEL: Final = "crefn.dev/finished"
"""On a Job that is finished (terminal, no check due) and on its TrainJob: the resync tick lists neither."""
RESTART_NOT_BEFORE_ANNOTATION: Final = "crefn.dev/restart-not-before"
TIMEOUT_ANNOTATION: Final = "crefn.dev/timeout-per-job"
"""A Job's wall-clock bound, a Go duration (written from a WorkloadRun's `orchestration.timeoutPerJob`)."""
CONTROLLER_MANAGER: Final = "crefn.dev/controller"
"""The `manager` of the TrainJob runtime patch that labels the workload's pods."""
FIRST_PHASE_ANNOTATION: Final = "crefn.dev/first-phase"
"""On a TrainJob the functions created, `creator`: the function that created it decides its first phase, and
`status` answers its creation's Running event unread."""


def job_label(cre_group: str) -> str:
    """The label naming a workload's CRE Job (`nvcre.nvidia.com/job`; follows the CRE group setting)."""
    return f"{cre_group}/job"


def workflow_label(cre_group: str) -> str:
    """The label naming the Workflow that created a Job (`nvcre.nvidia.com/workflow`), which CRE's Job
    metrics carry as their `workflow` label."""
    return f"{cre_group}/workflow"


def job_uid_annotation(cre_group: str) -> str:
    """The annotation naming the uid of the Job a BandwidthMeasurement was created for
    (`nvcre.nvidia.com/job-uid`): a Job of the same name later is another Job."""
    return f"{cre_group}/job-uid"


def group_nodes_annotation(cre_group: str) -> str:
    """The annotation listing a workload's nodes (`nvcre.nvidia.com/group-nodes`)."""
    return f"{cre_group}/group-nodes"


class Reason(StrEnum):
    """Job condition reasons this project writes (CRE's)."""

    WORKLOAD_CREATED = "WorkloadCreated"
    WORKLOAD_ADOPTED = "WorkloadAdopted"
    WORKLOAD_PENDING = "WorkloadPending"
    WORKLOAD_RUNNING = "WorkloadRunning"
    WORKLOAD_COMPLETED = "WorkloadCompleted"
    WORKLOAD_FAILED = "WorkloadFailed"
    WORKLOAD_RESTARTING = "WorkloadRestarting"
    WORKLOAD_CREATION_ERROR = "WorkloadCreationError"
    WORKLOAD_DELETED = "WorkloadDeleted"
    WORKLOAD_SCHEDULING_BLOCKED = "WorkloadSchedulingBlocked"
    JOB_TIMED_OUT = "JobTimedOut"
    WORKLOAD_STALLED = "WorkloadStalled"
    HARDWARE_FAILURE_DETECTED = "HardwareFailureDetected"
    THRESHOLD_VIOLATION = "ThresholdViolation"
    THRESHOLD_VIOLATED = "ThresholdViolated"
    THRESHOLDS_MET = "ThresholdsMet"
    UNKNOWN_THRESHOLD_KEY = "UnknownThresholdKey"
    INVALID_THRESHOLD_EXPRESSION = "InvalidThresholdExpression"
    INVALID_NODE_HEALTH_EXPRESSION = "InvalidNodeHealthExpression"
    """A Warning Event only (the project's): the node health expression ran past its time budget."""
    MEASUREMENT_TIMEOUT = "MeasurementTimeout"
    MEASUREMENT_CREATION_ERROR = "MeasurementCreationError"
    SUSPENDED = "Suspended"
    NOT_APPLICABLE = "NotApplicable"


class RunReason(StrEnum):
    """WorkloadRun condition reasons: CRE's WorkloadRun controller's, and the project's own additions."""

    WORKFLOW_CREATED = "WorkflowCreated"
    WORKFLOW_SUCCEEDED = "WorkflowSucceeded"
    WORKFLOW_FAILED = "WorkflowFailed"
    WORKFLOW_VALIDATION_FAILED = "WorkflowValidationFailed"
    WORKFLOW_DELETED = "WorkflowDeleted"
    BUILD_FAILED = "BuildFailed"
    INVALID_SPEC = "InvalidSpec"
    OBJECT_CONFLICT = "ObjectConflict"
    SUPERSEDED = "Superseded"
    THRESHOLD_VIOLATION = "ThresholdViolation"
    """The reason of the run's independent `ValidationFailed` condition."""
