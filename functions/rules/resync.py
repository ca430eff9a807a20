"""What a resync tick does for one Job: the `resync` function's decision (SPEC §5). Pure.

`decide(observed, settings, now)`, on the Job as the tick listed it and as read (the same, unless a
conflict made the handler read again): what the event path would have done, sent where the cluster
and the Job's status disagree (drift) or time has run out — a Job past its wall-clock bound
(`functions.rules.deadline`) gets `dev.crefn.job.deadline`, one without `workloadRef` is launched
(`functions.rules.launch`, its `workload.created`), one whose TrainJob is gone gets
`Failed`/`WorkloadDeleted`, one whose TrainJob's phase its conditions do not show yet
(`functions.rules.status.in_step`) the `workload.phase` event. Before them, a managed Job due for a
clock-driven check (`functions.rules.due`, decided on the Job as listed) gets `dev.crefn.job.check`.
Every event is a `Send` to `K_SINK` (the tick answers none); a Job in step sends nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from events.emitted import JobCheckData, JobDeadlineData
from events.envelope import to_outbound
from events.types import EventType
from functions.plan import Effect, Plan, Send, nothing
from functions.rules.adapter import decide_phase, deleted_phase
from functions.rules.attempts import current_workload_ref, workload_ref_of
from functions.rules.deadline import deadline
from functions.rules.due import due_on_tick
from functions.rules.jobs import JobState, is_managed
from functions.rules.launch import LaunchObserved, decide_launch
from functions.rules.phase import parse_trainjob, phase_event
from functions.rules.status import in_step
from functions.settings import Settings

FUNCTION = "resync"


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


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    """The Job's checks due, then what re-drives it, each event a `Send`."""
    checks = check_sends(observed.listed, settings)
    plan = redrive(observed, settings, now)
    sent: tuple[Effect, ...] = (Send(plan.reply, plan.created_ref),) if plan.reply is not None else ()
    return Plan((*checks, *plan.effects, *sent), reason=plan.reason)


def check_sends(state: JobState, settings: Settings) -> tuple[Send, ...]:
    if not is_managed(state.job.metadata.labels, settings) or not (due := due_on_tick(state)):
        return ()
    data = JobCheckData(job=state.ref, attempt=state.job.status.restart_count, checks=due)
    return (Send(to_outbound(EventType.JOB_CHECK, FUNCTION, state.ref.namespace, state.ref.name, data, None)),)


def redrive(observed: Observed, settings: Settings, now: datetime) -> Plan:
    """What the event path would have done for the Job: its plan, with the event it would have answered."""
    state = observed.state
    if not is_managed(state.job.metadata.labels, settings) or state.terminal:
        return nothing(f"{state.where}: nothing to re-drive")
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
