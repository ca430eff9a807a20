"""Job conditions from the workload's phase (SPEC §5 `status`).

Pending → `InProgress`/`WorkloadPending`; Running → `InProgress`/`WorkloadRunning` and
`workloadStartTime` once; Succeeded → `Succeeded`/`WorkloadCompleted`. Failed is `restart`'s.
`in_step` says when a Job's status already shows its workload's phase (what `resync` skips).
"""

from __future__ import annotations

from datetime import datetime

from events.emitted import ConditionSummary, WorkloadRef
from events.types import Phase, Reason
from functions.errors import PermanentError
from functions.rules.adapter import PhaseResult
from functions.rules.attempts import is_current
from functions.rules.conditions import condition, rfc3339
from functions.rules.jobs import JobState
from functions.rules.verdicts import ConditionWrite, condition_write


def condition_for(phase: Phase, name: str, message: str) -> ConditionSummary:
    subject = f"Workload TrainJob/{name}"
    if phase is Phase.PENDING:
        text = f"{subject} is pending: {message}" if message else f"{subject} is pending"
        return condition("InProgress", Reason.WORKLOAD_PENDING, text)
    if phase is Phase.RUNNING:
        return condition("InProgress", Reason.WORKLOAD_RUNNING, f"{subject} is running")
    if phase is Phase.SUCCEEDED:
        text = f"{subject} completed: {message}" if message else f"{subject} completed successfully"
        return condition("Succeeded", Reason.WORKLOAD_COMPLETED, text)
    raise PermanentError("phase Failed is handled by the restart function")


def decide_status(state: JobState, phase: Phase, name: str, message: str, now: datetime, group: str,
                  function: str) -> tuple[ConditionWrite, ConditionSummary] | None:
    """The write for a phase of the current attempt, or None when nothing would change."""
    new = condition_for(phase, name, message)
    started = phase is Phase.RUNNING and state.job.status.workload_start_time is None
    extra = {"workloadStartTime": rfc3339(now)} if started else None
    write = condition_write(state, new, now, group, function, extra)
    return None if write is None else (write, new)


def in_step(state: JobState, workload: WorkloadRef, result: PhaseResult) -> bool:
    """Whether the Job's status already shows its current TrainJob's phase (nothing to re-drive): the
    condition `status` would write is the True one, and a running workload has its start time. A
    failed or succeeded TrainJob of a non-terminal Job, or a TrainJob of another attempt, is never in
    step: its event must go to the function that decides."""
    if not is_current(state.job, workload) or result.phase in (Phase.FAILED, Phase.SUCCEEDED):
        return False
    if result.phase is Phase.RUNNING and state.job.status.workload_start_time is None:
        return False
    return state.true_condition == condition_for(result.phase, workload.name, result.message)
