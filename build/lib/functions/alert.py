"""The `alert` function (SPEC §8): `job.condition.changed`, `job.restarted` and CRE Job deletes →
alerts to every configured sink.

parse → decide (pure, `functions.alerts`; a `Failed` change reads the Job for its restart budget) →
send to each sink (`functions.sinks`) → answer. Every sink is tried: one that is down or throttled
(429) makes the answer 503, naming it, so the Broker retries (the others have already received the
alerts; see `functions.sinks` for which sinks absorb the duplicates); one that refuses the payload
(other 4xx) is a configuration error: 400 when no sink needs a retry. No sink configured: 202. When
the Job cannot be read for its restart budget (API away), `CREJobFailed` is sent anyway and the answer
is 503, so the retry adds `CREJobRestartsExhausted` if it applies (duplicates are absorbed by labels).
"""

from __future__ import annotations

from events.emitted import JobConditionChangedData, JobRestartedData
from events.envelope import Envelope, ResourceChange, parse_apiserver_event, parse_data
from events.types import ApiServerType, EventType
from functions.alerts import Alert, on_condition_changed, on_job_deleted, on_restarted
from functions.context import Context
from functions.errors import PermanentError, TemporaryError
from functions.jobs import parse_job, read_job
from functions.outcome import NoReply, Outcome
from functions.sinks import SinkError, configured_sinks

FUNCTION = "alert"
ACCEPTS = frozenset({EventType.JOB_CONDITION_CHANGED.value, EventType.JOB_RESTARTED.value,
                     ApiServerType.RESOURCE_DELETE.value})
"""Event types this function handles (the Triggers in knative/ may route only these)."""


def decide(env: Envelope, ctx: Context) -> tuple[list[Alert], str]:
    """The alerts, and what could not be decided yet (the Job's restart budget when the API is away)."""
    now = ctx.clock()
    if env.type == EventType.JOB_CONDITION_CHANGED:
        changed = parse_data(env, JobConditionChangedData)
        max_restarts, missing = None, ""
        if changed.new.type == "Failed":
            try:
                state = read_job(ctx, changed.job.namespace, changed.job.name)
            except TemporaryError as e:
                state, missing = None, f"the Job's restart budget is unknown ({e})"
            checkpoint = state.job.spec.checkpoint if state else None
            max_restarts = checkpoint.max_restarts if checkpoint else None
        return on_condition_changed(changed, max_restarts, now), missing
    if env.type == EventType.JOB_RESTARTED:
        return on_restarted(parse_data(env, JobRestartedData), now), ""
    change = parse_apiserver_event(env)
    if not isinstance(change, ResourceChange) or change.verb != "delete":
        raise PermanentError(f"unknown event type {env.type!r} for this function")
    return on_job_deleted(parse_job(change.object, ctx.settings.cre_group).raw, now), ""


def handle(env: Envelope, ctx: Context) -> Outcome:
    """Send what can be decided now; answer 503 when a sink or the Job's budget needs a retry."""
    alerts, missing = decide(env, ctx)
    if not alerts:
        return NoReply("no alert to raise or resolve")
    sinks = configured_sinks(ctx.settings)
    if not sinks:
        return NoReply(f"{len(alerts)} alerts, no sink configured")
    failures: list[SinkError] = []
    for sink in sinks:
        try:
            sink.send(alerts)
        except SinkError as e:
            failures.append(e)
    names = ", ".join(f"{a.name} {a.status}" for a in alerts)
    if any(f.temporary for f in failures):
        raise TemporaryError(f"alert sinks failed: {'; '.join(str(f) for f in failures)} "
                             f"(delivered to the others: {names})", 503)
    if failures:
        raise PermanentError(f"alert sinks refused: {'; '.join(str(f) for f in failures)}")
    if missing:
        raise TemporaryError(f"sent {names}; {missing}", 503)
    return NoReply(f"sent to {len(sinks)} sinks: {names}")
