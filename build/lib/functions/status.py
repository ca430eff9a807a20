"""The `status` function: `workload.phase` Pending/Running/Succeeded → Job conditions (SPEC §5, §6.2).

parse (our own phase event) → read the Job fresh → guard (managed, not terminal, current attempt) →
decide (pure `decide_status`) → apply (one status write) → answer `job.condition.changed` only when
the True exclusive type or its reason changed. Events about an older attempt are stale: 202.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from events.emitted import ConditionSummary, WorkloadPhaseData, WorkloadRef
from events.envelope import Envelope, parse_data
from events.types import EventType, Phase
from functions.conditions import ExclusiveType, decide_conditions, rfc3339
from functions.context import Context
from functions.errors import PermanentError
from functions.jobs import JobState, StatusChange, apply_status, condition_changed_event, read_managed_job
from functions.outcome import NoReply, Outcome

FUNCTION = "status"
ACCEPTS = frozenset({EventType.WORKLOAD_PHASE.value})
"""Event types this function handles (the Triggers in knative/ may route only these)."""


def parse_phase_event(env: Envelope) -> WorkloadPhaseData:
    if env.type != EventType.WORKLOAD_PHASE:
        raise PermanentError(f"unknown event type {env.type!r} for this function")
    return parse_data(env, WorkloadPhaseData)


def is_current(state: JobState, workload: WorkloadRef) -> bool:
    """The event is about the Job's current attempt: same TrainJob name, same attempt number."""
    ref = state.job.status.workload_ref
    return ref is not None and ref.name == workload.name and workload.attempt == state.job.status.restart_count


def stale(data: WorkloadPhaseData) -> NoReply:
    return NoReply(f"stale: TrainJob {data.workload.name} attempt {data.workload.attempt} is not the current "
                   f"attempt of Job {data.job.namespace}/{data.job.name}")


def condition_for(phase: Phase, name: str, message: str) -> tuple[ExclusiveType, str, str]:
    subject = f"Workload TrainJob/{name}"
    if phase is Phase.PENDING:
        text = f"{subject} is pending: {message}" if message else f"{subject} is pending"
        return "InProgress", "WorkloadPending", text
    if phase is Phase.RUNNING:
        return "InProgress", "WorkloadRunning", f"{subject} is running"
    if phase is Phase.SUCCEEDED:
        text = f"{subject} completed: {message}" if message else f"{subject} completed successfully"
        return "Succeeded", "WorkloadCompleted", text
    raise PermanentError("phase Failed is handled by the restart function")


def decide_status(state: JobState, data: WorkloadPhaseData, now: datetime) -> StatusChange | None:
    cond_type, reason, message = condition_for(data.phase, data.workload.name, data.message)
    conditions = decide_conditions(state.conditions, state.job.metadata.generation, cond_type, reason, message, now)
    status: dict[str, Any] = {}
    if conditions is not None:
        status["conditions"] = conditions
    if data.phase is Phase.RUNNING and state.job.status.workload_start_time is None:
        status["workloadStartTime"] = rfc3339(now)
    if not status:
        return None
    return StatusChange(status, ConditionSummary(type=cond_type, reason=reason, message=message))


def handle(env: Envelope, ctx: Context) -> Outcome:
    data = parse_phase_event(env)
    if data.phase is Phase.FAILED:
        return NoReply("phase Failed is handled by the restart function")
    where = f"Job {data.job.namespace}/{data.job.name}"
    state = read_managed_job(ctx, data.job)
    if isinstance(state, NoReply):
        return state
    if state.terminal:
        return NoReply(f"{where} is terminal")
    if not is_current(state, data.workload):
        return stale(data)
    write = apply_status(ctx, state, lambda current: decide_status(current, data, ctx.clock())
                         if is_current(current, data.workload) else None)
    if not write.condition_changed:
        return NoReply(f"{where}: nothing changed" if write.change is None else f"{where}: condition kept")
    return condition_changed_event(write, FUNCTION, env, data.workload)
