"""Timing a Job out (SPEC §5 `timeout`, CRE's `timeoutPerJob`): the `timeout` function's decision. Pure.

`decide(observed, settings, now)`, on what `functions.handlers.timeout` read: a managed, non-terminal
Job whose bound has run out on that read and this clock (`functions.rules.deadline`; the event may be
stale: a restart or a recovery since the tick moves the clocks) gets one status write, the whole
exclusive set `Failed`/`JobTimedOut`/the deadline's message with the failure log (reason `Timeout`)
while the Job has none, then its TrainJob deleted with a uid precondition; the reply is
`job.condition.changed`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from events.emitted import JobDeadlineData
from events.envelope import Envelope
from events.types import Reason
from functions.plan import Delete, Effect, Plan, nothing
from functions.resources import TRAINJOBS
from functions.rules.attempts import controlled_by, current_workload_ref
from functions.rules.conditions import condition
from functions.rules.deadline import deadline
from functions.rules.jobs import Gone, JobState, condition_changed, why_not_active
from functions.rules.pods import Capture, failure_log_field
from functions.rules.verdicts import condition_write
from functions.settings import Settings

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


Observed = Gone | Found


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    if isinstance(observed, Gone):
        return nothing(observed.why)
    state = observed.state
    if why := why_not_active(state, observed.data.job, settings):
        return nothing(why)
    due = deadline(state, now, settings.default_timeout_per_job)
    if due is None:
        return nothing(f"{state.where}: within its time bound on a fresh read")
    new = condition("Failed", Reason.JOB_TIMED_OUT, due.message)
    write = condition_write(state, new, now, settings.cre_group, FUNCTION,
                            failure_log_field(state, observed.capture, timeout=True))
    assert write is not None  # the Job is not terminal: the flip is a change
    effects: list[Effect] = [*write.effects]
    trainjob = observed.trainjob
    if trainjob is not None and not trainjob["metadata"].get("deletionTimestamp") \
            and controlled_by(trainjob, state.job.metadata.uid):  # never another's, whatever workloadRef says
        meta = trainjob["metadata"]
        effects.append(Delete(TRAINJOBS, meta["namespace"], meta["name"], meta["uid"]))
    workload = current_workload_ref(state.job) if state.job.status.workload_ref else None
    return Plan(tuple(effects), reply=condition_changed(state, write.status, new, FUNCTION, observed.cause, workload))
