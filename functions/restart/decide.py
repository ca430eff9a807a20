"""Checkpoint restart or failure (SPEC §5 `restart`, §6.3).

A failure of the Job's current attempt — the workload failed or was deleted, or it stalled
(`functions.domain.stall`) — is restarted when the Job has `spec.checkpoint`, restarts left (`restartCount <
maxRestarts`) and, when required, checkpoint evidence (a GoodputMeasurement of the Job with
`lastCheckpointStep > 0`). Otherwise the Job is `Failed`/`WorkloadFailed` (a stall:
`Failed`/`WorkloadStalled`), its nodes attributed (`functions.domain.condition_writes`) and its failure log captured
(`functions.domain.pods`). `decide(observed, settings, now)` is the `restart` function's whole decision;
`functions.restart.wants` tells its read which reads can change it. A restart
is four steps, each safe to repeat: grace annotation (none when the grace is 0), status write (the commit
point, `restart_write`), TrainJob delete, GoodputMeasurement reset; with no grace, then the next attempt
(`functions.restart.relaunch`). The steps, redeliveries and stalls decided again: docs/functions.md#restart-step-by-step
"""

from __future__ import annotations

from datetime import datetime

from events.emitted import ConditionSummary, JobRestartedData, WorkloadPhaseData, WorkloadStalledData
from events.envelope import to_outbound
from events.types import EventType, Reason
from functions.domain import grace
from functions.domain.attempts import is_recorded
from functions.domain.checkpoint import RestartDecision, decide_restart
from functions.domain.condition_writes import ConditionWrite, condition_write, failed_nodes
from functions.domain.conditions import changes_condition, condition, decide_conditions
from functions.domain.jobs import JobState, condition_changed, why_not_current, why_not_ours
from functions.domain.measurement_objects import is_reset, reset_goodput
from functions.domain.pods import Capture, failure_info, failure_log_field
from functions.domain.redelivery import restate
from functions.domain.running import decide_running
from functions.domain.stall import producer_cadence
from functions.restart.observed import Failure, Observed, failed_message, observe_failure, still_running, verdict_of
from functions.restart.relaunch import Relaunch, own_patch_jobs, relaunches
from functions.restart.wants import is_failure, reported_before, reset_pending, why_not_its_workload
from functions.runtime.effects import Delete, Effect
from functions.runtime.plan import Plan, nothing
from functions.runtime.resources import TRAINJOBS
from functions.runtime.settings import Settings

FUNCTION = "restart"


def failed_write(state: JobState, failure: Failure, now: datetime, group: str, function: str,
                 capture: Capture | None = None, cause: str = "") -> tuple[ConditionWrite, ConditionSummary] | None:
    """The write that fails the Job, with its nodes attributed and its failure log; None when it is so
    already."""
    return verdict_write(state, Reason.WORKLOAD_FAILED, failed_message(failure), now, group, function, capture,
                         cause)


def verdict_write(state: JobState, reason: str, message: str, now: datetime, group: str, function: str,
                  capture: Capture | None = None, cause: str = "") -> tuple[ConditionWrite, ConditionSummary] | None:
    """`Failed`/`reason`/`message` (CRE's `setJobFailed`): the Job's nodes attributed and its failure log
    recorded; None when the Job says so already. `cause`: the deciding event's id, recorded on its Event."""
    new = condition("Failed", reason, message)
    if decide_conditions(state.conditions, state.job.metadata.generation, new, now) is None:
        return None
    write = condition_write(state, new, now, group, function,
                            {**failed_nodes(state, group, message, capture.pods if capture else ()),
                             **failure_log_field(state, capture)}, cause)
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


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    data, state = observed.data, observed.state
    if isinstance(data, WorkloadPhaseData) and not is_failure(data):
        return nothing(f"phase {data.phase.value} is handled by the status function")
    if reported_before(data):
        return nothing(f"TrainJob {data.workload.name} was deleted after it failed: its failure was decided then")
    if why := why_not_ours(state, data.job, settings):
        return nothing(why)
    assert state is not None
    if why := why_not_its_workload(state, data.workload, observed.trainjob):
        return nothing(why)
    if is_recorded(state.job, data.workload):
        return Plan(finish_restart(observed, state, now, settings),
                    reason=f"{state.where}: restart of attempt {data.workload.attempt} already recorded",
                    then=relaunch(observed, state, now, settings, committing=False))
    if observed.announced is not None and (verdict := verdict_of(observed)) is not None:
        return restate(state, verdict, observed.announced.event, now, FUNCTION, observed.cause, data.workload)
    if why := why_not_current(state, data.workload):
        return nothing(why)
    if isinstance(data, WorkloadStalledData):
        return decide_stalled(observed, data, state, settings, now)
    if observed.held_by is not None:
        return nothing(f"stale: TrainJob {data.workload.name} is not attempt {data.workload.attempt} on a fresh "
                       "read")
    failure = observe_failure(data.workload.name, data.workload.uid, observed.trainjob)
    if failure is None:
        return nothing(f"stale: TrainJob {data.workload.name} has not failed on a fresh read")
    if not (decision := decide_restart(state, observed.evidence, settings.require_checkpoint_evidence)).restart:
        return fail(observed, state, failed_write(state, failure, now, settings.cre_group, FUNCTION,
                                                  observed.capture, observed.cause.id), decision)
    return restart(observed, state, now, settings)


def decide_stalled(observed: Observed, data: WorkloadStalledData, state: JobState, settings: Settings,
                   now: datetime) -> Plan:
    """A stall, decided again on the fresh reads: restarted like a failure, else `Failed`/`WorkloadStalled`."""
    if not still_running(data.workload.uid, observed.trainjob) or observed.capture is None:
        return nothing(f"stale: TrainJob {data.workload.name} is not running on a fresh read")
    stall = decide_running(state, observed.capture.pods, data.workload.name, now, observed.goodput,
                           producer_cadence(settings)).stall
    if stall is None:
        return nothing(f"{state.where}: TrainJob {data.workload.name} is not stalled on a fresh read")
    if not (decision := decide_restart(state, observed.evidence, settings.require_checkpoint_evidence)).restart:
        return fail(observed, state, verdict_write(state, Reason.WORKLOAD_STALLED, stall.message, now,
                                                   settings.cre_group, FUNCTION, observed.capture, observed.cause.id),
                    decision)
    return restart(observed, state, now, settings)


def fail(observed: Observed, state: JobState, decided: tuple[ConditionWrite, ConditionSummary] | None,
         decision: RestartDecision) -> Plan:
    """The Failed write (None: recorded already) and its `job.condition.changed`; the refusal said and counted."""
    if decided is None:
        return nothing(f"{state.where}: failure already recorded")
    write, new = decided
    if not changes_condition(state.true_condition, new):
        return Plan(write.effects, reason=f"{state.where}: failure already recorded")
    return Plan(write.effects, reply=condition_changed(state, write.status, new, FUNCTION, observed.cause,
                                                       observed.data.workload),
                reason=f"{state.where}: restart refused: {decision.why}; {new.type}/{new.reason} written",
                refused=decision.refusal)


def restart(observed: Observed, state: JobState, now: datetime, settings: Settings) -> Plan:
    """Steps 1 to 4 of a restart, and `job.restarted`."""
    commit = restart_write(state, now, settings.cre_group, FUNCTION)
    grace_length = grace.length(state, settings.restart_grace_seconds)
    grace_end = now + grace_length
    assert state.job.spec.checkpoint is not None
    restarted = JobRestartedData(job=state.ref, attempt=state.job.status.restart_count + 1,
                                 max_restarts=state.job.spec.checkpoint.max_restarts,
                                 previous_workload=observed.data.workload, not_before=grace_end,
                                 failure=failure_info(observed.capture))
    locked = (grace.annotate(state, grace_end, settings.cre_group, state.job.metadata.resource_version),) \
        if grace_length else ()
    reset = (reset_goodput(observed.goodput, settings.cre_group, now),) if observed.goodput else ()
    return Plan((*locked, *commit.effects, *delete_failed(observed), *reset),
                reply=to_outbound(EventType.JOB_RESTARTED, FUNCTION, state.ref.namespace, state.ref.name, restarted,
                                  observed.cause), then=relaunch(observed, state, now, settings))


def finish_restart(observed: Observed, state: JobState, now: datetime, settings: Settings) -> tuple[Effect, ...]:
    """The steps of a restart already committed left undone (a redelivery after a crash between steps): the
    grace annotation, the TrainJob delete, and the GoodputMeasurement reset while the next attempt has not
    started and the measurement still shows step state (`reset_pending`, `is_reset`)."""
    effects: list[Effect] = []
    grace_length = grace.length(state, settings.restart_grace_seconds)
    if (grace_length and observed.data.workload.attempt == state.job.status.restart_count - 1
            and not grace.recorded(state, observed.trainjob)):
        effects.append(grace.annotate(state, now + grace_length, settings.cre_group))
    gm = observed.goodput
    reset = (reset_goodput(gm, settings.cre_group, now),) \
        if gm is not None and reset_pending(observed.data, state) and not is_reset(gm) else ()
    return (*effects, *delete_failed(observed), *reset)


def delete_failed(observed: Observed) -> tuple[Effect, ...]:
    """Delete the failed attempt's TrainJob, never a newer one with the same name (uid precondition)."""
    trainjob = observed.trainjob
    if trainjob is None or trainjob["metadata"].get("deletionTimestamp"):
        return ()
    workload = observed.data.workload
    meta = trainjob["metadata"]
    return (Delete(TRAINJOBS, meta["namespace"], workload.name, meta["uid"]),)


def relaunch(observed: Observed, state: JobState, now: datetime, settings: Settings,
             committing: bool = True) -> Relaunch | None:
    """The next attempt launched by the restart (`relaunches`): after its commit (which clears `workloadRef`),
    or after a restart recorded before whose next attempt has no workload yet."""
    if not relaunches(state, observed.trainjob, settings, now) or (
            not committing and state.job.status.workload_ref is not None):
        return None
    jobs = observed.runtime_jobs or own_patch_jobs(observed.trainjob, state)
    return Relaunch(state, settings, now, observed.cause, jobs, FUNCTION)




