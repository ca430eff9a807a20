"""`timeout`: `dev.crefn.job.deadline` → the Job fails `JobTimedOut` and its TrainJob is deleted
(CRE's `timeoutPerJob`, `failTimedOutJob`).

read: the Job fresh and, when its bound has run out on this read and this clock
(`functions.domain.deadline`: a stale event, or a restart or recovery since the tick, finds no
deadline), its current attempt's TrainJob and, while the Job has no failure log, the pods of its
attempt with the log of the one the timeout records (the trainer step's pod that ran, container
`node`). decide: `functions.timeout.decide.decide`; the message says `while its pods were
unschedulable` whenever `schedulingBlockedSince` is set at the timeout, whichever clock ran out. The
delete reaches `restart` as a failure of a terminal Job: a timed-out Job is never restarted. A terminal Job
the event may have timed out, delivered again (`wants.restate_wanted`): its TrainJob and its verdict's Event.
"""

from __future__ import annotations

from typing import Any

from events.emitted import JobDeadlineData
from events.envelope import Envelope, InvalidEvent, parse_data
from events.types import EventType
from functions.domain.attempts import of_attempt
from functions.domain.deadline import deadline
from functions.domain.jobs import Gone, JobState, why_not_ours
from functions.domain.redelivery import Announced
from functions.runtime.apply import run
from functions.runtime.context import Context
from functions.runtime.plan import Outcome
from functions.runtime.reads import read_capture, read_event, read_job, read_trainjob
from functions.timeout import wants
from functions.timeout.decide import Found, Observed, decide

ACCEPTS = frozenset({EventType.JOB_DEADLINE.value})


def read(env: Envelope, ctx: Context) -> Observed:
    if env.type != EventType.JOB_DEADLINE:
        raise InvalidEvent(f"unknown event type {env.type!r} for this function")
    data = parse_data(env, JobDeadlineData)
    state = read_job(ctx, data.job.namespace, data.job.name)
    if state is None:
        return Gone(data.job)
    if state.terminal and not ctx.settings.observe and not why_not_ours(state, data.job, ctx.settings) \
            and (name := wants.restate_wanted(state, data, env, ctx.clock())):
        return Found(env, data, state, current_trainjob(ctx, state),
                     announced=Announced(read_event(ctx, state.ref.namespace, name)))
    if state.terminal or deadline(state, ctx.clock(), ctx.settings.default_timeout_per_job) is None:
        return Found(env, data, state)
    trainjob = current_trainjob(ctx, state)
    capture = None if state.job.status.failure_log else read_capture(ctx, state, timeout=True)
    return Found(env, data, state, trainjob, capture)


def current_trainjob(ctx: Context, state: JobState) -> dict[str, Any] | None:
    """The TrainJob `workloadRef` names, when it is of the Job's current attempt."""
    ref = state.job.status.workload_ref
    trainjob = read_trainjob(ctx, ref.namespace or state.ref.namespace, ref.name) if ref else None
    return trainjob if of_attempt(trainjob, state.job.status.restart_count) else None


def handle(env: Envelope, ctx: Context) -> Outcome:
    return run(ctx, lambda: read(env, ctx), decide)
