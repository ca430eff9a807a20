"""Which alerts an event sends: the `alert` function's decision (SPEC §8). Pure.

`decide(observed, settings, now)`, on what `functions.alert.read` read, every alert read off the
Job as the API server stores it (`functions.domain.alerts`): a decision event sends the alerts it
claims that the stored Job bears out (`functions.domain.claims`); a Job update raises what the stored
conditions say, announced unless the project wrote them (manage mode, a managed Job: its decision event
announced them); a Job delete resolves what the deleted Job had raised and the Job now holding its name
does not, restated (not in chat) when no Event the API server holds says the Job existed. Sent as one
`Notify` to every configured sink; no alert, no sink configured, or none that takes them: 202.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from functions.domain.alerts import Restated, meant_for, on_job_state
from functions.domain.claims import Decision, claimed, on_decision, on_deleted
from functions.domain.jobs import JobState, Skipped, is_managed
from functions.runtime.effects import Notify
from functions.runtime.plan import Plan, nothing
from functions.runtime.settings import Settings

FUNCTION = "alert"


@dataclass(frozen=True)
class Decided:
    """A decision event and the Job it is about, read fresh."""

    stored: JobState
    decision: Decision


@dataclass(frozen=True)
class Updated:
    """A Job update: the Job read fresh."""

    stored: JobState


@dataclass(frozen=True)
class Deleted:
    """A deleted Job as its delete event carries it, gone on the fresh read, and the Job of that name
    standing now (another uid), if any; `recorded`: the API server still holds an Event about the deleted
    Job (its kind, name and uid), so it did exist (a delete event is forgeable: a Job that never existed is gone
    on any read)."""

    deleted: dict[str, Any]
    stored: JobState | None
    recorded: bool = False


Observed = Skipped | Decided | Updated | Deleted


def window(settings: Settings) -> timedelta:
    return timedelta(seconds=settings.alert_transition_window_seconds)


def sink_names(settings: Settings) -> tuple[str, ...]:
    """The configured alert sinks by name, in the order they are tried (`functions.runtime.alertsinks`)."""
    configured = {"alertmanager": settings.alertmanager_url, "slack": settings.slack_webhook_url,
                  "pagerduty": settings.pagerduty_routing_key, "cloudevents": settings.alert_sink_url}
    return tuple(name for name, value in configured.items() if value)


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    if isinstance(observed, Skipped):
        return nothing(observed.why)
    if isinstance(observed, Deleted):
        alerts = on_deleted(observed.deleted, observed.stored, now)
        if not observed.recorded:  # no Event says the Job existed: resolved only where a resolve of nothing is
            alerts = [Restated.of(a) for a in alerts]  # nothing (Alertmanager, PagerDuty), never in chat
    elif isinstance(observed, Decided):
        alerts = on_decision(observed.stored, claimed(observed.decision, observed.stored), now)
        if not alerts:
            return nothing(f"{observed.stored.where}: the stored Job bears out nothing the event claims")
    else:
        state = observed.stored
        announced = not settings.observe and is_managed(state.job.metadata.labels, settings)
        alerts = on_job_state(state, now, window(settings), announced)
    if not alerts:
        return nothing("no alert to raise or resolve")
    if not settings.alert_sinks_configured:
        return nothing(f"{len(alerts)} alerts, no sink configured")
    if not any(meant_for(sink, alerts) for sink in sink_names(settings)):
        return nothing(f"{len(alerts)} alerts restated, no sink that takes them is configured")
    return Plan((Notify(tuple(alerts)),))
