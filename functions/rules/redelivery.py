"""A verdict's event delivered again: its Event and its `job.condition.changed` made good. Pure.

A function that wrote a verdict (`Failed`, `Succeeded`) and died before its Kubernetes Event or its reply, or
whose reply the Broker refused, sees the same event again (Knative delivers at least once) on a terminal Job.
It restates the verdict when the Job's True exclusive condition is exactly the one the event would write (type,
reason, message) for the Job's current attempt, written within `DECISION_WINDOW`, and the event was seen no
later than the write (`observedAt`, when it has one); never in observe mode (the functions wrote nothing). Then
the transition Event (`functions.rules.kubeevents.transition_name`) is read: missing, it is recorded and the
reply sent, once `DECIDING` is over (before, the decider may be recording it: a wait); recorded with this
event's id (`crefn.dev/cause`), only the reply is sent; recorded for another event, nothing.
Details: docs/functions.md#verdicts-delivered-again
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from events.emitted import ConditionSummary, WorkloadRef
from events.envelope import Envelope
from functions.plan import Plan, nothing, wait_until
from functions.rules.attempts import is_current
from functions.rules.claims import DECISION_WINDOW
from functions.rules.conditions import parse_rfc3339
from functions.rules.jobs import JobState, condition_changed
from functions.rules.kubeevents import CAUSE_ANNOTATION, job_event, transition_name

DECIDING = timedelta(seconds=30)
"""How long a verdict's decider may still be at work after its write: as long as the Broker waits for a function's
answer (its delivery `timeout`, PT30S in knative/base). A missing Event is not made good before: the decider
records it, and its event's reply goes out once."""


@dataclass(frozen=True)
class Announced:
    """The transition Event of a verdict, as read (None: not recorded)."""

    event: dict[str, Any] | None


def written_at(state: JobState, new: ConditionSummary) -> datetime | None:
    """When the Job's True exclusive condition became `new` (None: it is not, or has no time)."""
    if state.true_condition != new:
        return None
    for cond in state.conditions:
        if cond.get("type") == new.type and cond.get("status") == "True":
            return parse_rfc3339(str(cond.get("lastTransitionTime") or ""))
    return None


def restating(state: JobState, new: ConditionSummary | None, workload: WorkloadRef, observed_at: datetime | None,
              now: datetime, observe: bool) -> str:
    """The name of the transition Event to read when the event may be the one that decided the Job's verdict
    `new`, delivered again ("" when it is not, and always in observe mode)."""
    if observe or new is None or not is_current(state.job, workload):
        return ""
    at = written_at(state, new)
    if at is None or now - at > DECISION_WINDOW:
        return ""
    if observed_at is not None and observed_at.replace(microsecond=0) > at:
        return ""  # seen after the verdict was written: not the event that decided it
    return transition_name(state, new)


def restate(state: JobState, new: ConditionSummary, announced: Mapping[str, Any] | None, now: datetime,
            function: str, cause: Envelope, workload: WorkloadRef) -> Plan:
    """The verdict's Event (when missing) and its `job.condition.changed` again, read off the stored Job
    (`previous` is not known any more: null); nothing when another event announced it."""
    if announced is not None:
        by = ((announced.get("metadata") or {}).get("annotations") or {}).get(CAUSE_ANNOTATION)
        if by != cause.id:
            return nothing(f"{state.where} is terminal: its {new.type}/{new.reason} was announced by another event")
    at = written_at(state, new)
    if announced is None and at is not None and now - at < DECIDING:
        age = int((now - at).total_seconds())
        return Plan((wait_until(f"{state.where}: its {new.type}/{new.reason} was written {age} s ago: its decider "
                                "may still be recording its Event", at + DECIDING, now),))
    effects = () if announced is not None else (
        job_event(state, transition_name(state, new), new.reason, new.message, new.type == "Failed", now, function,
                  cause.id),)
    reply = condition_changed(state, {}, new, function, cause, workload, restated=True)
    return Plan(effects, reply=reply, reason=f"{state.where}: {new.type}/{new.reason} delivered again")
