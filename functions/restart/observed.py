"""What `restart` read for one event (`Observed`), and what it shows: the failure on the fresh TrainJob
(`observe_failure`, in CRE's words `failed_message`), whether the attempt still runs, and the verdict the
event would write on the Job as read (`verdict_of`). Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from events.emitted import ConditionSummary, WorkloadPhaseData, WorkloadStalledData
from events.envelope import Envelope
from events.objects import TrainJob
from events.types import Phase, Reason
from functions.domain.adapter import decide_phase
from functions.domain.conditions import condition
from functions.domain.jobs import JobState
from functions.domain.measurement_objects import GoodputMeasurement
from functions.domain.pods import Capture
from functions.domain.redelivery import Announced


@dataclass(frozen=True)
class Observed:
    """What the `restart` function read fresh for one event."""

    cause: Envelope
    data: WorkloadPhaseData | WorkloadStalledData
    state: JobState | None = None
    trainjob: dict[str, Any] | None = None
    """The attempt's TrainJob (None: gone, or its name now held by another attempt, `held_by`)."""
    held_by: dict[str, Any] | None = None
    """The TrainJob holding the name when it is not the event's attempt's (another attempt label, or none):
    that attempt was not seen deleted."""
    evidence: bool | None = None
    """Checkpoint evidence, read only when it can change the decision."""
    capture: Capture | None = None
    """The attempt's pods and failed container (its log tail only for a failure to record)."""
    goodput: GoodputMeasurement | None = None
    """The Job's GoodputMeasurement: the stall re-check's input, and what a restart resets."""
    runtime_jobs: tuple[str, ...] | None = None
    """The training runtime's replicatedJobs, read for a relaunch when the failed attempt's TrainJob does
    not name them (`runtime_wanted`)."""
    announced: Announced | None = None
    """The transition Event of the Job's verdict, read when the event may be the one that decided it, delivered
    again (`restate_wanted`)."""


@dataclass(frozen=True)
class Failure:
    """The failure as freshly observed: the TrainJob's name, whether it was deleted, its message."""

    name: str
    deleted: bool
    message: str


def observe_failure(name: str, uid: str, trainjob: dict[str, Any] | None) -> Failure | None:
    """The failure on a fresh read (the attempt's TrainJob, None when it is gone), or None when the
    TrainJob exists and has not failed (a stale or forged event)."""
    if trainjob is None:
        return Failure(name, deleted=True, message="")
    if uid and trainjob["metadata"].get("uid") != uid:
        return None
    result = decide_phase(TrainJob.model_validate(trainjob))
    if result.phase is not Phase.FAILED:
        return None
    return Failure(name, deleted=False, message=result.message)


def failed_message(failure: Failure) -> str:
    subject = f"Workload TrainJob/{failure.name}"
    if failure.deleted:
        return f"{subject} was deleted"
    return f"{subject} failed: {failure.message}" if failure.message else f"{subject} has failed"


def still_running(uid: str, trainjob: dict[str, Any] | None) -> bool:
    """Whether the attempt's TrainJob (None: gone) exists, is the one the event named (its uid, when the
    event carries it) and is Running on a fresh read: what a stall is decided about."""
    if trainjob is None or (uid and trainjob["metadata"].get("uid") != uid):
        return False
    return decide_phase(TrainJob.model_validate(trainjob)).phase is Phase.RUNNING


def verdict_of(observed: Observed) -> ConditionSummary | None:
    """The verdict the event would write on the Job as read: `Failed`/`WorkloadStalled` with the stall's message
    (re-deciding the stall would need the pods, and only a Job that shows exactly it is restated), or
    `Failed`/`WorkloadFailed` for the failure on the fresh TrainJob read; None when the TrainJob has not failed."""
    data = observed.data
    if isinstance(data, WorkloadStalledData):
        return condition("Failed", Reason.WORKLOAD_STALLED, data.message)
    failure = None if observed.held_by is not None else observe_failure(data.workload.name, data.workload.uid,
                                                                         observed.trainjob)
    return None if failure is None else condition("Failed", Reason.WORKLOAD_FAILED, failed_message(failure))
