"""`timeout`: `dev.crefn.job.deadline` → the Job fails `JobTimedOut` and its TrainJob is deleted
(CRE's `timeoutPerJob`, `functions.rules.deadline`).

read: the Job fresh, its current TrainJob, and the pods of its attempt with the log of the one the
timeout records (the trainer step's pod that ran, container `node`). decide: a managed, non-terminal
Job whose bound has run out on this fresh read and this clock (the event may be stale: a restart or a
recovery since the tick moves the clocks) gets one status write, the whole exclusive set
`Failed`/`JobTimedOut`/`Job exceeded timeoutPerJob` (`… while its pods were unschedulable` for a blocked
episode) with the failure log (reason `Timeout`) while the Job has none, the Warning Event of the flip,
then the TrainJob deleted with a uid precondition; the answer is `job.condition.changed`. The delete
reaches `restart` as a failure of a terminal Job: a timed-out Job is never restarted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from events.emitted import JobDeadlineData
from events.envelope import Envelope, InvalidEvent, parse_data
from events.types import EventType, Reason
from functions.apply import run
from functions.context import Context
from functions.plan import Delete, Effect, Outcome, Plan, nothing
from functions.reads import read_capture, read_job, read_trainjob
from functions.resources import TRAINJOBS
from functions.rules.attempts import current_workload_ref, of_attempt
from functions.rules.conditions import condition
from functions.rules.deadline import deadline
from functions.rules.jobs import JobState, condition_changed, why_not_active
from functions.rules.pods import Capture, failure_log_field
from functions.rules.verdicts import condition_write
from functions.settings import Settings

FUNCTION = "timeout"
ACCEPTS = frozenset({EventType.JOB_DEADLINE.value})


@dataclass(frozen=True)
class Observed:
    cause: Envelope
    data: JobDeadlineData
    state: JobState | None
    trainjob: dict[str, Any] | None = None
    capture: Capture | None = None


def read(env: Envelope, ctx: Context) -> Observed:
    if env.type != EventType.JOB_DEADLINE:
        raise InvalidEvent(f"unknown event type {env.type!r} for this function")
    data = parse_data(env, JobDeadlineData)
    state = read_job(ctx, data.job.namespace, data.job.name)
    if state is None or state.terminal or deadline(state, ctx.clock(), ctx.settings.default_timeout_per_job) is None:
        return Observed(env, data, state)
    ref = state.job.status.workload_ref
    trainjob = read_trainjob(ctx, ref.namespace or state.ref.namespace, ref.name) if ref else None
    if not of_attempt(trainjob, state.job.status.restart_count):
        trainjob = None
    capture = None if state.job.status.failure_log else read_capture(ctx, state, timeout=True)
    return Observed(env, data, state, trainjob, capture)


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    state = observed.state
    if why := why_not_active(state, observed.data.job, settings):
        return nothing(why)
    assert state is not None
    due = deadline(state, now, settings.default_timeout_per_job)
    if due is None:
        return nothing(f"{state.where}: within its time bound on a fresh read")
    new = condition("Failed", Reason.JOB_TIMED_OUT, due.message)
    write = condition_write(state, new, now, settings.cre_group, FUNCTION,
                            failure_log_field(state, observed.capture, timeout=True))
    assert write is not None  # the Job is not terminal: the flip is a change
    effects: list[Effect] = [*write.effects]
    trainjob = observed.trainjob
    if trainjob is not None and not trainjob["metadata"].get("deletionTimestamp"):
        meta = trainjob["metadata"]
        effects.append(Delete(TRAINJOBS, meta["namespace"], meta["name"], meta["uid"]))
    workload = current_workload_ref(state.job) if state.job.status.workload_ref else None
    return Plan(tuple(effects), reply=condition_changed(state, write.status, new, FUNCTION, observed.cause, workload))


def handle(env: Envelope, ctx: Context) -> Outcome:
    return run(ctx, lambda: read(env, ctx), decide)
