"""What steers `validate`'s read: whether the event asks for a validation at all (`asked`), whether the
verdict's failed nodes need the attempt's pods (`wants_placed_nodes`), and the Events of a verdict the event
may have decided, delivered again (`restate_wanted`). Pure."""

from __future__ import annotations

from datetime import datetime

from events.emitted import JobCheckData, JobConditionChangedData, JobRef
from events.envelope import Envelope, InvalidEvent, parse_data
from events.types import EventType
from functions.domain.condition_writes import group_nodes
from functions.domain.due import awaiting_validation, not_asked
from functions.domain.jobs import JobState
from functions.domain.redelivery import restating_condition, sent_at
from functions.domain.thresholds import Verdict, Waiting
from functions.runtime.settings import Settings


def restate_wanted(state: JobState, cause: Envelope, now: datetime) -> tuple[str, ...]:
    """The Events to read for a succeeded Job validated already when the event may be the one that decided its
    `ValidationFailed`, delivered again: a success's `job.condition.changed` or a tick's check, each sent (its
    `time`) before the verdict was written (the tick asks only while the Job awaits validation); none otherwise."""
    true = state.true_condition
    if awaiting_validation(state) or true is None or true.type != "Succeeded":
        return ()
    return restating_condition(state, CONDITION, sent_at(cause), now)


def wants_placed_nodes(state: JobState, verdict: Verdict | Waiting, settings: Settings) -> bool:
    """Whether the verdict's failed nodes are those the pods were bound to: a True verdict for a Job with no
    `failedNodes` yet and no group-nodes annotation (the only case the pods are read for)."""
    return (isinstance(verdict, Verdict) and verdict.failed and not state.job.status.failed_nodes
            and not group_nodes(state, settings.cre_group))


CONDITION = "ValidationFailed"


def asked(env: Envelope) -> tuple[JobRef, str]:
    """The Job the event names, and why it asks for no validation ("" when it asks: a `job.check` asking for
    it, or the Job became Succeeded); nothing is read for one that does not."""
    if env.type == EventType.JOB_CHECK:
        check = parse_data(env, JobCheckData)
        return check.job, not_asked(check, "validation")
    if env.type == EventType.JOB_CONDITION_CHANGED:
        changed = parse_data(env, JobConditionChangedData)
        became = changed.new.type
        why = f"Job {changed.job.namespace}/{changed.job.name} became {became}, not Succeeded"
        return changed.job, "" if became == "Succeeded" else why
    raise InvalidEvent(f"unknown event type {env.type!r} for this function")
