"""`alert`: `job.condition.changed`, `job.restarted`, `job.hardware.failed`, `job.validation`, CRE Job
updates and deletes → alerts (SPEC §8).

What reaches `alert` is a cue, never the text of a page: any pod can post an event to the Broker, so every
alert is read off the Job as the API server stores it. read: the Job fresh, by the event's namespace and name;
an update whose Job says nothing to alert on is answered without a read; a delete counts only when the Job is
gone on the fresh read, or another Job (another uid) holds the name now, and the Events the API server still
holds about it (kind, name and uid) are looked for when it has something to resolve (`reads.has_events`). decide:
`functions.alert.decide.decide`. The Job gone: 202; it cannot be read (API away): 503, the Broker retries. With
no sink configured nothing is read: there is nothing to send. Every configured sink is tried
(`functions.runtime.alertsinks.notify`): one down or throttled makes the answer 503, naming it; one that refuses the
payload is a configuration error (400 when no sink needs a retry).
"""

from __future__ import annotations

from events.emitted import JobConditionChangedData, JobHardwareFailedData, JobRestartedData, JobValidationData
from events.envelope import Envelope, ResourceChange, parse_apiserver_event, parse_data
from events.types import JOB_KIND, ApiServerType, EventType
from functions.alert.decide import Decided, Deleted, Observed, Updated, decide, window
from functions.domain.alerts import on_job_deleted, on_job_state
from functions.domain.claims import Decision
from functions.domain.jobs import JobState, Skipped, parse_job
from functions.runtime.apply import run
from functions.runtime.context import Context
from functions.runtime.errors import PermanentError
from functions.runtime.plan import Outcome
from functions.runtime.reads import has_events, read_job

DECISIONS: dict[str, type[Decision]] = {
    EventType.JOB_CONDITION_CHANGED.value: JobConditionChangedData, EventType.JOB_RESTARTED.value: JobRestartedData,
    EventType.JOB_HARDWARE_FAILED.value: JobHardwareFailedData, EventType.JOB_VALIDATION.value: JobValidationData}
ACCEPTS = frozenset({*DECISIONS, ApiServerType.RESOURCE_UPDATE.value, ApiServerType.RESOURCE_DELETE.value})


def read(env: Envelope, ctx: Context) -> Observed:
    quiet = Skipped("no alert sink configured")  # nothing can be sent: nothing is read
    if env.type in DECISIONS:
        decision = parse_data(env, DECISIONS[env.type])
        ref = decision.job
        if not ctx.settings.alert_sinks_configured:
            return quiet
        stored = read_job(ctx, ref.namespace, ref.name)
        return Decided(stored, decision) if stored else Skipped(f"Job {ref.namespace}/{ref.name} is gone")
    change = parse_apiserver_event(env)
    if not isinstance(change, ResourceChange) or change.verb not in ("update", "delete"):
        raise PermanentError(f"unknown event type {env.type!r} for this function")
    seen = parse_job(change.object, ctx.settings.cre_group)
    if not ctx.settings.alert_sinks_configured:
        return quiet
    if change.verb == "update" and not on_job_state(seen, ctx.clock(), window(ctx.settings), announced=False):
        return Skipped(f"{seen.where}: its update says nothing to alert on")
    stored = read_job(ctx, seen.ref.namespace, seen.ref.name)
    if change.verb == "update":
        return Updated(stored) if stored else Skipped(f"{seen.where} is gone")
    return read_deleted(seen, stored, ctx)


def read_deleted(seen: JobState, stored: JobState | None, ctx: Context) -> Observed:
    """A Job's delete: a stale or forged one when the Job is still there; else the deleted Job, the one now
    holding its name, and whether an Event the API server holds says the deleted one existed."""
    uid = seen.job.metadata.uid
    if stored is not None and stored.job.metadata.uid == uid:
        return Skipped(f"{seen.where} is still there: its delete event is stale or forged")
    recorded = (bool(uid) and bool(on_job_deleted(seen.raw, ctx.clock()))
                and has_events(ctx, seen.ref.namespace, JOB_KIND, seen.ref.name, uid))
    return Deleted(seen.raw, stored, recorded)


def handle(env: Envelope, ctx: Context) -> Outcome:
    return run(ctx, lambda: read(env, ctx), decide)
