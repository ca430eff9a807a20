"""`alert`: `job.condition.changed`, `job.restarted`, `job.hardware.failed`, `job.validation`, CRE Job
updates and deletes → alerts (SPEC §8).

What reaches `alert` is a cue, never the text of a page: any pod can post an event to the Broker, so
every alert is read off the Job as the API server stores it (`functions.rules.alerting`). read: the
Job fresh, by the event's namespace and name. decide (`functions.rules.claims`):
- a decision event sends the alerts it claims that the stored Job bears out, with the stored Job's
  texts, announced to every sink; a claim the Job does not bear out (forged, or stale: the Job moved
  on) sends nothing, and a resolve is sent only for a state the Job is not in;
- a Job update raises what the stored conditions say, whoever wrote them (CRE's own verdicts in
  observe mode): a state that began within `CREFN_ALERT_TRANSITION_WINDOW_SECONDS` is announced to
  every sink unless the project wrote it (manage mode, a managed Job: its decision event announced
  it); the rest is restated, for the sinks that deduplicate it (`functions.alertsinks.meant_for`). An
  update whose Job says nothing to alert on is answered without a read;
- a Job delete resolves what the deleted Job had raised only when the Job is gone on a fresh read, or
  another Job (another uid) holds the name now, and never what that Job holds; a delete of a Job that
  is still there is stale or forged: 202.
The Job gone (a decision or update event): 202, nothing is sent. The Job cannot be read (API away):
503, nothing is sent, the Broker retries. Every configured sink is tried: one that is down or throttled
makes the answer 503, naming it, so the Broker retries (the others have the alerts already;
Alertmanager and PagerDuty absorb the duplicates); one that refuses the payload is a configuration
error: 400 when no sink needs a retry. No sink configured, or none that takes the alerts: 202.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from events.emitted import JobConditionChangedData, JobHardwareFailedData, JobRestartedData, JobValidationData
from events.envelope import Envelope, ResourceChange, parse_apiserver_event, parse_data
from events.types import ApiServerType, EventType
from functions.alertsinks import configured_sinks, meant_for
from functions.apply import run
from functions.context import Context
from functions.errors import PermanentError
from functions.plan import Notify, Outcome, Plan, nothing
from functions.reads import read_job
from functions.rules.alerting import on_job_state
from functions.rules.claims import Decision, claimed, on_decision, on_deleted
from functions.rules.jobs import JobState, is_managed, parse_job
from functions.settings import Settings

FUNCTION = "alert"
DECISIONS: dict[str, type[Decision]] = {
    EventType.JOB_CONDITION_CHANGED.value: JobConditionChangedData, EventType.JOB_RESTARTED.value: JobRestartedData,
    EventType.JOB_HARDWARE_FAILED.value: JobHardwareFailedData, EventType.JOB_VALIDATION.value: JobValidationData}
ACCEPTS = frozenset({*DECISIONS, ApiServerType.RESOURCE_UPDATE.value, ApiServerType.RESOURCE_DELETE.value})


@dataclass(frozen=True)
class Observed:
    stored: JobState | None = None
    """The Job read fresh (with `deleted`: the Job of that name standing now, if any)."""
    decision: Decision | None = None
    deleted: dict[str, Any] | None = None
    """A deleted Job as its delete event carries it, gone (or replaced) on the fresh read."""
    skip: str = ""


def window(settings: Settings) -> timedelta:
    return timedelta(seconds=settings.alert_transition_window_seconds)


def read(env: Envelope, ctx: Context) -> Observed:
    if env.type in DECISIONS:
        decision = parse_data(env, DECISIONS[env.type])
        ref = decision.job
        stored = read_job(ctx, ref.namespace, ref.name)
        return Observed(stored, decision) if stored else Observed(skip=f"Job {ref.namespace}/{ref.name} is gone")
    change = parse_apiserver_event(env)
    if not isinstance(change, ResourceChange) or change.verb not in ("update", "delete"):
        raise PermanentError(f"unknown event type {env.type!r} for this function")
    seen = parse_job(change.object, ctx.settings.cre_group)
    if change.verb == "update" and not on_job_state(seen, ctx.clock(), window(ctx.settings), announced=False):
        return Observed(skip=f"{seen.where}: its update says nothing to alert on")
    stored = read_job(ctx, seen.ref.namespace, seen.ref.name)
    if change.verb == "update":
        return Observed(stored) if stored else Observed(skip=f"{seen.where} is gone")
    if stored is not None and stored.job.metadata.uid == seen.job.metadata.uid:
        return Observed(skip=f"{seen.where} is still there: its delete event is stale or forged")
    return Observed(stored, deleted=seen.raw)


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    if observed.skip:
        return nothing(observed.skip)
    state = observed.stored
    if observed.deleted is not None:
        alerts = on_deleted(observed.deleted, state, now)
    elif observed.decision is not None:
        assert state is not None
        alerts = on_decision(state, claimed(observed.decision, state), now)
        if not alerts:
            return nothing(f"{state.where}: the stored Job bears out nothing the event claims")
    else:
        assert state is not None
        announced = not settings.observe and is_managed(state.job.metadata.labels, settings)
        alerts = on_job_state(state, now, window(settings), announced)
    if not alerts:
        return nothing("no alert to raise or resolve")
    if not settings.alert_sinks_configured:
        return nothing(f"{len(alerts)} alerts, no sink configured")
    if not any(meant_for(sink, alerts) for sink in configured_sinks(settings)):
        return nothing(f"{len(alerts)} alerts restated, no sink that takes them is configured")
    return Plan((Notify(tuple(alerts)),))


def handle(env: Envelope, ctx: Context) -> Outcome:
    return run(ctx, lambda: read(env, ctx), decide)
