"""Job conditions from the workload's phase (SPEC §5 `status`).

Pending → `InProgress`/`WorkloadPending`; Running → the running-path decision
(`functions.domain.running`: scheduling-blocked, else stalled — no write, the stall is returned —
else `InProgress`/`WorkloadRunning` and `workloadStartTime` once); Succeeded →
`Succeeded`/`WorkloadCompleted`. Failed is `restart`'s. `in_step` says when a Job's status already
shows its workload's phase (what `resync` skips); a Running Job with stall detection never is, so the
tick re-decides it as time passes with nothing changing. `decide` is the `status` function's decision
on what `functions.status.read` read: the phase written is the adapter's on the TrainJob as read,
whatever the event said.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from events.emitted import WorkloadPhaseData, WorkloadRef, WorkloadStalledData
from events.envelope import Envelope, to_outbound
from events.objects import Pod
from events.types import EventType, Phase
from functions.domain.adapter import PhaseResult
from functions.domain.conditions import changes_condition
from functions.domain.jobs import Gone, JobState, condition_changed, why_not_current, why_not_ours
from functions.domain.measurement_objects import GoodputMeasurement
from functions.domain.phase_conditions import decide_status
from functions.domain.redelivery import Announced, restate
from functions.domain.stall import Stall, producer_cadence
from functions.runtime.plan import Plan, nothing
from functions.runtime.settings import Settings
from functions.status.wants import first_phase_decided, succeeded

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
                            observed.pods, observed.goodput, observed.cause.id, producer_cadence(settings))
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
