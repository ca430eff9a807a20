"""`alert`: `job.condition.changed`, `job.restarted`, `job.hardware.failed`, `job.validation`, CRE Job
updates and deletes → alerts (SPEC §8).

What reaches `alert` is a cue, never the text of a page: any pod can post an event to the Broker, so
every alert is read off the Job as the API server stores it (`functions.rules.alerting`). read: the
Job fresh, by the event's namespace and name. decide (`functions.rules.alert.decide`):
- a decision event sends the alerts it claims that the stored Job bears out, with the stored Job's
  texts, announced to every sink; a claim the Job does not bear out (forged, or stale: the Job moved
  on) sends nothing, and a resolve is sent only for a state the Job is not in;
- a Job update raises what the stored conditions say, whoever wrote them (CRE's own verdicts in
  observe mode): a state that began within `CREFN_ALERT_TRANSITION_WINDOW_SECONDS` is announced to
  every sink unless the project wrote it (manage mode, a managed Job: its decision event announced
  it); the rest is restated, for the sinks that deduplicate it (`functions.rules.alert.meant_for`). An
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

from events.emitted import JobConditionChangedData, JobHardwareFailedData, JobRestartedData, JobValidationData
from events.envelope import Envelope, ResourceChange, parse_apiserver_event, parse_data
from events.types import ApiServerType, EventType
from functions.apply import run
from functions.context import Context
from functions.errors import PermanentError
from functions.plan import Outcome
from functions.reads import read_job
from functions.rules import alert as rules
from functions.rules.alert import Decided, Deleted, Observed, Skipped, Updated, decide, window
from functions.rules.alerting import on_job_state
from functions.rules.claims import Decision
from functions.rules.jobs import parse_job

FUNCTION = rules.FUNCTION
DECISIONS: dict[str, type[Decision]] = {
    EventType.JOB_CONDITION_CHANGED.value: JobConditionChangedData, EventType.JOB_RESTARTED.value: JobRestartedData,
    EventType.JOB_HARDWARE_FAILED.value: JobHardwareFailedData, EventType.JOB_VALIDATION.value: JobValidationData}
ACCEPTS = frozenset({*DECISIONS, ApiServerType.RESOURCE_UPDATE.value, ApiServerType.RESOURCE_DELETE.value})


def read(env: Envelope, ctx: Context) -> Observed:
    if env.type in DECISIONS:
        decision = parse_data(env, DECISIONS[env.type])
        ref = decision.job
        stored = read_job(ctx, ref.namespace, ref.name)
        return Decided(stored, decision) if stored else Skipped(f"Job {ref.namespace}/{ref.name} is gone")
    change = parse_apiserver_event(env)
    if not isinstance(change, ResourceChange) or change.verb not in ("update", "delete"):
        raise PermanentError(f"unknown event type {env.type!r} for this function")
    seen = parse_job(change.object, ctx.settings.cre_group)
    if change.verb == "update" and not on_job_state(seen, ctx.clock(), window(ctx.settings), announced=False):
        return Skipped(f"{seen.where}: its update says nothing to alert on")
    stored = read_job(ctx, seen.ref.namespace, seen.ref.name)
    if change.verb == "update":
        return Updated(stored) if stored else Skipped(f"{seen.where} is gone")
    if stored is not None and stored.job.metadata.uid == seen.job.metadata.uid:
        return Skipped(f"{seen.where} is still there: its delete event is stale or forged")
    return Deleted(seen.raw, stored)


def handle(env: Envelope, ctx: Context) -> Outcome:
    return run(ctx, lambda: read(env, ctx), decide)
