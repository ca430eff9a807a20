"""The `restart` function: `workload.phase` Failed → checkpoint restart, or the Job fails (SPEC §5, §6.3).

parse → read the Job and the TrainJob fresh (an event may be stale, duplicated or forged: a TrainJob
that exists and is not Failed on a fresh read is not restarted) → decide (pure `decide_restart`) →
apply, in this order, each step safe to repeat:
1. one status write, the commit point, with the read resourceVersion: `restartCount += 1`,
   `workloadRef` and `workloadStartTime` cleared, `InProgress`/`WorkloadRestarting`;
2. annotate `crefn.dev/restart-not-before` (now + grace) on the Job;
3. delete the failed TrainJob with a uid precondition.
A redelivered event whose restart is already recorded (its attempt is older than `restartCount`)
finishes steps 2 and 3 and emits nothing. Otherwise the Job is written `Failed`/`WorkloadFailed` with the
TrainJob's nodes (annotation `<cre group>/group-nodes`) in `failedNodes`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from events.emitted import ConditionSummary, JobRestartedData, WorkloadPhaseData
from events.envelope import Envelope, to_outbound
from events.objects import TrainJob
from events.types import ATTEMPT_LABEL, RESTART_NOT_BEFORE_ANNOTATION, EventType, Phase, group_nodes_annotation
from functions.adapter import decide_phase
from functions.conditions import decide_conditions, rfc3339
from functions.context import Context
from functions.errors import TemporaryError
from functions.gateway import TRAINJOBS, cre_goodput
from functions.jobs import (
    JobState,
    StatusChange,
    apply_status,
    condition_changed_event,
    jobs_resource,
    read_managed_job,
)
from functions.outcome import NoReply, Outcome
from functions.status import is_current, parse_phase_event, stale

FUNCTION = "restart"
ACCEPTS = frozenset({EventType.WORKLOAD_PHASE.value})
"""Event types this function handles (the Triggers in knative/ may route only these)."""


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
    """Pure: whether a failure of the Job's current attempt may be restarted (SPEC §6.3)."""
    checkpoint = state.job.spec.checkpoint
    count = state.job.status.restart_count
    if checkpoint is None:
        return RestartDecision(False, "no checkpoint configured")
    if count >= checkpoint.max_restarts:
        return RestartDecision(False, f"restarts exhausted ({count}/{checkpoint.max_restarts})")
    if require_evidence and not evidence:
        return RestartDecision(False, "no checkpoint evidence (GoodputMeasurement lastCheckpointStep > 0)")
    return RestartDecision(True, f"restart {count + 1}/{checkpoint.max_restarts}")


def failed_message(failure: Failure) -> str:
    subject = f"Workload TrainJob/{failure.name}"
    if failure.deleted:
        return f"{subject} was deleted"
    return f"{subject} failed: {failure.message}" if failure.message else f"{subject} has failed"


def decide_failed(state: JobState, failure: Failure, now: datetime) -> StatusChange | None:
    message = failed_message(failure)
    conditions = decide_conditions(state.conditions, state.job.metadata.generation, "Failed", "WorkloadFailed",
                                   message, now)
    if conditions is None:
        return None
    ours = {(n, "WorkloadFailed") for n in failure.nodes}
    kept = [n.model_dump(by_alias=True) for n in state.job.status.failed_nodes if (n.name, n.reason) not in ours]
    nodes = kept + [{"name": n, "reason": "WorkloadFailed", "message": message} for n in failure.nodes]
    status: dict[str, Any] = {"conditions": conditions}
    if failure.nodes:
        status["failedNodes"] = nodes
    return StatusChange(status, ConditionSummary(type="Failed", reason="WorkloadFailed", message=message))


def decide_restart_write(state: JobState, now: datetime) -> StatusChange | None:
    assert state.job.spec.checkpoint is not None
    n, limit = state.job.status.restart_count + 1, state.job.spec.checkpoint.max_restarts
    message = f"Restarting workload from checkpoint (restart {n}/{limit})"
    conditions = decide_conditions(state.conditions, state.job.metadata.generation, "InProgress",
                                   "WorkloadRestarting", message, now)
    status: dict[str, Any] = {"restartCount": n, "workloadRef": None, "workloadStartTime": None}
    if conditions is not None:
        status["conditions"] = conditions
    return StatusChange(status, ConditionSummary(type="InProgress", reason="WorkloadRestarting", message=message))


def has_checkpoint_evidence(state: JobState, ctx: Context) -> bool:
    for gm in ctx.gateway.list_all(cre_goodput(ctx.settings.cre_group), state.ref.namespace):
        ref = (gm.get("spec") or {}).get("jobRef") or {}
        step = (gm.get("status") or {}).get("lastCheckpointStep") or 0
        if ref.get("name") == state.ref.name and ref.get("kind", "Job") == "Job" and int(step) > 0:
            return True
    return False


def observe_failure(data: WorkloadPhaseData, trainjob: dict[str, Any] | None, cre_group: str) -> Failure | None:
    """The failure on a fresh read, or None when the TrainJob exists and has not failed (stale/forged)."""
    name = data.workload.name
    if trainjob is None:
        return Failure(name, deleted=True, message="")
    if data.workload.uid and trainjob["metadata"].get("uid") != data.workload.uid:
        return None
    result = decide_phase(TrainJob.model_validate(trainjob))
    if result.phase is not Phase.FAILED:
        return None
    nodes = (trainjob["metadata"].get("annotations") or {}).get(group_nodes_annotation(cre_group), "")
    return Failure(name, deleted=False, message=result.message,
                   nodes=tuple(n.strip() for n in nodes.split(",") if n.strip()))


def handle(env: Envelope, ctx: Context) -> Outcome:
    data = parse_phase_event(env)
    if data.phase is not Phase.FAILED:
        return NoReply(f"phase {data.phase.value} is handled by the status function")
    where = f"Job {data.job.namespace}/{data.job.name}"
    state = read_managed_job(ctx, data.job)
    if isinstance(state, NoReply):
        return state
    attempt = data.workload.attempt
    if attempt is not None and attempt < state.job.status.restart_count:
        finish_restart(state, data, ctx)
        return NoReply(f"{where}: restart of attempt {attempt} already recorded")
    if state.terminal:
        return NoReply(f"{where} is terminal")
    if not is_current(state, data.workload):
        return stale(data)
    trainjob = ctx.gateway.get(TRAINJOBS, data.workload.namespace, data.workload.name)
    if trainjob is not None and (trainjob["metadata"].get("labels") or {}).get(ATTEMPT_LABEL) != str(attempt):
        trainjob = None  # the name is held by an object of another attempt: this attempt's TrainJob is gone
    failure = observe_failure(data, trainjob, ctx.settings.cre_group)
    if failure is None:
        return NoReply(f"stale: TrainJob {data.workload.name} has not failed on a fresh read")
    evidence = has_checkpoint_evidence(state, ctx) if ctx.settings.require_checkpoint_evidence else None
    decision = decide_restart(state, evidence, ctx.settings.require_checkpoint_evidence)
    if not decision.restart:
        write = apply_status(ctx, state, lambda cur: decide_failed(cur, failure, ctx.clock())
                             if is_current(cur, data.workload) else None)
        if not write.condition_changed:
            return NoReply(f"{where}: failure already recorded")
        return condition_changed_event(write, FUNCTION, env, data.workload)
    return restart(state, data, env, ctx)


def restart(state: JobState, data: WorkloadPhaseData, env: Envelope, ctx: Context) -> Outcome:
    now = ctx.clock()
    write = apply_status(ctx, state, lambda cur: decide_restart_write(cur, now)
                         if is_current(cur, data.workload) else None)
    if write.change is None:
        return NoReply(f"Job {data.job.namespace}/{data.job.name}: restart not needed on a fresh read")
    grace_end = now + timedelta(seconds=ctx.settings.restart_grace_seconds)
    if not ctx.settings.observe:
        annotate_not_before(state, grace_end, ctx)
        delete_failed(data, ctx)
    assert state.job.spec.checkpoint is not None
    out = JobRestartedData(job=state.ref, attempt=state.job.status.restart_count + 1,
                           max_restarts=state.job.spec.checkpoint.max_restarts, previous_workload=data.workload,
                           not_before=grace_end)
    return to_outbound(EventType.JOB_RESTARTED, FUNCTION, state.ref.namespace, state.ref.name, out, env)


def finish_restart(state: JobState, data: WorkloadPhaseData, ctx: Context) -> None:
    """Steps 2 and 3 of a restart already committed (a redelivery after a crash between steps)."""
    if ctx.settings.observe:
        return
    if (data.workload.attempt == state.job.status.restart_count - 1
            and RESTART_NOT_BEFORE_ANNOTATION not in state.job.metadata.annotations):
        annotate_not_before(state, ctx.clock() + timedelta(seconds=ctx.settings.restart_grace_seconds), ctx)
    delete_failed(data, ctx)


def annotate_not_before(state: JobState, when: datetime, ctx: Context) -> None:
    ctx.gateway.patch(jobs_resource(ctx), state.ref.namespace, state.ref.name,
                      {"metadata": {"annotations": {RESTART_NOT_BEFORE_ANNOTATION: rfc3339(when)}}})


def delete_failed(data: WorkloadPhaseData, ctx: Context) -> None:
    """Delete the failed attempt's TrainJob, never a newer one with the same name (uid precondition)."""
    current = ctx.gateway.get(TRAINJOBS, data.workload.namespace, data.workload.name)
    if current is None or current["metadata"].get("deletionTimestamp"):
        return
    if (current["metadata"].get("labels") or {}).get(ATTEMPT_LABEL) != str(data.workload.attempt):
        return
    try:
        ctx.gateway.delete(TRAINJOBS, data.workload.namespace, data.workload.name, uid=current["metadata"]["uid"])
    except TemporaryError as e:
        if e.status != 409:  # 409: the precondition failed, another object holds the name now
            raise


