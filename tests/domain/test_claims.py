"""`functions.domain.claims` (SPEC §8), as truth tables: what a decision event claims and the stored Job bears
out, and what a delete resolves while the name is taken again."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from functions.domain.alerts import Restated, dedup_key, on_job_state, restart_states
from functions.domain.claims import Decision, claimed, on_decision, on_deleted
from functions.domain.jobs import JobState
from tests.support.alertjobs import BLOCKED, CHECKPOINT, GRACE_END, RESTARTING, RUNNING, exclusive
from tests.support.alerts import FRESH, NOW, OLD, WINDOW, ago, changed, hardware, restarted, unblocked, validation
from tests.support.helpers import cond, job


def summary(alerts: list[Any]) -> list[tuple[str, str, str, str]]:
    return [(a.alertname, a.severity, a.status, a.reason) for a in alerts]


@pytest.mark.parametrize(("event", "stored", "expected"), [
    (changed("Failed", "WorkloadFailed"), job(exclusive("Failed", "WorkloadFailed")),
     [("CREJobFailed", "critical", "firing", "WorkloadFailed")]),
    (changed("Failed", "WorkloadFailed", restarts=2), job(exclusive("Failed", "WorkloadFailed"),
                                                          checkpoint={"pvcName": "p", "maxRestarts": 2},
                                                          restart_count=2),
     [("CREJobFailed", "critical", "firing", "WorkloadFailed"),
      ("CREJobRestartsExhausted", "critical", "firing", "WorkloadFailed"),
      ("CREJobRestarted", "warning", "resolved", "WorkloadRestarting")]),
    (changed("Failed", "WorkloadFailed", restarts=1), job(exclusive("Failed", "WorkloadFailed"),
                                                          checkpoint=CHECKPOINT, restart_count=1),
     [("CREJobFailed", "critical", "firing", "WorkloadFailed"),
      ("CREJobRestarted", "warning", "resolved", "WorkloadRestarting")]),
    (changed("Failed", "WorkloadCreationError"), job(exclusive("Failed", "WorkloadCreationError")),
     [("CREJobFailed", "critical", "firing", "WorkloadCreationError")]),
    (changed("Failed", "WorkloadFailed"), job(exclusive("Failed", "JobTimedOut")),
     [("CREJobFailed", "critical", "firing", "JobTimedOut")]),
    (changed("Succeeded", "WorkloadCompleted", restarts=1), job(exclusive("Succeeded", "WorkloadCompleted"),
                                                                restart_count=1),
     [("CREJobRestarted", "warning", "resolved", "WorkloadRestarting")]),
    (changed("Succeeded", "WorkloadCompleted"), job(exclusive("Succeeded", "WorkloadCompleted")), []),
    (changed("InProgress", "WorkloadRunning"), job(RUNNING), []),
    (changed("Failed", "WorkloadFailed"), job(RUNNING), []),
    (changed("Succeeded", "WorkloadCompleted", restarts=1), job(RESTARTING, checkpoint=CHECKPOINT, restart_count=1),
     []),
    (changed("Failed", "WorkloadFailed"), job(exclusive("Failed", "WorkloadFailed", ago(91 * 86400))), []),
    (changed("InProgress", "WorkloadSchedulingBlocked"), job(BLOCKED, status={"schedulingBlockedSince": ago(400)}),
     [("CREJobSchedulingBlocked", "warning", "firing", "WorkloadSchedulingBlocked")]),
    (changed("InProgress", "WorkloadSchedulingBlocked"), job(RUNNING), []),
    (unblocked(), job(RUNNING, status={"schedulingResumedTime": ago(10)}),
     [("CREJobSchedulingBlocked", "warning", "resolved", "WorkloadSchedulingBlocked")]),
    (unblocked(), job(BLOCKED, status={"schedulingBlockedSince": ago(400)}), []),
    (restarted(), job(RESTARTING, checkpoint=CHECKPOINT, restart_count=1, annotations=GRACE_END),
     [("CREJobRestarted", "warning", "firing", "WorkloadRestarting")]),
    (restarted(), job(RUNNING, checkpoint=CHECKPOINT), []),
    (restarted(), job(RUNNING, checkpoint=CHECKPOINT, restart_count=2, annotations=GRACE_END), []),
    (restarted(), job(exclusive("Succeeded", "WorkloadCompleted"), checkpoint=CHECKPOINT, restart_count=1,
                      annotations=GRACE_END), []),
    (restarted(), job(RUNNING, checkpoint=CHECKPOINT, restart_count=1,
                      annotations={"crefn.dev/restart-not-before": ago(3601)}), []),
    (hardware(), job([*RUNNING, cond("HardwareFailed", "True", "HardwareFailureDetected", ltt=FRESH)]),
     [("CREJobHardwareFailed", "warning", "firing", "HardwareFailureDetected")]),
    (hardware(), job(RUNNING), []),
    (hardware(), job([*RUNNING, cond("HardwareFailed", "False", "NodesHealthy", ltt=FRESH)]), []),
    (validation(True), job([*exclusive("Succeeded", "WorkloadCompleted", OLD),
                            cond("ValidationFailed", "True", "ThresholdViolated", ltt=FRESH)]),
     [("CREJobValidationFailed", "warning", "firing", "ValidationFailed")]),
    (validation(True), job(exclusive("Succeeded", "WorkloadCompleted", OLD)), []),
    (validation(False), job([*exclusive("Succeeded", "WorkloadCompleted", OLD),
                             cond("ValidationFailed", "False", "ThresholdsMet", ltt=FRESH)]),
     [("CREJobValidationFailed", "warning", "resolved", "ValidationFailed")]),
    (validation(False), job([*exclusive("Succeeded", "WorkloadCompleted", OLD),
                             cond("ValidationFailed", "True", "ThresholdViolated", ltt=FRESH)]), []),
], ids=["failed", "restarts-exhausted", "failed-with-budget-left", "creation-error", "the-stored-reason-wins",
        "succeeded-after-restart", "succeeded", "in-progress", "forged-failure-of-a-running-job",
        "forged-success-of-a-restarting-job", "replayed-failure-past-90-days", "blocked", "forged-block",
        "unblocked", "forged-unblock-of-a-blocked-job", "restarted", "forged-restart",
        "replayed-after-the-next-restart", "replayed-after-the-verdict", "replayed-an-hour-after-its-grace",
        "hardware-failed", "forged-hardware-failure",
        "replayed-hardware-failure-of-healthy-nodes", "validation-failed", "forged-validation-failure",
        "thresholds-met", "forged-thresholds-met-of-a-violation"])
def test_a_decision_event_sends_what_the_stored_job_bears_out(event: Decision, stored: JobState,
                                                              expected: list[tuple[str, str, str, str]]) -> None:
    alerts = on_decision(stored, claimed(event, stored), NOW)
    assert summary(alerts) == expected
    assert not any(isinstance(a, Restated) for a in alerts)  # a decision's alerts are announced


def test_the_failed_alert_says_what_the_stored_job_says() -> None:
    failure = {"podName": "llm-workload-node-1-0", "nodeName": "gpu-node-17", "exitCode": 137, "reason": "OOMKilled"}
    stored = job(exclusive("Failed", "WorkloadFailed", message="Workload TrainJob/llm-workload failed: exit 137"),
                 workload_ref=True, status={"failedNodes": [{"name": "gpu-7", "reason": "WorkloadFailed"}],
                                            "failureLog": failure})
    forged = changed("Failed", "WorkloadFailed", message="<!channel> made up").model_copy(update={
        "failed_nodes": [], "failure": None})
    (alert,) = on_decision(stored, claimed(forged, stored), NOW)
    assert alert.labels == {"alertname": "CREJobFailed", "severity": "critical", "namespace": "ns", "job": "llm",
                            "reason": "WorkloadFailed"}
    assert dedup_key(alert) == "ns/llm/CREJobFailed"
    assert alert.summary == "CRE Job ns/llm failed (WorkloadFailed): OOMKilled on gpu-node-17"  # PagerDuty's line
    assert alert.description == (
        "Job ns/llm failed (TrainJob llm-workload): Workload TrainJob/llm-workload failed: exit 137. Reason: "
        "WorkloadFailed. Restarts used: 0 (no checkpoint restarts configured). Failed nodes: gpu-7. Failed "
        "container: OOMKilled (exit 137) in pod llm-workload-node-1-0 on node gpu-node-17.")
    assert alert.starts_at == NOW - timedelta(seconds=30) and alert.ends_at == alert.starts_at + timedelta(days=90)


def test_the_restart_warning_is_the_stored_restart_and_expires_an_hour_after_its_grace() -> None:
    stored = job(RESTARTING, checkpoint=CHECKPOINT, restart_count=1, annotations=GRACE_END)
    (alert,) = on_decision(stored, claimed(restarted(), stored), NOW)
    assert (alert.alertname, alert.severity, alert.status, alert.ends_at) == (
        "CREJobRestarted", "warning", "firing", NOW + timedelta(hours=1))
    assert alert.summary == "CRE Job ns/llm restarted from checkpoint (1/3)"
    assert alert.description == ("Job ns/llm is restarting from its checkpoint (restart 1/3): TrainJob llm-workload "
                                 "(attempt 0) failed and was deleted; the next attempt starts after "
                                 "2026-11-30T12:00:00+00:00.")  # the event's failure is nowhere: not stored
    assert restart_states(job(RESTARTING, checkpoint=CHECKPOINT, restart_count=1), NOW)[0][0].ends_at == \
        NOW + timedelta(hours=1)  # no grace recorded (CRE's restart): an hour from now


def test_a_delete_never_resolves_what_the_job_holding_the_name_now_holds() -> None:
    """The name taken again (another uid): the old Job's alerts are resolved but for those the new one holds."""
    old = job([*exclusive("Failed", "WorkloadFailed", OLD),
               cond("HardwareFailed", "True", "HardwareFailureDetected")], restart_count=1).raw
    assert [a.alertname for a in on_deleted(old, None, NOW)] == ["CREJobFailed", "CREJobRestarted",
                                                                 "CREJobHardwareFailed"]
    failed_again = job(exclusive("Failed", "WorkloadFailed"))
    assert [a.alertname for a in on_deleted(old, failed_again, NOW)] == ["CREJobRestarted", "CREJobHardwareFailed"]
    restarting = job(RESTARTING, checkpoint=CHECKPOINT, restart_count=1)
    assert [a.alertname for a in on_deleted(old, restarting, NOW)] == ["CREJobFailed", "CREJobHardwareFailed"]


def test_both_paths_build_the_same_alert() -> None:
    """A decision event and a Job update about the same stored Job: the same labels (one alert in
    Alertmanager, one PagerDuty dedup key) and the same texts."""
    failure = {"podName": "llm-workload-node-0-0", "nodeName": "gpu-7", "exitCode": 137, "reason": "OOMKilled"}
    nodes = {"failedNodes": [{"name": "gpu-7", "reason": "WorkloadFailed"},
                             {"name": "gpu-3", "reason": "HardwareFailureDetected"}]}
    cases: list[tuple[Decision, JobState]] = [
        (changed("Failed", "WorkloadFailed", restarts=2),
         job(exclusive("Failed", "WorkloadFailed", message="boom"), checkpoint={"pvcName": "p", "maxRestarts": 2},
             restart_count=2, workload_ref=True, status={**nodes, "failureLog": failure})),
        (hardware(), job([*RUNNING, cond("HardwareFailed", "True", "HardwareFailureDetected",
                                         "Hardware failure detected on node(s): [gpu-3]", ltt=FRESH)], status=nodes)),
        (validation(True), job([*exclusive("Succeeded", "WorkloadCompleted", OLD),
                                cond("ValidationFailed", "True", "ThresholdViolated", "Threshold violated",
                                     ltt=FRESH)])),
        (changed("InProgress", "WorkloadSchedulingBlocked"),
         job(exclusive("InProgress", "WorkloadSchedulingBlocked", OLD, "Workload pods are unschedulable: 0/3"),
             status={"schedulingBlockedSince": ago(320)})),
    ]
    for event, stored in cases:
        by_decision = [a for a in on_decision(stored, claimed(event, stored), NOW) if a.status == "firing"]
        by_state = [a for a in on_job_state(stored, NOW, WINDOW, announced=False) if a.status == "firing"]
        assert [a.model_dump() for a in by_decision] == [a.model_dump() for a in by_state]
        assert by_decision and all(dedup_key(a) == dedup_key(b) for a, b in zip(by_decision, by_state, strict=True))


def test_a_decision_event_about_a_state_older_than_the_hour_pages_no_one_again() -> None:
    """A replayed or forged decision event, checked against the stored Job: the state it claims began (or was
    left) more than an hour ago, or was never known to be left, is restated (Alertmanager; PagerDuty for a
    resolve), never a new page; one from the last hour is announced (Knative's retries end within it)."""
    def kinds(alerts: list[Any]) -> list[tuple[str, str, bool]]:
        return [(a.alertname, a.status, isinstance(a, Restated)) for a in alerts]

    failed_long_ago = job(exclusive("Failed", "WorkloadFailed", ago(61 * 86400)))
    assert kinds(on_decision(failed_long_ago, claimed(changed("Failed", "WorkloadFailed"), failed_long_ago),
                             NOW)) == [("CREJobFailed", "firing", True)]
    failed_lately = job(exclusive("Failed", "WorkloadFailed", ago(50 * 60)))
    assert kinds(on_decision(failed_lately, claimed(changed("Failed", "WorkloadFailed"), failed_lately),
                             NOW)) == [("CREJobFailed", "firing", False)]
    never_blocked = job(RUNNING)
    assert kinds(on_decision(never_blocked, claimed(unblocked(), never_blocked), NOW)) == [
        ("CREJobSchedulingBlocked", "resolved", True)]
    unblocked_lately = job(RUNNING, status={"schedulingResumedTime": ago(10)})
    assert kinds(on_decision(unblocked_lately, claimed(unblocked(), unblocked_lately), NOW)) == [
        ("CREJobSchedulingBlocked", "resolved", False)]


def test_a_restart_with_no_grace_recorded_is_timed_by_its_next_attempts_start() -> None:
    """No grace annotation (a grace of 0, or CRE's restart): the warning holds for an hour from when the next
    attempt was first seen running, so a restart of weeks ago is not re-paged by a replayed `job.restarted`."""
    weeks_ago = job(RUNNING, checkpoint=CHECKPOINT, restart_count=1, status={"workloadStartTime": ago(14 * 86400)})
    assert on_decision(weeks_ago, claimed(restarted(), weeks_ago), NOW) == []
    lately = job(RUNNING, checkpoint=CHECKPOINT, restart_count=1, status={"workloadStartTime": ago(120)})
    (alert,) = on_decision(lately, claimed(restarted(), lately), NOW)
    assert (alert.status, isinstance(alert, Restated)) == ("firing", False)
    assert alert.ends_at == NOW - timedelta(seconds=120) + timedelta(hours=1)


def test_a_hardware_failure_that_grows_is_announced_however_old_its_condition() -> None:
    """`HardwareFailed` stays True, its time unchanged, while another node joins its list: the decision event
    about the new node pages, though the condition is days old."""
    stored = job([*RUNNING, cond("HardwareFailed", "True", "HardwareFailureDetected",
                                 "Hardware failure detected on node(s): [n1 n2]", ltt=ago(3 * 86400))],
                 status={"failedNodes": [{"name": "n1", "reason": "r"}, {"name": "n2", "reason": "r"}]})
    (alert,) = on_decision(stored, claimed(hardware(), stored), NOW)
    assert (alert.alertname, alert.status, isinstance(alert, Restated)) == ("CREJobHardwareFailed", "firing", False)
