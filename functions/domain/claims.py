"""What an event about a Job claims for its alerts, and what the stored Job bears out of it (SPEC §8). Pure.

A decision event (`job.condition.changed`, `job.restarted`, `job.hardware.failed`, `job.validation`)
and a Job delete reach `alert` through the Broker, where any pod may post one: what they say is a
claim, never a fact. Each event names the alerts it is about (`Claim`: an alert name and `firing` or
`resolved`); the alerts sent are those of the Job as read fresh (`functions.domain.alerts`) that
match a claim, with the stored Job's texts. A claim the stored Job does not bear out sends nothing,
a resolve only goes for a state the Job is not in, a replay re-opens nothing resolved, and a delete
resolves only once the Job is gone. The cases: docs/functions.md#claims-of-events
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from events.emitted import (
    AlertData,
    JobConditionChangedData,
    JobHardwareFailedData,
    JobRestartedData,
    JobValidationData,
)
from events.types import Reason
from functions.domain.alerts import (
    BLOCKED,
    EXHAUSTED,
    FAILED,
    HARDWARE,
    RESTARTED,
    VALIDATION,
    Restated,
    Status,
    held_states,
    left_states,
    on_job_deleted,
    restart_states,
)
from functions.domain.jobs import JobState
from functions.domain.redelivery import DECISION_WINDOW

Claim = tuple[str, Status]
GROWING = frozenset({HARDWARE, VALIDATION})
"""Alerts whose condition stays True, its time unchanged, while what it says grows (another failed node,
another threshold): each decision event about them is announced, the window does not apply."""
Decision = JobConditionChangedData | JobRestartedData | JobHardwareFailedData | JobValidationData


def claimed(event: Decision, state: JobState) -> frozenset[Claim]:
    """The alerts a decision event is about. A restart is about the stored Job's latest restart only."""
    if isinstance(event, JobRestartedData):
        return frozenset({(RESTARTED, "firing")}) if event.attempt == state.job.status.restart_count else frozenset()
    if isinstance(event, JobHardwareFailedData):
        return frozenset({(HARDWARE, "firing")})
    if isinstance(event, JobValidationData):
        return frozenset({(VALIDATION, "firing" if event.failed else "resolved")})
    claims: set[Claim] = set()
    if event.new.type == "Failed":
        claims |= {(FAILED, "firing"), (EXHAUSTED, "firing"), (RESTARTED, "resolved")}
    elif event.new.type == "Succeeded":
        claims.add((RESTARTED, "resolved"))
    if event.new.reason == Reason.WORKLOAD_SCHEDULING_BLOCKED:
        claims.add((BLOCKED, "firing"))
    elif event.previous is not None and event.previous.reason == Reason.WORKLOAD_SCHEDULING_BLOCKED:
        claims.add((BLOCKED, "resolved"))
    return frozenset(claims)


def firing(state: JobState, now: datetime) -> list[AlertData]:
    """The alerts the stored Job holds now (none past its `endsAt`)."""
    return [a for a, _ in (*held_states(state, now), *restart_states(state, now))
            if a.ends_at is None or a.ends_at > now]


def on_decision(state: JobState, claims: frozenset[Claim], now: datetime) -> list[AlertData]:
    """The claimed alerts as the stored Job says them: those it holds, and the resolves of states it left.
    Announced only for a state that began, or was left, within `DECISION_WINDOW` (a state held since a time
    not known counts as new; a resolve of a state not known to be left, as old; `GROWING` ones always); an
    older one is `Restated` (Alertmanager, and PagerDuty for a resolve: no new page). A decision event comes
    within seconds, and Knative's retries of it end well within the window; a replayed or forged one about
    an older state pages no one again."""
    def fresh(at: datetime | None, held: bool) -> bool:
        return held if at is None else now - at <= DECISION_WINDOW

    stated = (*held_states(state, now), *restart_states(state, now))
    held = [(a, a.alertname in GROWING or fresh(at, True)) for a, at in stated if a.ends_at is None or a.ends_at > now]
    left = [(a, fresh(at, False)) for a, at in left_states(state, now)]
    return [a if new else Restated.of(a) for a, new in (*held, *left) if (a.alertname, a.status) in claims]


def on_deleted(job: dict[str, Any], standing: JobState | None, now: datetime) -> list[AlertData]:
    """The resolves of a deleted Job (as last seen), but for the alerts of the Job of that name standing
    now, if any (another uid: the name was taken again)."""
    held = {a.alertname for a in firing(standing, now)} if standing is not None else set()
    return [a for a in on_job_deleted(job, now) if a.alertname not in held]
