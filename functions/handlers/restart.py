"""`restart`: `workload.phase` Failed or `workload.stalled` → checkpoint restart, or the Job fails
(SPEC §5, §6.3; CRE's stall detection).

read: the Job and the attempt's TrainJob fresh (an event may be stale, duplicated or forged: a
TrainJob that exists and has not failed on a fresh read is not restarted), the Job's
GoodputMeasurements (`functions.reads.read_goodputs`: one GET of `<job>-goodput`, else one LIST)
when they can change the decision — the checkpoint evidence, the
stall re-check, the measurement a restart resets — and the attempt's pods. A stall is decided again
on the fresh Job, pods and GoodputMeasurement with the running path's own rules
(`functions.rules.running`): a TrainJob no longer Running, a workload scheduling-blocked or no longer
stalled is answered 202. decide, for the current attempt: a restart is, in this order, each step safe
to repeat:
1. the annotation `crefn.dev/restart-not-before` (now + grace, `functions.rules.grace`) on the Job, locked on the read
   resourceVersion;
2. one status write, the commit point (`functions.rules.restart.restart_write`), locked on the
   version step 1 left: nothing else can have changed the Job in between;
3. the failed TrainJob deleted with a uid precondition;
4. the Job's GoodputMeasurement's stall state reset (CRE's; a best-effort status merge patch), last:
   a reset that fails is reported in the answer and holds back nothing.
So a committed restart always carries its own grace end: `launch` may create the next attempt as
soon as it sees the commit and the grace is over, with no second write to wait for, and a crash
between steps 1 and 2 leaves only an annotation the next attempt at the restart writes again. A
redelivered event whose restart is already recorded (its attempt is older than `restartCount`)
finishes step 3 (and writes the annotation when the Job lacks this restart's, for restarts recorded
before this order: missing, or an earlier restart's, over before the failed TrainJob was created) and
emits nothing. Otherwise the Job fails: `WorkloadFailed`, or for a stall `WorkloadStalled` with the
stall's message.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from events.emitted import ConditionSummary, JobRestartedData, WorkloadPhaseData, WorkloadStalledData
from events.envelope import Envelope, parse_data, parse_phase_event, to_outbound
from events.types import EventType, Phase, Reason
from functions.apply import run
from functions.context import Context
from functions.plan import Delete, Effect, Outcome, Plan, nothing
from functions.reads import read_capture, read_goodputs, read_job, read_trainjob
from functions.resources import TRAINJOBS
from functions.rules import grace
from functions.rules.attempts import is_recorded, of_attempt
from functions.rules.conditions import changes_condition
from functions.rules.jobs import JobState, condition_changed, why_not_current, why_not_ours
from functions.rules.measurements import GoodputMeasurement, goodput_of, has_checkpoint, reset_goodput
from functions.rules.pods import Capture, failure_info
from functions.rules.restart import (
    decide_restart,
    failed_write,
    observe_failure,
    restart_write,
    still_running,
    verdict_write,
)
from functions.rules.running import decide_running
from functions.rules.verdicts import ConditionWrite
from functions.settings import Settings

FUNCTION = "restart"
ACCEPTS = frozenset({EventType.WORKLOAD_PHASE.value, EventType.WORKLOAD_STALLED.value})


@dataclass(frozen=True)
class Observed:
    cause: Envelope
    data: WorkloadPhaseData | WorkloadStalledData
    state: JobState | None
    trainjob: dict[str, Any] | None
    """The attempt's TrainJob (None: gone, or its name now held by another attempt)."""
    evidence: bool | None = None
    capture: Capture | None = None
    """The attempt's pods and failed container (its log tail only for a failure to record)."""
    goodput: GoodputMeasurement | None = None
    """The Job's GoodputMeasurement: the stall re-check's input, and what a restart resets."""


def read(env: Envelope, ctx: Context) -> Observed:
    stalled = env.type == EventType.WORKLOAD_STALLED
    data = parse_data(env, WorkloadStalledData) if stalled else parse_phase_event(env)
    if isinstance(data, WorkloadPhaseData) and data.phase is not Phase.FAILED:
        return Observed(env, data, None, None)
    state = read_job(ctx, data.job.namespace, data.job.name)
    if state is None:
        return Observed(env, data, None, None)
    trainjob = read_trainjob(ctx, data.workload.namespace, data.workload.name)
    if not of_attempt(trainjob, data.workload.attempt):
        trainjob = None
    could_restart = decide_restart(state, evidence=True, require_evidence=True).restart  # all but the evidence
    required = ctx.settings.require_checkpoint_evidence
    goodputs = read_goodputs(ctx, state, required and could_restart) if stalled or could_restart else ()
    evidence = has_checkpoint(goodputs, state.ref.name) if required and could_restart else None
    capture = None
    if not is_recorded(state.job, data.workload) and not why_not_current(state, data.workload) \
            and (not stalled or still_running(data.workload.uid, trainjob)):
        fails = not decide_restart(state, evidence, required).restart
        capture = read_capture(ctx, state, data.workload.attempt,
                               tail=fails and state.job.status.failure_log is None)
    return Observed(env, data, state, trainjob, evidence, capture, goodput_of(goodputs, state.ref.name))


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    data, state = observed.data, observed.state
    if isinstance(data, WorkloadPhaseData) and data.phase is not Phase.FAILED:
        return nothing(f"phase {data.phase.value} is handled by the status function")
    if why := why_not_ours(state, data.job, settings):
        return nothing(why)
    assert state is not None
    if is_recorded(state.job, data.workload):
        return Plan(finish_restart(observed, state, now, settings),
                    reason=f"{state.where}: restart of attempt {data.workload.attempt} already recorded")
    if why := why_not_current(state, data.workload):
        return nothing(why)
    if isinstance(data, WorkloadStalledData):
        return decide_stalled(observed, data, state, settings, now)
    failure = observe_failure(data.workload.name, data.workload.uid, observed.trainjob)
    if failure is None:
        return nothing(f"stale: TrainJob {data.workload.name} has not failed on a fresh read")
    if not decide_restart(state, observed.evidence, settings.require_checkpoint_evidence).restart:
        return fail(observed, state, failed_write(state, failure, now, settings.cre_group, FUNCTION,
                                                  observed.capture))
    return restart(observed, state, now, settings)


def decide_stalled(observed: Observed, data: WorkloadStalledData, state: JobState, settings: Settings,
                   now: datetime) -> Plan:
    """A stall, decided again on the fresh reads: restarted like a failure, else `Failed`/`WorkloadStalled`."""
    if not still_running(data.workload.uid, observed.trainjob) or observed.capture is None:
        return nothing(f"stale: TrainJob {data.workload.name} is not running on a fresh read")
    stall = decide_running(state, observed.capture.pods, data.workload.name, now, observed.goodput).stall
    if stall is None:
        return nothing(f"{state.where}: TrainJob {data.workload.name} is not stalled on a fresh read")
    if not decide_restart(state, observed.evidence, settings.require_checkpoint_evidence).restart:
        return fail(observed, state, verdict_write(state, Reason.WORKLOAD_STALLED, stall.message, now,
                                                   settings.cre_group, FUNCTION, observed.capture))
    return restart(observed, state, now, settings)


def fail(observed: Observed, state: JobState, decided: tuple[ConditionWrite, ConditionSummary] | None) -> Plan:
    """The Failed write (None: recorded already) and its `job.condition.changed`."""
    if decided is None:
        return nothing(f"{state.where}: failure already recorded")
    write, new = decided
    if not changes_condition(state.true_condition, new):
        return Plan(write.effects, reason=f"{state.where}: failure already recorded")
    return Plan(write.effects, reply=condition_changed(state, write.status, new, FUNCTION, observed.cause,
                                                       observed.data.workload))


def restart(observed: Observed, state: JobState, now: datetime, settings: Settings) -> Plan:
    """Steps 1 to 4 of a restart, and `job.restarted`."""
    commit = restart_write(state, now, settings.cre_group, FUNCTION)
    grace_end = now + grace.length(state, settings.restart_grace_seconds)
    assert state.job.spec.checkpoint is not None
    restarted = JobRestartedData(job=state.ref, attempt=state.job.status.restart_count + 1,
                                 max_restarts=state.job.spec.checkpoint.max_restarts,
                                 previous_workload=observed.data.workload, not_before=grace_end,
                                 failure=failure_info(observed.capture))
    locked = grace.annotate(state, grace_end, settings.cre_group, state.job.metadata.resource_version)
    reset = (reset_goodput(observed.goodput, settings.cre_group, now),) if observed.goodput else ()
    return Plan((locked, *commit.effects, *delete_failed(observed), *reset),
                reply=to_outbound(EventType.JOB_RESTARTED, FUNCTION, state.ref.namespace, state.ref.name, restarted,
                                  observed.cause))


def finish_restart(observed: Observed, state: JobState, now: datetime, settings: Settings) -> tuple[Effect, ...]:
    """Steps 2 and 3 of a restart already committed (a redelivery after a crash between steps)."""
    effects: list[Effect] = []
    if (observed.data.workload.attempt == state.job.status.restart_count - 1
            and not grace.recorded(state, observed.trainjob)):
        effects.append(grace.annotate(state, now + grace.length(state, settings.restart_grace_seconds),
                                      settings.cre_group))
    return (*effects, *delete_failed(observed))


def delete_failed(observed: Observed) -> tuple[Effect, ...]:
    """Delete the failed attempt's TrainJob, never a newer one with the same name (uid precondition)."""
    trainjob = observed.trainjob
    if trainjob is None or trainjob["metadata"].get("deletionTimestamp"):
        return ()
    workload = observed.data.workload
    return (Delete(TRAINJOBS, workload.namespace, workload.name, trainjob["metadata"]["uid"]),)


def handle(env: Envelope, ctx: Context) -> Outcome:
    return run(ctx, lambda: read(env, ctx), decide)
