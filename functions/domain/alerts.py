"""Which alerts a Job's stored state raises or resolves (SPEC §8). Pure.

Every alert is built from the Job as the API server stores it, never from an event's text: the
decision events (`functions.domain.claims`) and the Job updates and deletes say which alerts to look
at, the stored Job says whether they hold and what they say. The alerts: `CREJobFailed` and
`CREJobRestartsExhausted` (critical), `CREJobRestarted`, `CREJobSchedulingBlocked`,
`CREJobHardwareFailed`, `CREJobValidationFailed` (warning); a Job delete resolves what it raised.
Labels are `alertname`, `severity`, `namespace`, `job`, `reason`, and every path builds its alerts
with the same functions, so a resolve matches the firing alert in Alertmanager.
When each fires and resolves, and the Job updates: docs/functions.md#alerts-from-the-stored-job
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

from events.emitted import AlertData, FailedNode, FailureInfo, JobConditionChangedData, JobRef
from events.types import Reason
from functions.domain import grace
from functions.domain.attempts import current_workload_ref, workload_name
from functions.domain.conditions import TERMINAL, true_exclusive
from functions.domain.jobs import JobState
from functions.domain.pods import scheduling_grace

FAILED = "CREJobFailed"
RESTARTED = "CREJobRestarted"
EXHAUSTED = "CREJobRestartsExhausted"
BLOCKED = "CREJobSchedulingBlocked"
HARDWARE = "CREJobHardwareFailed"
VALIDATION = "CREJobValidationFailed"
RESTART_REASON = Reason.WORKLOAD_RESTARTING
RESTART_ALERT_TTL = timedelta(hours=1)
FAILED_ALERT_TTL = timedelta(days=90)
"""Alertmanager resolves an alert without `endsAt` after its `resolve_timeout` (5 minutes by default)
unless it is sent again; these alerts are sent once, so they carry an explicit `endsAt`: a failed Job
stays alerted until it is deleted (or 90 days pass), a restart warning for an hour after its grace."""

Status = Literal["firing", "resolved"]
Severity = Literal["critical", "warning"]


def make_alert(name: str, severity: Severity, status: Status, ns: str, job: str, reason: str, summary: str,
               description: str, starts_at: datetime, ends_at: datetime | None = None) -> AlertData:
    """An alert; its labels are what Alertmanager identifies it by."""
    labels = {"alertname": name, "severity": severity, "namespace": ns, "job": job, "reason": reason}
    return AlertData(alertname=name, status=status, severity=severity, job=JobRef(name=job, namespace=ns),
                     reason=reason, summary=summary, description=description, starts_at=starts_at, ends_at=ends_at,
                     labels=labels)


def dedup_key(alert: AlertData) -> str:
    return f"{alert.job.namespace}/{alert.job.name}/{alert.alertname}"


def until(since: datetime, ttl: timedelta) -> datetime:
    """When an alert held from `since` ends: `ttl` later, or the last time a datetime holds when that is past
    it (a condition's `lastTransitionTime` of 9999-12-31, written by hand)."""
    try:
        return since + ttl
    except OverflowError:
        return datetime.max.replace(tzinfo=since.tzinfo)


def restarts_text(count: int, max_restarts: int | None) -> str:
    return f"{count}/{max_restarts}" if max_restarts is not None else f"{count} (no checkpoint restarts configured)"


def failure_text(failure: FailureInfo | None) -> str:
    """The failed container in a sentence (` OOMKilled (exit 137) in pod p on node n.`), or ""."""
    if failure is None:
        return ""
    if not failure.pod_name:
        return f" Failure log: {failure.reason}."
    how = f"{failure.reason or 'Error'} (exit {failure.exit_code})"
    return f" Failed container: {how} in pod {failure.pod_name} on node {failure.node_name or 'unknown'}."


def failed_alerts(data: JobConditionChangedData, max_restarts: int | None, since: datetime) -> list[AlertData]:
    """`CREJobFailed` for a Failed verdict, and `CREJobRestartsExhausted` when the restart budget is spent."""
    ns, job, new = data.job.namespace, data.job.name, data.new
    where = f"{ns}/{job}"
    nodes = ", ".join(n.name for n in data.failed_nodes) or "none recorded"
    workload = f" (TrainJob {data.workload.name})" if data.workload else ""
    description = (f"Job {where} failed{workload}: {new.message or new.reason}. Reason: {new.reason}. "
                   f"Restarts used: {restarts_text(data.restart_count, max_restarts)}. Failed nodes: {nodes}."
                   f"{failure_text(data.failure)}")
    where_failed = (f": {data.failure.reason or 'Error'} on {data.failure.node_name}"
                    if data.failure and data.failure.pod_name and data.failure.node_name else "")
    alerts = [make_alert(FAILED, "critical", "firing", ns, job, new.reason,
                         f"CRE Job {where} failed ({new.reason}){where_failed}", description, since,
                         until(since, FAILED_ALERT_TTL))]
    if max_restarts and data.restart_count >= max_restarts:
        alerts.append(make_alert(EXHAUSTED, "critical", "firing", ns, job, new.reason,
                                 f"CRE Job {where} failed after all {max_restarts} checkpoint restarts",
                                 description, since, until(since, FAILED_ALERT_TTL)))
    return alerts


def blocked_alert(ns: str, job: str, message: str, since: datetime) -> AlertData:
    return make_alert(BLOCKED, "warning", "firing", ns, job, Reason.WORKLOAD_SCHEDULING_BLOCKED,
                      f"CRE Job {ns}/{job}: its pods cannot be scheduled",
                      f"Job {ns}/{job}: {message}. The Job's clocks are paused until the pods are placed.", since,
                      until(since, FAILED_ALERT_TTL))


def validation_alert(ns: str, job: str, reason: str, message: str, failed_nodes: Sequence[FailedNode],
                     since: datetime) -> AlertData:
    nodes = ", ".join(n.name for n in failed_nodes) or "none recorded"
    return make_alert(VALIDATION, "warning", "firing", ns, job, "ValidationFailed",
                      f"CRE Job {ns}/{job} succeeded but failed validation ({reason})",
                      f"Job {ns}/{job}: {message}. Reason: {reason}. Nodes: {nodes}.", since,
                      until(since, FAILED_ALERT_TTL))


def on_job_deleted(job: dict[str, Any], now: datetime) -> list[AlertData]:
    meta, status = job.get("metadata") or {}, job.get("status") or {}
    ns, name = meta.get("namespace", ""), meta.get("name", "")
    alerts: list[AlertData] = []
    cond = true_exclusive(status.get("conditions") or [])
    restarts = int(status.get("restartCount") or 0)
    max_restarts = int(((job.get("spec") or {}).get("checkpoint") or {}).get("maxRestarts") or 0)
    if cond is not None and cond.type == "Failed":
        alerts.append(resolved(FAILED, "critical", ns, name, cond.reason, now))
        if max_restarts and restarts >= max_restarts:
            alerts.append(resolved(EXHAUSTED, "critical", ns, name, cond.reason, now))
    if restarts:
        alerts.append(resolved(RESTARTED, "warning", ns, name, RESTART_REASON, now))
    conditions = {c.get("type"): c for c in status.get("conditions") or []}
    if cond is not None and cond.reason == Reason.WORKLOAD_SCHEDULING_BLOCKED:
        alerts.append(resolved(BLOCKED, "warning", ns, name, Reason.WORKLOAD_SCHEDULING_BLOCKED, now))
    if (conditions.get("HardwareFailed") or {}).get("status") == "True":
        alerts.append(resolved(HARDWARE, "warning", ns, name, Reason.HARDWARE_FAILURE_DETECTED, now))
    if (conditions.get("ValidationFailed") or {}).get("status") == "True":
        alerts.append(resolved(VALIDATION, "warning", ns, name, "ValidationFailed", now))
    return alerts


def resolved(name: str, severity: Severity, ns: str, job: str, reason: str, now: datetime) -> AlertData:
    return make_alert(name, severity, "resolved", ns, job, reason, f"{name} resolved for CRE Job {ns}/{job}",
                 f"Job {ns}/{job} was deleted or has moved on.", now, now)


class Restated(AlertData):
    """An alert a Job update restates rather than announces: a state that began before the window, one the
    project's own decision announced already, or a state left (its alert may never have been raised). For the
    sinks where the repeat changes nothing: Alertmanager (same labels), and PagerDuty for a resolve only (a
    trigger re-sent after a responder resolved the incident opens a new one). Not for chat."""

    @classmethod
    def of(cls, alert: AlertData) -> Restated:
        return cls.model_validate(alert.model_dump())


INDEPENDENT = {"HardwareFailed": (HARDWARE, Reason.HARDWARE_FAILURE_DETECTED),
               "ValidationFailed": (VALIDATION, "ValidationFailed")}
"""The independent conditions that raise an alert while True: the alert's name and `reason` label."""
Timed = tuple[AlertData, datetime | None]


def on_job_state(state: JobState, now: datetime, window: timedelta, announced: bool) -> list[AlertData]:
    """The alerts of the states a Job's stored conditions say, and the resolves of the states it left within
    `window` (older ones were resolved then). A state that began within `window` is announced to every sink,
    unless `announced` (the project wrote it and its decision event raised the alert); anything else is
    `Restated`, so a Job updated again and again changes nothing. Pure and idempotent."""

    def fresh(at: datetime | None) -> bool:
        return at is not None and now - at <= window

    return ([a if fresh(at) and not announced else Restated.of(a) for a, at in held_states(state, now)
             if a.ends_at is None or a.ends_at > now]
            + [Restated.of(a) for a, at in left_states(state, now) if fresh(at)])


def held_states(state: JobState, now: datetime) -> list[Timed]:
    """The alerts of the states the Job is in, each with the time the state began (None: unknown)."""
    job, ns, name = state.job, state.ref.namespace, state.ref.name
    status, true = job.status, state.true_condition
    held: list[Timed] = []
    if true is not None and true.type == "Failed":
        at = transition(state, "Failed")
        data = JobConditionChangedData(job=state.ref, new=true, restart_count=status.restart_count,
                                       workload=current_workload_ref(job) if status.workload_ref else None,
                                       failed_nodes=status.failed_nodes, failure=status.failure_log)
        checkpoint = job.spec.checkpoint
        held += [(a, at) for a in failed_alerts(data, checkpoint.max_restarts if checkpoint else None, at or now)]
    if true is not None and true.reason == Reason.WORKLOAD_SCHEDULING_BLOCKED:
        at = blocked_at(state)
        held.append((blocked_alert(ns, name, true.message, at or now), at))
    for cond in status.conditions:
        at = cond.last_transition_time
        if cond.type == "HardwareFailed" and cond.status == "True":
            held.append((hardware_alert(ns, name, cond.message, status.failed_nodes, at or now), at))
        elif cond.type == "ValidationFailed" and cond.status == "True":
            held.append((validation_alert(ns, name, cond.reason, cond.message, status.failed_nodes, at or now), at))
    return held


def left_states(state: JobState, now: datetime) -> list[Timed]:
    """The resolves of the states the Job has left, each with the time it left them (None: not known)."""
    ns, name = state.ref.namespace, state.ref.name
    status, true = state.job.status, state.true_condition
    left: list[Timed] = []
    if true is not None and true.type in TERMINAL and status.restart_count:  # the verdict supersedes the restart
        left.append((resolved(RESTARTED, "warning", ns, name, RESTART_REASON, now), transition(state, true.type)))
    if true is not None and true.reason != Reason.WORKLOAD_SCHEDULING_BLOCKED:
        at = (status.scheduling_resumed_time if true.type == "InProgress"  # the pods were placed
              else transition(state, true.type) if status.scheduling_blocked_since else None)  # a verdict ended it
        left.append((resolved(BLOCKED, "warning", ns, name, Reason.WORKLOAD_SCHEDULING_BLOCKED, now), at))
    for cond in status.conditions:
        if cond.type in INDEPENDENT and cond.status == "False":
            alertname, reason = INDEPENDENT[cond.type]
            left.append((resolved(alertname, "warning", ns, name, reason, now), cond.last_transition_time))
    return left


def restart_states(state: JobState, now: datetime) -> list[Timed]:
    """The restart warning of a Job that restarted and has no verdict yet, with the end of the restart's
    grace (None: not recorded, as for CRE's restarts and a grace of 0). It is held for an hour from that
    end, else from when the next attempt was first seen running (`workloadStartTime`), else from now. The
    failed attempt's container is not stored on the Job (CRE keeps nothing of restarted attempts), so the
    warning does not name it."""
    job, ns, name = state.job, state.ref.namespace, state.ref.name
    count = job.status.restart_count
    if not count or state.terminal:
        return []
    checkpoint = job.spec.checkpoint
    budget = restarts_text(count, checkpoint.max_restarts if checkpoint else None)
    grace_end = grace.end(state)
    after = f"; the next attempt starts after {grace_end.isoformat()}" if grace_end else ""
    description = (f"Job {ns}/{name} is restarting from its checkpoint (restart {budget}): TrainJob "
                   f"{workload_name(name)} (attempt {count - 1}) failed and was deleted{after}.")
    held_from = grace_end or job.status.workload_start_time or now
    return [(make_alert(RESTARTED, "warning", "firing", ns, name, RESTART_REASON,
                        f"CRE Job {ns}/{name} restarted from checkpoint ({budget})", description, now,
                        until(held_from, RESTART_ALERT_TTL)), grace_end)]


def transition(state: JobState, cond_type: str) -> datetime | None:
    return next((c.last_transition_time for c in state.job.status.conditions if c.type == cond_type), None)


def blocked_at(state: JobState) -> datetime | None:
    """When the Job began to say `WorkloadSchedulingBlocked`. A reason change inside `InProgress` keeps the
    condition's `lastTransitionTime`, so it is the marker plus the grace (the condition is written on the
    first check past it), or the condition's own time when that is later."""
    marker = state.job.status.scheduling_blocked_since
    times = [t for t in (transition(state, "InProgress"), marker + scheduling_grace(state) if marker else None)
             if t is not None]
    return max(times, default=None)


def hardware_alert(ns: str, job: str, message: str, failed_nodes: Sequence[FailedNode], since: datetime) -> AlertData:
    """`CREJobHardwareFailed` as the Job's `HardwareFailed` condition says it."""
    unhealthy = [n.name for n in failed_nodes if n.reason == Reason.HARDWARE_FAILURE_DETECTED]
    return make_alert(HARDWARE, "warning", "firing", ns, job, Reason.HARDWARE_FAILURE_DETECTED,
                      f"CRE Job {ns}/{job}: hardware failure on {', '.join(unhealthy) or 'a node'}",
                      f"Job {ns}/{job}: {message}. Failed nodes: "
                      f"{', '.join(n.name for n in failed_nodes) or 'none recorded'}.", since,
                      until(since, FAILED_ALERT_TTL))


def meant_for(sink: str, alerts: Sequence[AlertData]) -> list[AlertData]:
    """The alerts the sink of that name is sent: all but the `Restated` ones, which only Alertmanager takes
    (the same labels again change nothing) and PagerDuty when they resolve (a trigger re-sent after its
    incident was resolved opens a new one; Slack and a CloudEvents sink show every message)."""
    if sink == "alertmanager":
        return list(alerts)
    resolves = sink == "pagerduty"
    return [a for a in alerts if not isinstance(a, Restated) or (resolves and a.status == "resolved")]
