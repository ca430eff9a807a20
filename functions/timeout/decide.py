"""Timing a Job out (SPEC §5 `timeout`, CRE's `timeoutPerJob`): the `timeout` function's decision. Pure.

`decide(observed, settings, now)`, on what `functions.timeout.read` read: a managed, non-terminal
Job whose bound has run out on that read and this clock (`functions.domain.deadline`; the event may be
stale: a restart or a recovery since the tick moves the clocks) gets one status write, the whole
exclusive set `Failed`/`JobTimedOut`/the deadline's message with the failure log (reason `Timeout`)
while the Job has none, then its TrainJob deleted with a uid precondition; the reply is
`job.condition.changed`. Delivered again after that write (`restate_wanted`, `functions.domain.redelivery`), the
event makes good the Event, the TrainJob delete and the reply; its `time` (the tick's) stands for `observedAt`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from events.emitted import ConditionSummary, JobDeadlineData
from events.envelope import Envelope
from events.types import Reason
from functions.domain.attempts import current_workload_ref, delete_attempt
from functions.domain.condition_writes import condition_write
from functions.domain.conditions import condition
from functions.domain.deadline import TIMED_OUT, TIMED_OUT_BLOCKED, deadline
from functions.domain.jobs import Gone, JobState, condition_changed, why_not_active, why_not_ours
from functions.domain.pods import Capture, failure_log_field
from functions.domain.redelivery import Announced, restate
from functions.runtime.plan import Plan, nothing
from functions.runtime.settings import Settings

FUNCTION = "timeout"


@dataclass(frozen=True)
class Found:
    """The Job read fresh and, when its bound had run out at the read, its current attempt's TrainJob
    (None: gone, or of another attempt) and its pods with the log the timeout records (None: the Job
    has its failure log already, or its bound had not run out)."""

    cause: Envelope
    data: JobDeadlineData
    state: JobState
    trainjob: dict[str, Any] | None = None
    capture: Capture | None = None
    announced: Announced | None = None
    """The transition Event of the Job's `JobTimedOut`, read when the event may be the one that decided it,
    delivered again (`restate_wanted`); then `trainjob` is read too."""


Observed = Gone | Found


def timed_out(state: JobState) -> ConditionSummary:
    """The verdict a timeout writes on the Job as read: unschedulable whenever `schedulingBlockedSince` is set
    (which the verdict keeps)."""
    blocked = state.job.status.scheduling_blocked_since is not None
    return condition("Failed", Reason.JOB_TIMED_OUT, TIMED_OUT_BLOCKED if blocked else TIMED_OUT)


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    if isinstance(observed, Gone):
        return nothing(observed.why)
    state = observed.state
    if observed.announced is not None and not why_not_ours(state, observed.data.job, settings):
        return restate(state, timed_out(state), observed.announced.event, now, FUNCTION, observed.cause, None,
                       delete_attempt(observed.trainjob, state.job.metadata.uid))
    if why := why_not_active(state, observed.data.job, settings):
        return nothing(why)
    due = deadline(state, now, settings.default_timeout_per_job)
    if due is None:
        return nothing(f"{state.where}: within its time bound on a fresh read")
    new = condition("Failed", Reason.JOB_TIMED_OUT, due.message)
    write = condition_write(state, new, now, settings.cre_group, FUNCTION,
                            failure_log_field(state, observed.capture, timeout=True))
    assert write is not None  # the Job is not terminal: the flip is a change
    workload = current_workload_ref(state.job) if state.job.status.workload_ref else None
    return Plan((*write.effects, *delete_attempt(observed.trainjob, state.job.metadata.uid)),
                reply=condition_changed(state, write.status, new, FUNCTION, observed.cause, workload))

