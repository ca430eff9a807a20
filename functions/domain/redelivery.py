"""A decision's event delivered again: its Event and its reply made good. Pure.

A function that wrote a verdict (`Failed`, `Succeeded`, `ValidationFailed`) and died before its Kubernetes Event or
its reply, or whose reply the Broker refused, sees the same event again (Knative delivers at least once) and finds
its write done. It restates the verdict when the Job shows exactly what the event would write, written within
`DECISION_WINDOW`, and the event was seen no later than the write (`observedAt`, else its `time` attribute, when it
has one). Then the write's Event (`transition_name`, `condition_name`) is read: missing, it is recorded and the
reply sent once `DECIDING` is over (before, a wait); recorded with this event's id (`crefn.dev/cause`), only the
reply is sent (with the effects the plan had after the Event); recorded for another event, nothing. Handlers do
not ask in observe mode (the functions wrote nothing). Details: docs/functions.md#verdicts-delivered-again
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from events.emitted import ConditionSummary, WorkloadRef
from events.envelope import Envelope, Outbound
from functions.domain.conditions import parse_rfc3339
from functions.domain.jobs import JobState, condition_changed
from functions.domain.kubeevents import CAUSE_ANNOTATION, condition_names, job_event, transition_name
from functions.runtime.effects import Effect, KubeEvent, wait_until
from functions.runtime.plan import Plan, nothing

DECIDING = timedelta(seconds=30)
"""How long a decider may still be at work after its write: as long as the Broker waits for a function's answer
(its delivery `timeout`, PT30S in knative/base). A missing Event is not made good before: the decider records it,
and a second change seen before the write must not announce it too."""


@dataclass(frozen=True)
class Announced:
    """The Event of a verdict, as read (None: not recorded)."""

    event: dict[str, Any] | None


def sent_at(cause: Envelope) -> datetime | None:
    """The event's `time` attribute: when its source decided it (None: absent, unreadable, or without an offset)."""
    sent = parse_rfc3339(cause.time)
    return sent if sent is not None and sent.tzinfo is not None else None


def written_at(state: JobState, new: ConditionSummary) -> datetime | None:
    """When the Job's True exclusive condition became `new` (None: it is not, or has no time)."""
    if state.true_condition != new:
        return None
    return transition_time(state, new.type)


def transition_time(state: JobState, cond_type: str) -> datetime | None:
    """The `lastTransitionTime` of the Job's condition of that type (None: it has none)."""
    for cond in state.conditions:
        if cond.get("type") == cond_type:
            return parse_rfc3339(str(cond.get("lastTransitionTime") or ""))
    return None


def recent(at: datetime | None, observed_at: datetime | None, now: datetime) -> bool:
    """Whether a write at `at` is within the decision window, and the event was seen no later, to the second."""
    if at is None or now - at > DECISION_WINDOW:
        return False
    return observed_at is None or observed_at.replace(microsecond=0) <= at


def restating(state: JobState, new: ConditionSummary | None, observed_at: datetime | None, now: datetime) -> str:
    """The name of the transition Event to read when the event, about the Job's current attempt, may be the one
    that decided the Job's verdict `new`, delivered again ("" when it is not)."""
    if new is None or not recent(written_at(state, new), observed_at, now):
        return ""  # not what the event would write, too old, or seen after it was written
    return transition_name(state, new)


def restating_condition(state: JobState, cond_type: str, sent: datetime | None, now: datetime) -> tuple[str, ...]:
    """The names of the Events of the Job's independent condition `cond_type` to read (`condition_names`: the
    current attempt's first; the first found is the condition's) when the event, sent at `sent`, may be the one
    that wrote it, delivered again; none when it is not, or says not when it was sent."""
    cond = next((c for c in state.conditions if c.get("type") == cond_type), None)
    if cond is None or sent is None or not recent(transition_time(state, cond_type), sent, now):
        return ()
    return condition_names(state, cond_type, str(cond.get("reason") or ""))


def caused_by(announced: Mapping[str, Any]) -> str:
    return str(((announced.get("metadata") or {}).get("annotations") or {}).get(CAUSE_ANNOTATION) or "")


def announce_again(state: JobState, what: str, announced: Mapping[str, Any] | None, event: KubeEvent,
                   cause: Envelope, reply: Outbound, written: datetime | None, now: datetime,
                   effects: tuple[Effect, ...] = ()) -> Plan:
    """`event` (when not recorded), `effects` and `reply` again; nothing when another event announced `what`; a
    wait while `event` is missing and the write (at `written`) is not `DECIDING` old."""
    if announced is not None and caused_by(announced) != cause.id:
        return nothing(f"{state.where}: its {what} was announced by another event")
    if announced is None and written is not None and now - written < DECIDING:
        age = int((now - written).total_seconds())
        return Plan((wait_until(f"{state.where}: its {what} was written {age} s ago: its decider may still be "
                                "recording its Event", written + DECIDING, now),))
    recorded = () if announced is not None else (event,)
    return Plan((*recorded, *effects), reply=reply, reason=f"{state.where}: {what} delivered again")


def restate(state: JobState, new: ConditionSummary, announced: Mapping[str, Any] | None, now: datetime,
            function: str, cause: Envelope, workload: WorkloadRef | None,
            effects: tuple[Effect, ...] = ()) -> Plan:
    """The verdict's Event (when missing), `effects` and its `job.condition.changed` again, read off the stored
    Job (`previous` is not known any more: null); nothing when another event announced it."""
    event = job_event(state, transition_name(state, new), new.reason, new.message, new.type == "Failed", now,
                      function, cause.id)
    reply = condition_changed(state, {}, new, function, cause, workload, restated=True)
    what = f"{new.type}/{new.reason}"
    return announce_again(state, what, announced, event, cause, reply, written_at(state, new), now, effects)


DECISION_WINDOW = timedelta(hours=1)
"""How recent a state a decision event announces (`on_decision`)."""
