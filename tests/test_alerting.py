"""Which alerts an event raises or resolves (SPEC §8), as a truth table."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from events.emitted import (
    FailureInfo,
    JobConditionChangedData,
    JobHardwareFailedData,
    JobRestartedData,
    JobValidationData,
)
from functions.rules.alerting import (
    dedup_key,
    on_condition_changed,
    on_hardware_failed,
    on_job_deleted,
    on_restarted,
    on_validation,
)

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def changed(new_type: str, reason: str, restarts: int = 0, message: str = "boom") -> JobConditionChangedData:
    return JobConditionChangedData.model_validate({
        "job": {"name": "llm", "namespace": "ml"}, "new": {"type": new_type, "reason": reason, "message": message},
        "restartCount": restarts, "failedNodes": [{"name": "gpu-7", "reason": "WorkloadFailed"}],
        "workload": {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "llm-workload",
                     "namespace": "ml", "attempt": restarts}})


def summary(alerts: list[Any]) -> list[tuple[str, str, str, str]]:
    return [(a.alertname, a.severity, a.status, a.reason) for a in alerts]


@pytest.mark.parametrize(("data", "max_restarts", "expected"), [
    (changed("Failed", "WorkloadFailed"), None, [("CREJobFailed", "critical", "firing", "WorkloadFailed")]),
    (changed("Failed", "WorkloadFailed"), 0, [("CREJobFailed", "critical", "firing", "WorkloadFailed")]),
    (changed("Failed", "WorkloadFailed", restarts=2), 2, [
        ("CREJobFailed", "critical", "firing", "WorkloadFailed"),
        ("CREJobRestartsExhausted", "critical", "firing", "WorkloadFailed"),
        ("CREJobRestarted", "warning", "resolved", "WorkloadRestarting")]),
    (changed("Failed", "WorkloadFailed", restarts=1), 3, [
        ("CREJobFailed", "critical", "firing", "WorkloadFailed"),
        ("CREJobRestarted", "warning", "resolved", "WorkloadRestarting")]),
    (changed("Failed", "WorkloadCreationError"), None,
     [("CREJobFailed", "critical", "firing", "WorkloadCreationError")]),
    (changed("Succeeded", "WorkloadCompleted", restarts=1), 2,
     [("CREJobRestarted", "warning", "resolved", "WorkloadRestarting")]),
    (changed("Succeeded", "WorkloadCompleted"), 2, []),
    (changed("InProgress", "WorkloadRunning"), 2, []),
], ids=["failed", "failed-no-budget", "exhausted", "failed-with-budget-left", "creation-error",
        "succeeded-after-restart", "succeeded", "in-progress"])
def test_condition_changes(data: JobConditionChangedData, max_restarts: int | None,
                           expected: list[tuple[str, str, str, str]]) -> None:
    assert summary(on_condition_changed(data, max_restarts, NOW)) == expected


def test_failed_alert_says_what_an_operator_needs() -> None:
    (alert,) = on_condition_changed(changed("Failed", "WorkloadFailed", message="exit 137"), None, NOW)
    assert alert.labels == {"alertname": "CREJobFailed", "severity": "critical", "namespace": "ml", "job": "llm",
                            "reason": "WorkloadFailed"}
    assert dedup_key(alert) == "ml/llm/CREJobFailed"
    assert alert.ends_at == NOW + timedelta(days=90)
    for fact in ("ml/llm", "exit 137", "WorkloadFailed", "Restarts used: 0", "gpu-7", "llm-workload"):
        assert fact in alert.description


def test_the_failed_container_is_named_in_the_alert() -> None:
    """Pod, node, exit code and reason of the Job's failure log: what Slack and PagerDuty show."""
    data = changed("Failed", "WorkloadFailed").model_copy(update={"failure": FailureInfo(
        pod_name="llm-workload-node-1-0", node_name="gpu-node-17", exit_code=137, reason="OOMKilled")})
    (alert,) = on_condition_changed(data, None, NOW)
    assert alert.description.endswith(
        " Failed container: OOMKilled (exit 137) in pod llm-workload-node-1-0 on node gpu-node-17.")
    assert alert.summary == "CRE Job ml/llm failed (WorkloadFailed): OOMKilled on gpu-node-17"  # PagerDuty's line
    gone = changed("Failed", "WorkloadFailed").model_copy(update={"failure": FailureInfo(
        pod_name="", node_name="", exit_code=0, reason="PodNotFound")})
    assert on_condition_changed(gone, None, NOW)[0].description.endswith(" Failure log: PodNotFound.")
    assert "Failed container" not in on_condition_changed(changed("Failed", "WorkloadFailed"), None, NOW)[0].description


def test_restarted_is_a_warning_that_expires() -> None:
    data = JobRestartedData.model_validate({
        "job": {"name": "llm", "namespace": "ml"}, "attempt": 1, "maxRestarts": 3, "notBefore": NOW.isoformat(),
        "previousWorkload": {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                             "name": "llm-workload", "namespace": "ml", "attempt": 0}})
    (alert,) = on_restarted(data, NOW)
    assert (alert.alertname, alert.severity, alert.status, alert.ends_at) == (
        "CREJobRestarted", "warning", "firing", NOW + timedelta(hours=1))
    assert "restart 1/3" in alert.description


@pytest.mark.parametrize(("status", "checkpoint", "expected"), [
    ({"conditions": [{"type": "Failed", "status": "True", "reason": "WorkloadFailed"}], "restartCount": 2},
     {"pvcName": "p", "maxRestarts": 2},
     [("CREJobFailed", "resolved", "WorkloadFailed"), ("CREJobRestartsExhausted", "resolved", "WorkloadFailed"),
      ("CREJobRestarted", "resolved", "WorkloadRestarting")]),
    ({"conditions": [{"type": "Failed", "status": "True", "reason": "WorkloadFailed"}]}, None,
     [("CREJobFailed", "resolved", "WorkloadFailed")]),
    ({"conditions": [{"type": "Succeeded", "status": "True", "reason": "WorkloadCompleted"}]}, None, []),
], ids=["failed-after-restarts", "failed", "succeeded"])
def test_job_delete_resolves_what_it_raised(status: dict[str, Any], checkpoint: dict[str, Any] | None,
                                            expected: list[tuple[str, str, str]]) -> None:
    job: dict[str, Any] = {"metadata": {"name": "llm", "namespace": "ml"}, "status": status, "spec": {}}
    if checkpoint:
        job["spec"]["checkpoint"] = checkpoint
    assert [(a.alertname, a.status, a.reason) for a in on_job_deleted(job, NOW)] == expected
    assert all(a.ends_at == NOW for a in on_job_deleted(job, NOW))


def test_scheduling_blocked_is_a_warning_resolved_by_the_next_change() -> None:
    blocked = changed("InProgress", "WorkloadSchedulingBlocked",
                      message="Workload pods are unschedulable: 0/3 nodes are available")
    assert summary(on_condition_changed(blocked, 2, NOW)) == [
        ("CREJobSchedulingBlocked", "warning", "firing", "WorkloadSchedulingBlocked")]
    (alert,) = on_condition_changed(blocked, 2, NOW)
    assert "0/3 nodes are available" in alert.description and "clocks are paused" in alert.description
    running = changed("InProgress", "WorkloadRunning").model_copy(update={"previous": blocked.new})
    assert summary(on_condition_changed(running, 2, NOW)) == [
        ("CREJobSchedulingBlocked", "warning", "resolved", "WorkloadSchedulingBlocked")]


def test_hardware_failure_and_validation_alerts() -> None:
    hardware = JobHardwareFailedData.model_validate({
        "job": {"name": "llm", "namespace": "ml"}, "nodes": ["gpu-3"], "action": "restart",
        "message": "Hardware failure detected on node(s): [gpu-3]",
        "failedNodes": [{"name": "gpu-3", "reason": "HardwareFailureDetected"}]})
    (alert,) = on_hardware_failed(hardware, NOW)
    assert (alert.alertname, alert.severity, alert.status, alert.reason) == (
        "CREJobHardwareFailed", "warning", "firing", "HardwareFailureDetected")
    assert "gpu-3" in alert.summary and "its TrainJob was deleted" in alert.description
    failed = JobValidationData.model_validate({
        "job": {"name": "llm", "namespace": "ml"}, "failed": True, "reason": "ThresholdViolated",
        "message": 'Threshold "goodputRatio" violated: measured 0.5000, expression: value >= 0.9'})
    assert summary(on_validation(failed, NOW)) == [
        ("CREJobValidationFailed", "warning", "firing", "ValidationFailed")]
    passed = failed.model_copy(update={"failed": False, "reason": "ThresholdsMet"})
    assert summary(on_validation(passed, NOW)) == [
        ("CREJobValidationFailed", "warning", "resolved", "ValidationFailed")]


def test_a_delete_resolves_the_verdict_alerts_too() -> None:
    job = {"metadata": {"namespace": "ml", "name": "llm"}, "status": {"conditions": [
        {"type": "Succeeded", "status": "True", "reason": "WorkloadCompleted"},
        {"type": "HardwareFailed", "status": "True", "reason": "HardwareFailureDetected"},
        {"type": "ValidationFailed", "status": "True", "reason": "ThresholdViolated"}]}}
    assert [(a.alertname, a.status) for a in on_job_deleted(job, NOW)] == [
        ("CREJobHardwareFailed", "resolved"), ("CREJobValidationFailed", "resolved")]
