"""What a resync tick does for one Job: the `resync` function's decision (SPEC §5). Pure.

`decide(observed, settings, now)`, on the Job as listed and as read (the same, unless a conflict made the
handler read again): what the event path would have done, sent where the cluster and the Job's status
disagree or time has run out — `dev.crefn.job.deadline` past its bound (`functions.domain.deadline`), a launch
without `workloadRef` (`functions.launch.decide`), `Failed`/`WorkloadDeleted` when its TrainJob is gone, the
`workload.phase` its conditions do not show yet (`functions.domain.phase_conditions.in_step`), a terminal Job's orphan
deleted (`functions.domain.launching.orphaned`); first, a check due (`functions.domain.due`) as
`dev.crefn.job.check`; a Job being deleted with CRE's finalizer: its deletion finished
(`functions.domain.deletion`). Every event is a `Send` to `K_SINK`. A finished Job and its TrainJob get the label
`crefn.dev/finished` (`label_writes`), which a tick's LISTs exclude; the hourly sweep (`is_sweep`) lists all and
mends the label both ways. Why: docs/cost.md#a-tick-that-ignores-history.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from events.emitted import JobCheckData, JobDeadlineData
from events.envelope import to_outbound
from events.objects import Pod
from events.types import FINISHED_LABEL, EventType
from functions.domain.adapter import decide_phase, deleted_phase
from functions.domain.attempts import current_workload_ref, workload_ref_of
from functions.domain.deadline import deadline
from functions.domain.deletion import Deleting, decide_deletion, finishes
from functions.domain.due import due_on_tick
from functions.domain.jobs import JobState, is_managed
from functions.domain.launching import LaunchObserved, decide_launch, delete_orphan, orphaned
from functions.domain.phase_conditions import in_step
from functions.domain.phases import parse_trainjob, phase_event
from functions.domain.trainjobs import owned_by
from functions.runtime.effects import Effect, Label, Send
from functions.runtime.plan import Plan, nothing
from functions.runtime.resources import TRAINJOBS, cre_jobs
from functions.runtime.settings import Settings

FUNCTION = "resync"
SWEEP_EVERY_MINUTES = 60
"""How often a tick lists every Job and TrainJob, finished ones too (the sweep)."""


@dataclass(frozen=True)
class Observed:
    listed: JobState
    """The Job as the tick listed it: what its checks are decided on."""
    state: JobState
    """The Job as read: the listed one, or read fresh after a conflict."""
    trainjob: dict[str, Any] | None
    """The object of the workload's name: the current attempt's TrainJob, or what blocks a launch."""
    runtime_jobs: tuple[str, ...] | None = None
    """For a launch: the replicatedJobs of the training runtime (whose pods are labelled)."""
    pods: tuple[Pod, ...] = ()
    """For a Job whose deletion the functions finish (`functions.domain.deletion`): the pods labelled with it."""


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    """The Job's finished label kept, its checks due, then what re-drives it, each event a `Send`; for a Job being
    deleted with CRE's finalizer, only its deletion finished."""
    if finishes(observed.state, settings):
        return decide_deletion(Deleting(observed.state, observed.trainjob, observed.pods), settings, now)
    checks = check_sends(observed.listed, settings)
    plan = redrive(observed, settings, now)
    sent: tuple[Effect, ...] = (Send(plan.reply, plan.created_ref),) if plan.reply is not None else ()
    return Plan((*label_writes(observed, settings), *checks, *plan.effects, *sent), reason=plan.reason, then=plan.then)


def is_sweep(now: datetime) -> bool:
    """Whether the tick at `now` is the sweep: the tick of the first minute of every `SWEEP_EVERY_MINUTES`."""
    return int(now.timestamp() // 60) % SWEEP_EVERY_MINUTES == 0


def finished(state: JobState, settings: Settings) -> bool:
    """A Job the tick has nothing left to do for, ever: managed, terminal (never written again) and due no
    check (`due_on_tick`: a Succeeded Job awaiting validation is not finished yet)."""
    return is_managed(state.job.metadata.labels, settings) and state.terminal and not due_on_tick(state)


def label_writes(observed: Observed, settings: Settings) -> tuple[Effect, ...]:
    """The finished label set on a Job that is finished and on its TrainJob (the Job's write locked on the
    resourceVersion read), or removed from one that is not (any more): a tick lists neither once set, the
    sweep lists both."""
    state, trainjob = observed.state, observed.trainjob
    want = finished(state, settings)
    value = "true" if want else None
    writes: list[Effect] = []
    if (state.job.metadata.labels.get(FINISHED_LABEL) == "true") != want:
        writes.append(Label(cre_jobs(settings.cre_group), state.ref.namespace, state.ref.name, {FINISHED_LABEL: value},
                            state.job.metadata.resource_version))
    if trainjob is not None and owned_by(trainjob, state) and not orphaned(state, trainjob, settings):
        meta = trainjob.get("metadata") or {}
        if ((meta.get("labels") or {}).get(FINISHED_LABEL) == "true") != want:
            writes.append(Label(TRAINJOBS, str(meta.get("namespace", "")), str(meta.get("name", "")),
                                {FINISHED_LABEL: value}))
    return tuple(writes)


def check_sends(state: JobState, settings: Settings) -> tuple[Send, ...]:
    if not is_managed(state.job.metadata.labels, settings) or not (due := due_on_tick(state)):
        return ()
    data = JobCheckData(job=state.ref, attempt=state.job.status.restart_count, checks=due)
    return (Send(to_outbound(EventType.JOB_CHECK, FUNCTION, state.ref.namespace, state.ref.name, data, None)),)


def redrive(observed: Observed, settings: Settings, now: datetime) -> Plan:
    """What the event path would have done for the Job: its plan, with the event it would have answered."""
    state = observed.state
    if orphaned(state, observed.trainjob, settings):
        assert observed.trainjob is not None
        return delete_orphan(observed.trainjob, f"{state.where} is terminal and records no workload")
    if not is_managed(state.job.metadata.labels, settings) or state.terminal:
        return nothing(f"{state.where}: nothing to re-drive")
    if state.job.metadata.deletion_timestamp is not None:  # going: nothing launched, nothing decided for it
        return nothing(f"{state.where} is being deleted")
    if due := deadline(state, now, settings.default_timeout_per_job):
        data = JobDeadlineData(job=state.ref, attempt=state.job.status.restart_count,
                               elapsed_seconds=due.elapsed.total_seconds(), timeout_seconds=due.timeout.total_seconds(),
                               blocked=due.blocked)
        return Plan(reply=to_outbound(EventType.JOB_DEADLINE, FUNCTION, state.ref.namespace, state.ref.name, data,
                                      None))
    ref = state.job.status.workload_ref
    if ref is None:  # managed, not terminal, no workload: to be launched (`why_not_launch`)
        return decide_launch(LaunchObserved(state, observed.trainjob, runtime_jobs=observed.runtime_jobs), settings,
                             now, FUNCTION, None)
    if observed.trainjob is None:
        return Plan(reply=phase_event(state.ref.name, current_workload_ref(state.job), deleted_phase(ref.name), now,
                                      FUNCTION, None))
    trainjob = parse_trainjob(observed.trainjob)
    result = decide_phase(trainjob)
    if in_step(state, workload_ref_of(trainjob), result):
        return nothing(f"{state.where}: in step with TrainJob {trainjob.metadata.name}")
    return Plan(reply=phase_event(state.ref.name, workload_ref_of(trainjob), result, now, FUNCTION, None))
