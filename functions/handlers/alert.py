"""`alert`: `job.condition.changed`, `job.restarted`, `job.hardware.failed`, `job.validation`, CRE Job
updates and deletes → alerts (SPEC §8).

read: the event, and for a change to `Failed` the Job (its restart budget); a Job update or delete
carries the Job (Resource mode). decide: the alerts (`functions.rules.alerting`) as one `Notify`. A Job
update raises what its stored conditions say, whoever wrote them (CRE's own verdicts in observe mode):
a state that began within `CREFN_ALERT_TRANSITION_WINDOW_SECONDS` is announced to every sink unless the
project wrote it (manage mode, a managed Job: its decision event announced it); the rest is restated,
for the sinks that deduplicate it (`functions.alertsinks.meant_for`); none of them configured: 202.
Every configured sink is tried: one that is down or throttled makes the answer 503, naming it, so the
Broker retries (the others have the alerts already; Alertmanager and PagerDuty absorb the duplicates);
one that refuses the payload is a configuration error: 400 when no sink needs a retry. No sink
configured: 202. When the Job cannot be read for its restart budget (API away), `CREJobFailed` is sent
anyway and the answer is 503, so the retry adds `CREJobRestartsExhausted` if it applies.
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
from functions.errors import PermanentError, TemporaryError
from functions.plan import Notify, Outcome, Plan, Wait, nothing
from functions.reads import read_job
from functions.rules.alerting import (
    on_condition_changed,
    on_hardware_failed,
    on_job_deleted,
    on_job_state,
    on_restarted,
    on_validation,
)
from functions.rules.jobs import JobState, is_managed, parse_job
from functions.settings import Settings

FUNCTION = "alert"
ACCEPTS = frozenset({EventType.JOB_CONDITION_CHANGED.value, EventType.JOB_RESTARTED.value,
                     EventType.JOB_HARDWARE_FAILED.value, EventType.JOB_VALIDATION.value,
                     ApiServerType.RESOURCE_UPDATE.value, ApiServerType.RESOURCE_DELETE.value})


@dataclass(frozen=True)
class Observed:
    changed: JobConditionChangedData | None = None
    restarted: JobRestartedData | None = None
    hardware: JobHardwareFailedData | None = None
    validation: JobValidationData | None = None
    deleted_job: dict[str, Any] | None = None
    updated_job: JobState | None = None
    max_restarts: int | None = None
    missing: str = ""
    """What could not be read (the Job's restart budget when the API is away)."""


def read(env: Envelope, ctx: Context) -> Observed:
    if env.type == EventType.JOB_CONDITION_CHANGED:
        changed = parse_data(env, JobConditionChangedData)
        if changed.new.type != "Failed":
            return Observed(changed=changed)
        try:
            state = read_job(ctx, changed.job.namespace, changed.job.name)
        except TemporaryError as e:
            return Observed(changed=changed, missing=f"the Job's restart budget is unknown ({e})")
        checkpoint = state.job.spec.checkpoint if state else None
        return Observed(changed=changed, max_restarts=checkpoint.max_restarts if checkpoint else None)
    if env.type == EventType.JOB_RESTARTED:
        return Observed(restarted=parse_data(env, JobRestartedData))
    if env.type == EventType.JOB_HARDWARE_FAILED:
        return Observed(hardware=parse_data(env, JobHardwareFailedData))
    if env.type == EventType.JOB_VALIDATION:
        return Observed(validation=parse_data(env, JobValidationData))
    change = parse_apiserver_event(env)
    if not isinstance(change, ResourceChange) or change.verb not in ("update", "delete"):
        raise PermanentError(f"unknown event type {env.type!r} for this function")
    state = parse_job(change.object, ctx.settings.cre_group)
    return Observed(updated_job=state) if change.verb == "update" else Observed(deleted_job=state.raw)


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    if observed.changed is not None:
        alerts = on_condition_changed(observed.changed, observed.max_restarts, now)
    elif observed.restarted is not None:
        alerts = on_restarted(observed.restarted, now)
    elif observed.hardware is not None:
        alerts = on_hardware_failed(observed.hardware, now)
    elif observed.validation is not None:
        alerts = on_validation(observed.validation, now)
    elif (state := observed.updated_job) is not None:
        announced = not settings.observe and is_managed(state.job.metadata.labels, settings)
        alerts = on_job_state(state, now, timedelta(seconds=settings.alert_transition_window_seconds), announced)
    else:
        assert observed.deleted_job is not None
        alerts = on_job_deleted(observed.deleted_job, now)
    if not alerts:
        return nothing("no alert to raise or resolve")
    if not settings.alert_sinks_configured:
        return nothing(f"{len(alerts)} alerts, no sink configured")
    if not any(meant_for(sink, alerts) for sink in configured_sinks(settings)):
        return nothing(f"{len(alerts)} alerts restated, no sink that takes them is configured")
    notify = Notify(tuple(alerts))
    return Plan((notify, Wait(observed.missing)) if observed.missing else (notify,))


def handle(env: Envelope, ctx: Context) -> Outcome:
    return run(ctx, lambda: read(env, ctx), decide)
