"""Checkpoint restart or failure (SPEC §5 `restart`, §6.3).

A failure of the Job's current attempt is restarted when the Job has `spec.checkpoint`, restarts
left (`restartCount < maxRestarts`) and, when required, checkpoint evidence (a GoodputMeasurement of
the Job with `lastCheckpointStep > 0`). A restart is one status write (the commit point):
`restartCount + 1`, `workloadRef` and `workloadStartTime` cleared, `InProgress`/`WorkloadRestarting`.
Otherwise the Job is `Failed`/`WorkloadFailed` with the nodes of the failure in `failedNodes`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from events.emitted import ConditionSummary
from events.objects import TrainJob
from events.types import Phase, Reason, group_nodes_annotation
from functions.rules.adapter import decide_phase
from functions.rules.conditions import condition, decide_conditions
from functions.rules.jobs import JobState


@dataclass(frozen=True)
class Failure:
    """The failure as freshly observed: the TrainJob's name, whether it was deleted, its message and nodes."""

    name: str
    deleted: bool
    message: str
    nodes: tuple[str, ...] = ()


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


def observe_failure(name: str, uid: str, trainjob: dict[str, Any] | None, cre_group: str) -> Failure | None:
    """The failure on a fresh read (the attempt's TrainJob, None when it is gone), or None when the
    TrainJob exists and has not failed (a stale or forged event)."""
    if trainjob is None:
        return Failure(name, deleted=True, message="")
    if uid and trainjob["metadata"].get("uid") != uid:
        return None
    result = decide_phase(TrainJob.model_validate(trainjob))
    if result.phase is not Phase.FAILED:
        return None
    nodes = (trainjob["metadata"].get("annotations") or {}).get(group_nodes_annotation(cre_group), "")
    return Failure(name, deleted=False, message=result.message,
                   nodes=tuple(n.strip() for n in nodes.split(",") if n.strip()))


def failed_message(failure: Failure) -> str:
    subject = f"Workload TrainJob/{failure.name}"
    if failure.deleted:
        return f"{subject} was deleted"
    return f"{subject} failed: {failure.message}" if failure.message else f"{subject} has failed"


def failed_status(state: JobState, failure: Failure, now: datetime) -> tuple[dict[str, Any], ConditionSummary] | None:
    """The status that fails the Job, or None when it is so already."""
    message = failed_message(failure)
    new = condition("Failed", Reason.WORKLOAD_FAILED, message)
    conditions = decide_conditions(state.conditions, state.job.metadata.generation, new, now)
    if conditions is None:
        return None
    ours = {(n, Reason.WORKLOAD_FAILED.value) for n in failure.nodes}
    kept = [n.model_dump(by_alias=True) for n in state.job.status.failed_nodes if (n.name, n.reason) not in ours]
    status: dict[str, Any] = {"conditions": conditions}
    if failure.nodes:
        status["failedNodes"] = kept + [{"name": n, "reason": Reason.WORKLOAD_FAILED.value, "message": message}
                                        for n in failure.nodes]
    return status, new


def restart_status(state: JobState, now: datetime) -> tuple[dict[str, Any], ConditionSummary]:
    """The commit point of a restart."""
    assert state.job.spec.checkpoint is not None
    n, limit = state.job.status.restart_count + 1, state.job.spec.checkpoint.max_restarts
    message = f"Restarting workload from checkpoint (restart {n}/{limit})"
    new = condition("InProgress", Reason.WORKLOAD_RESTARTING, message)
    status: dict[str, Any] = {"restartCount": n, "workloadRef": None, "workloadStartTime": None}
    conditions = decide_conditions(state.conditions, state.job.metadata.generation, new, now)
    if conditions is not None:
        status["conditions"] = conditions
    return status, new
