"""Job conditions from the workload's phase (SPEC §5 `status`).

Pending → `InProgress`/`WorkloadPending`; Running → the running-path decision
(`functions.rules.running`: scheduling-blocked, else stalled — no write, the stall is returned —
else `InProgress`/`WorkloadRunning` and `workloadStartTime` once); Succeeded →
`Succeeded`/`WorkloadCompleted`. Failed is `restart`'s. `in_step` says when a Job's status already
shows its workload's phase (what `resync` skips); a Running Job with stall detection never is, so the
tick re-decides it as time passes with nothing changing. `decide` is the `status` function's decision
on what `functions.handlers.status` read: the phase written is the adapter's on the TrainJob as read,
whatever the event said.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from events.emitted import ConditionSummary, WorkloadPhaseData, WorkloadRef, WorkloadStalledData
from events.envelope import Envelope, to_outbound
from events.objects import Pod
from events.types import EventType, Phase, Reason
from functions.errors import PermanentError
from functions.plan import Plan, nothing
from functions.rules.adapter import PhaseResult
from functions.rules.attempts import is_current
from functions.rules.conditions import changes_condition, condition
from functions.rules.jobs import Gone, JobState, condition_changed, why_not_current, why_not_ours, write_status
from functions.rules.measurements import GoodputMeasurement
from functions.rules.redelivery import Announced, restate, restating
from functions.rules.running import decide_running, running_condition
from functions.rules.stall import Stall
from functions.rules.verdicts import ConditionWrite, condition_write
from functions.settings import Settings

FUNCTION = "status"


@dataclass(frozen=True)
class Unread:
    """An event read nothing for: its phase is Failed (`restart`'s), or its creator decided it
    (`first_phase_decided`). A Job gone is `Gone`."""

    cause: Envelope
    data: WorkloadPhaseData


@dataclass(frozen=True)
class Found:
    """The Job read fresh; its attempt's TrainJob not read (the Job is not one to act on for the event),
    gone, of another attempt or not this Job's. `announced`: the transition Event of the Job's verdict, read
    when the event may be the one that decided it, delivered again (`restate_wanted`)."""

    cause: Envelope
    data: WorkloadPhaseData
    state: JobState
    announced: Announced | None = None


@dataclass(frozen=True)
class Read:
    """The Job and its current attempt's TrainJob read fresh, the adapter's phase of that TrainJob (what
    is decided on) and, for a Running one, the attempt's pods and the Job's GoodputMeasurement."""

    cause: Envelope
    data: WorkloadPhaseData
    state: JobState
    workload: WorkloadRef
    result: PhaseResult
    pods: tuple[Pod, ...] = ()
    goodput: GoodputMeasurement | None = None


Observed = Unread | Gone | Found | Read


def condition_for(phase: Phase, name: str, message: str) -> ConditionSummary:
    subject = f"Workload TrainJob/{name}"
    if phase is Phase.PENDING:
        text = f"{subject} is pending: {message}" if message else f"{subject} is pending"
        return condition("InProgress", Reason.WORKLOAD_PENDING, text)
    if phase is Phase.RUNNING:
        return running_condition(name)
    if phase is Phase.SUCCEEDED:
        text = f"{subject} completed: {message}" if message else f"{subject} completed successfully"
        return condition("Succeeded", Reason.WORKLOAD_COMPLETED, text)
    raise PermanentError("phase Failed is handled by the restart function")


def decide_status(state: JobState, phase: Phase, name: str, message: str, now: datetime, group: str,
                  function: str, pods: Sequence[Pod] = (), goodput: GoodputMeasurement | None = None,
                  cause: str = "") -> tuple[ConditionWrite, ConditionSummary | None] | Stall | None:
    """The write for a phase of the current attempt (with the attempt's pods and the Job's
    GoodputMeasurement for a Running one) and the True exclusive condition after it; the stall of a
    stalled workload (nothing to write); None when nothing would change. `cause`: the deciding event's id,
    recorded on the Event of a verdict."""
    if phase is not Phase.RUNNING:
        new = condition_for(phase, name, message)
        write = condition_write(state, new, now, group, function, cause=cause)
        return None if write is None else (write, new)
    running = decide_running(state, pods, name, now, goodput)
    if running.stall is not None:
        return running.stall
    if running.condition is not None:
        write = condition_write(state, running.condition, now, group, function, running.fields)
        return None if write is None else (write, running.condition)
    if not running.fields:
        return None
    return ConditionWrite(running.fields, (write_status(state, running.fields, group),)), state.true_condition


def in_step(state: JobState, workload: WorkloadRef, result: PhaseResult) -> bool:
    """Whether the Job's status already shows its current TrainJob's phase (nothing to re-drive): the
    condition `status` would write is the True one, and a running workload has its start time. A
    failed or succeeded TrainJob of a non-terminal Job, or a TrainJob of another attempt, is never in
    step: its event must go to the function that decides."""
    if not is_current(state.job, workload) or result.phase in (Phase.FAILED, Phase.SUCCEEDED):
        return False
    if result.phase is Phase.RUNNING and (state.job.status.workload_start_time is None
                                          or state.job.status.scheduling_blocked_since is not None
                                          or state.job.spec.stall_multiplier is not None):
        return False  # re-driven each tick: a block's grace and a stall's bound run out with nothing changing
    return state.true_condition == condition_for(result.phase, workload.name, result.message)


def restate_wanted(state: JobState, data: WorkloadPhaseData, now: datetime) -> str:
    """The transition Event to read when the Job is terminal and the event, a Succeeded phase, may be the one
    that decided its `Succeeded` verdict, delivered again (`functions.rules.redelivery.restating`); "" otherwise."""
    if not state.terminal or data.phase is not Phase.SUCCEEDED or not is_current(state.job, data.workload):
        return ""
    return restating(state, succeeded(data), data.observed_at, now)


def succeeded(data: WorkloadPhaseData) -> ConditionSummary:
    """The verdict of a Succeeded phase, as the event says it (restated only when the Job shows exactly it)."""
    return condition_for(Phase.SUCCEEDED, data.workload.name, data.message)


def first_phase_decided(data: WorkloadPhaseData) -> bool:
    """Whether the event is the creation of a Running TrainJob (`created`): the function that created it wrote
    its first phase from what the create returned (`functions.rules.launch.FirstPhase`). Nothing is read for
    it; a forged one only skips work, and a first phase that was not written (its write lost a race) comes
    back from the TrainJob's next change or the resync tick."""
    return bool(data.created) and data.phase is Phase.RUNNING


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    if isinstance(observed, Gone):  # read only for an event that is not Failed
        return nothing(observed.why)
    data = observed.data
    if first_phase_decided(data):
        return nothing(f"TrainJob {data.workload.name} was just created: the function that created it decided "
                       "its first phase")
    if isinstance(observed, Unread) or data.phase is Phase.FAILED:
        return nothing("phase Failed is handled by the restart function")
    if why := why_not_ours(observed.state, data.job, settings):
        return nothing(why)
    if isinstance(observed, Found) and observed.announced is not None:
        return restate(observed.state, succeeded(data), observed.announced.event, now, FUNCTION, observed.cause,
                       data.workload)
    if why := why_not_current(observed.state, data.workload):
        return nothing(why)
    if isinstance(observed, Found):
        return nothing(f"{observed.state.where}: TrainJob {data.workload.name} of attempt "
                       f"{observed.state.job.status.restart_count} is gone on a fresh read")
    return decide_read(observed, settings, now)


def decide_read(observed: Read, settings: Settings, now: datetime) -> Plan:
    data, state, workload, result = observed.data, observed.state, observed.workload, observed.result
    said = "" if result.phase is data.phase else f" (the event said {data.phase.value})"
    if result.phase is Phase.FAILED:
        return nothing(f"{state.where}: TrainJob {workload.name} has failed on a fresh read{said}: "
                       "the restart function decides")
    decided = decide_status(state, result.phase, workload.name, result.message, now, settings.cre_group, FUNCTION,
                            observed.pods, observed.goodput, observed.cause.id)
    if decided is None:
        return nothing(f"{state.where}: nothing changed: TrainJob {workload.name} is {result.phase.value}{said}")
    if isinstance(decided, Stall):
        stalled = WorkloadStalledData(job=state.ref, workload=workload, mode=decided.mode,
                                      elapsed_seconds=decided.elapsed_seconds,
                                      threshold_seconds=decided.threshold_seconds, message=decided.message)
        return Plan(reply=to_outbound(EventType.WORKLOAD_STALLED, FUNCTION, state.ref.namespace, state.ref.name,
                                      stalled, observed.cause))
    write, new = decided
    if new is None or not changes_condition(state.true_condition, new):
        return Plan(write.effects, reason=f"{state.where}: condition kept{said}")
    return Plan(write.effects, reason=said.strip(" ()"),
                reply=condition_changed(state, write.status, new, FUNCTION, observed.cause, workload))
