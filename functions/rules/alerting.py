"""Which alerts an event raises or resolves (SPEC §8). Pure.

- `job.condition.changed` to `Failed` → `CREJobFailed` (critical); when the Job had a restart budget
  and spent it (`restartCount >= maxRestarts > 0`), also `CREJobRestartsExhausted` (critical). The
  restart warning is resolved: the failure supersedes it.
- `job.condition.changed` to `Succeeded` after restarts → `CREJobRestarted` resolved.
- `job.restarted` → `CREJobRestarted` (warning), expiring after an hour unless resolved earlier.
- `job.condition.changed` to `InProgress`/`WorkloadSchedulingBlocked` → `CREJobSchedulingBlocked`
  (warning); any later change of the Job's condition resolves it.
- `job.hardware.failed` → `CREJobHardwareFailed` (warning, as CRE's documented `NVCREHardwareFailure`):
  the nodes and what is done about them.
- `job.validation` → `CREJobValidationFailed` (warning) when the thresholds were not met, resolved when
  they were.
- A Job delete (the ApiServerSource sends the Job as last seen) → everything it had raised resolved.
Labels are `alertname`, `severity`, `namespace`, `job`, `reason`: Alertmanager identifies an alert by
its labels, so a resolve carries the same `reason` as the firing alert did.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Literal

from events.emitted import (
    AlertData,
    FailureInfo,
    JobConditionChangedData,
    JobHardwareFailedData,
    JobRef,
    JobRestartedData,
    JobValidationData,
)
from events.types import Reason
from functions.rules.conditions import true_exclusive

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
stays alerted until it is deleted (or 90 days pass), a restart warning for an hour."""

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


def on_condition_changed(data: JobConditionChangedData, max_restarts: int | None, now: datetime) -> list[AlertData]:
    ns, job, new = data.job.namespace, data.job.name, data.new
    where = f"{ns}/{job}"
    alerts: list[AlertData] = []
    if new.type == "Failed":
        nodes = ", ".join(n.name for n in data.failed_nodes) or "none recorded"
        workload = f" (TrainJob {data.workload.name})" if data.workload else ""
        description = (f"Job {where} failed{workload}: {new.message or new.reason}. Reason: {new.reason}. "
                       f"Restarts used: {restarts_text(data.restart_count, max_restarts)}. Failed nodes: {nodes}."
                       f"{failure_text(data.failure)}")
        where_failed = (f": {data.failure.reason or 'Error'} on {data.failure.node_name}"
                        if data.failure and data.failure.pod_name and data.failure.node_name else "")
        alerts.append(make_alert(FAILED, "critical", "firing", ns, job, new.reason,
                            f"CRE Job {where} failed ({new.reason}){where_failed}", description, now,
                            now + FAILED_ALERT_TTL))
        if max_restarts and data.restart_count >= max_restarts:
            alerts.append(make_alert(EXHAUSTED, "critical", "firing", ns, job, new.reason,
                                f"CRE Job {where} failed after all {max_restarts} checkpoint restarts",
                                description, now, now + FAILED_ALERT_TTL))
        if data.restart_count:
            alerts.append(resolved(RESTARTED, "warning", ns, job, RESTART_REASON, now))
    elif new.type == "Succeeded" and data.restart_count:
        alerts.append(resolved(RESTARTED, "warning", ns, job, RESTART_REASON, now))
    if new.reason == Reason.WORKLOAD_SCHEDULING_BLOCKED:
        alerts.append(make_alert(BLOCKED, "warning", "firing", ns, job, new.reason,
                                 f"CRE Job {where}: its pods cannot be scheduled",
                                 f"Job {where}: {new.message}. The Job's clocks are paused until the pods are "
                                 "placed.", now, now + FAILED_ALERT_TTL))
    elif data.previous is not None and data.previous.reason == Reason.WORKLOAD_SCHEDULING_BLOCKED:
        alerts.append(resolved(BLOCKED, "warning", ns, job, Reason.WORKLOAD_SCHEDULING_BLOCKED, now))
    return alerts


def on_hardware_failed(data: JobHardwareFailedData, now: datetime) -> list[AlertData]:
    ns, job = data.job.namespace, data.job.name
    action = ("its TrainJob was deleted so that the restart policy decides" if data.action == "restart"
              else "the workload keeps running (report only)")
    description = (f"Job {ns}/{job}: {data.message}. Newly unhealthy: {', '.join(data.nodes) or 'none'}; "
                   f"{action}.")
    return [make_alert(HARDWARE, "warning", "firing", ns, job, Reason.HARDWARE_FAILURE_DETECTED,
                       f"CRE Job {ns}/{job}: hardware failure on {', '.join(data.nodes) or 'a node'}", description,
                       now, now + FAILED_ALERT_TTL)]


def on_validation(data: JobValidationData, now: datetime) -> list[AlertData]:
    ns, job = data.job.namespace, data.job.name
    if not data.failed:
        return [resolved(VALIDATION, "warning", ns, job, "ValidationFailed", now)]
    nodes = ", ".join(n.name for n in data.failed_nodes) or "none recorded"
    return [make_alert(VALIDATION, "warning", "firing", ns, job, "ValidationFailed",
                       f"CRE Job {ns}/{job} succeeded but failed validation ({data.reason})",
                       f"Job {ns}/{job}: {data.message}. Reason: {data.reason}. Nodes: {nodes}.", now,
                       now + FAILED_ALERT_TTL)]


def on_restarted(data: JobRestartedData, now: datetime) -> list[AlertData]:
    ns, job = data.job.namespace, data.job.name
    previous = data.previous_workload
    description = (f"Job {ns}/{job} is restarting from its checkpoint (restart {data.attempt}/{data.max_restarts}): "
                   f"TrainJob {previous.name} (attempt {previous.attempt}) failed and was deleted; the next attempt "
                   f"starts after {data.not_before.isoformat()}.{failure_text(data.failure)}")
    return [make_alert(RESTARTED, "warning", "firing", ns, job, RESTART_REASON,
                  f"CRE Job {ns}/{job} restarted from checkpoint ({data.attempt}/{data.max_restarts})", description,
                  now, now + RESTART_ALERT_TTL)]


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
