"""Checkpoint restart or failure (SPEC §5 `restart`, §6.3).

A failure of the Job's current attempt — the workload failed or was deleted, or it stalled
(`functions.rules.stall`) — is restarted when the Job has `spec.checkpoint`, restarts left
(`restartCount < maxRestarts`) and, when required, checkpoint evidence (a GoodputMeasurement of the
Job with `lastCheckpointStep > 0`). A restart is one status write (the commit point):
`restartCount + 1`, `workloadRef`, `workloadStartTime` and the scheduling-blocked markers cleared,
`InProgress`/`WorkloadRestarting`. Otherwise the Job is `Failed`/`WorkloadFailed` (a stall:
`Failed`/`WorkloadStalled` with the stall's message), its nodes attributed (`functions.rules.verdicts`)
and, while it has none, its failure log (`functions.rules.pods`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from events.emitted import ConditionSummary
from events.objects import TrainJob
from events.types import Phase, Reason
from functions.rules.adapter import decide_phase
from functions.rules.conditions import condition, decide_conditions
from functions.rules.jobs import JobState
from functions.rules.pods import Capture, failure_log_field
from functions.rules.verdicts import ConditionWrite, condition_write, failed_nodes


@dataclass(frozen=True)
class Failure:
    """The failure as freshly observed: the TrainJob's name, whether it was deleted, its message."""

    name: str
    deleted: bool
    message: str


@dataclass(frozen=True)
class RestartDecision:
    restart: bool
    why: str


def decide_restart(state: JobState, evidence: bool | None, require_evidence: bool) -> RestartDecision:
    """Whether a failure of the Job's current attempt may be restarted (SPEC §6.3)."""
    checkpoint = state.job.spec.checkpoint
    count = state.job.status.restart_count
    if checkpoint is None:
        return RestartDecision(False, "no checkpoint configured")
    if count >= checkpoint.max_restarts:
        return RestartDecision(False, f"restarts exhausted ({count}/{checkpoint.max_restarts})")
    if require_evidence and not evidence:
        return RestartDecision(False, "no checkpoint evidence (GoodputMeasurement lastCheckpointStep > 0)")
    return RestartDecision(True, f"restart {count + 1}/{checkpoint.max_restarts}")


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


def failed_write(state: JobState, failure: Failure, now: datetime, group: str, function: str,
                 capture: Capture | None = None) -> tuple[ConditionWrite, ConditionSummary] | None:
    """The write that fails the Job, with its nodes attributed and its failure log; None when it is so
    already."""
    return verdict_write(state, Reason.WORKLOAD_FAILED, failed_message(failure), now, group, function, capture)


def verdict_write(state: JobState, reason: str, message: str, now: datetime, group: str, function: str,
                  capture: Capture | None = None) -> tuple[ConditionWrite, ConditionSummary] | None:
    """`Failed`/`reason`/`message` (CRE's `setJobFailed`): the Job's nodes attributed and its failure log
    recorded; None when the Job says so already."""
    new = condition("Failed", reason, message)
    if decide_conditions(state.conditions, state.job.metadata.generation, new, now) is None:
        return None
    write = condition_write(state, new, now, group, function,
                            {**failed_nodes(state, group, message), **failure_log_field(state, capture)})
    return None if write is None else (write, new)


def restart_write(state: JobState, now: datetime, group: str, function: str) -> ConditionWrite:
    """The commit point of a restart."""
    assert state.job.spec.checkpoint is not None
    n, limit = state.job.status.restart_count + 1, state.job.spec.checkpoint.max_restarts
    message = f"Restarting workload from checkpoint (restart {n}/{limit})"
    new = condition("InProgress", Reason.WORKLOAD_RESTARTING, message)
    write = condition_write(state, new, now, group, function,
                            {"restartCount": n, "workloadRef": None, "workloadStartTime": None,
                             "schedulingBlockedSince": None, "schedulingResumedTime": None})
    assert write is not None
    return write
