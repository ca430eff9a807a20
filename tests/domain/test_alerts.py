"""`functions.domain.alerts` (SPEC §8), as truth tables: the alerts a Job update states from the Job's stored
conditions, and what a delete resolves."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from events.emitted import AlertData
from functions.domain.alerts import Restated, on_job_deleted, on_job_state
from functions.domain.jobs import JobState
from tests.support.alertjobs import RUNNING, exclusive
from tests.support.alerts import FRESH, NOW, OLD, WINDOW, ago
from tests.support.helpers import cond, job


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


def test_a_delete_resolves_the_verdict_alerts_too() -> None:
    job = {"metadata": {"namespace": "ml", "name": "llm"}, "status": {"conditions": [
        {"type": "Succeeded", "status": "True", "reason": "WorkloadCompleted"},
        {"type": "HardwareFailed", "status": "True", "reason": "HardwareFailureDetected"},
        {"type": "ValidationFailed", "status": "True", "reason": "ThresholdViolated"}]}}
    assert [(a.alertname, a.status) for a in on_job_deleted(job, NOW)] == [
        ("CREJobHardwareFailed", "resolved"), ("CREJobValidationFailed", "resolved")]


# -- Job updates: alerts from the Job's stored conditions ------------------------------------

def stated(alerts: list[AlertData]) -> list[tuple[str, str, str, str]]:
    return [(a.alertname, a.status, a.reason, "restated" if isinstance(a, Restated) else "announced")
            for a in alerts]


@pytest.mark.parametrize(("state", "announced", "expected"), [
    (job(exclusive("Failed", "WorkloadFailed")), False,
     [("CREJobFailed", "firing", "WorkloadFailed", "announced")]),
    (job(exclusive("Failed", "JobTimedOut")), False, [("CREJobFailed", "firing", "JobTimedOut", "announced")]),
    (job(exclusive("Failed", "WorkloadStalled", OLD)), False,
     [("CREJobFailed", "firing", "WorkloadStalled", "restated")]),
    (job(exclusive("Failed", "WorkloadFailed")), True, [("CREJobFailed", "firing", "WorkloadFailed", "restated")]),
    (job(exclusive("Failed", "WorkloadFailed", ago(91 * 86400))), False, []),
    (job(exclusive("Failed", "WorkloadFailed"), checkpoint={"pvcName": "p", "maxRestarts": 2}, restart_count=2),
     False, [("CREJobFailed", "firing", "WorkloadFailed", "announced"),
             ("CREJobRestartsExhausted", "firing", "WorkloadFailed", "announced"),
             ("CREJobRestarted", "resolved", "WorkloadRestarting", "restated")]),
    (job(exclusive("Succeeded", "WorkloadCompleted"), restart_count=1), False,
     [("CREJobRestarted", "resolved", "WorkloadRestarting", "restated")]),
    (job(exclusive("Succeeded", "WorkloadCompleted", OLD), restart_count=1), False, []),
    (job(RUNNING), False, []),
    (job([*RUNNING, cond("HardwareFailed", "True", "HardwareFailureDetected", ltt=FRESH)]), False,
     [("CREJobHardwareFailed", "firing", "HardwareFailureDetected", "announced")]),
    (job([*RUNNING, cond("HardwareFailed", "True", "HardwareFailureDetected")]), False,
     [("CREJobHardwareFailed", "firing", "HardwareFailureDetected", "restated")]),
    (job([*RUNNING, cond("HardwareFailed", "False", "NodesHealthy", ltt=FRESH)]), False,
     [("CREJobHardwareFailed", "resolved", "HardwareFailureDetected", "restated")]),
    (job([*exclusive("Succeeded", "WorkloadCompleted", OLD), cond("ValidationFailed", "True", "ThresholdViolated",
                                                                  ltt=FRESH)]), False,
     [("CREJobValidationFailed", "firing", "ValidationFailed", "announced")]),
    (job([*exclusive("Succeeded", "WorkloadCompleted", OLD), cond("ValidationFailed", "False", "ThresholdsMet",
                                                                  ltt=FRESH)]), False,
     [("CREJobValidationFailed", "resolved", "ValidationFailed", "restated")]),
    (job([*exclusive("Succeeded", "WorkloadCompleted", OLD), cond("ValidationFailed", "False", "ThresholdsMet")]),
     False, []),
    (job(exclusive("InProgress", "WorkloadSchedulingBlocked", OLD), status={"schedulingBlockedSince": ago(320)}),
     False, [("CREJobSchedulingBlocked", "firing", "WorkloadSchedulingBlocked", "announced")]),
    (job(exclusive("InProgress", "WorkloadSchedulingBlocked", OLD), status={"schedulingBlockedSince": ago(3600)}),
     False, [("CREJobSchedulingBlocked", "firing", "WorkloadSchedulingBlocked", "restated")]),
    (job(exclusive("InProgress", "WorkloadSchedulingBlocked", OLD), status={"schedulingBlockedSince": ago(80)},
         spec={"schedulingStallGraceSeconds": 60}),
     False, [("CREJobSchedulingBlocked", "firing", "WorkloadSchedulingBlocked", "announced")]),
    (job(RUNNING, status={"schedulingResumedTime": ago(10)}), False,
     [("CREJobSchedulingBlocked", "resolved", "WorkloadSchedulingBlocked", "restated")]),
    (job(RUNNING, status={"schedulingResumedTime": OLD}), False, []),
    (job(exclusive("Failed", "JobTimedOut", message="Job exceeded timeoutPerJob while its pods were unschedulable"),
         status={"schedulingBlockedSince": OLD}), False,
     [("CREJobFailed", "firing", "JobTimedOut", "announced"),
      ("CREJobSchedulingBlocked", "resolved", "WorkloadSchedulingBlocked", "restated")]),
], ids=["failed", "timed-out", "stalled-long-ago", "failed-announced-by-the-decision", "failed-past-90-days",
        "restarts-exhausted", "succeeded-after-restarts", "succeeded-long-ago", "running", "hardware-failed",
        "hardware-failed-long-ago", "hardware-healthy-again", "validation-failed", "thresholds-met",
        "thresholds-met-long-ago", "blocked-past-grace", "blocked-long-ago", "blocked-own-grace", "pods-placed",
        "pods-placed-long-ago", "timed-out-while-blocked"])
def test_a_job_update_states_its_conditions(state: JobState, announced: bool,
                                            expected: list[tuple[str, str, str, str]]) -> None:
    assert stated(on_job_state(state, NOW, WINDOW, announced)) == expected


@pytest.mark.parametrize(("seconds_ago", "announced"), [(-5, True), (0, True), (89, True), (90, True), (91, False),
                                                         (3600, False)],
                         ids=["writer-clock-ahead", "now", "89s", "90s", "91s", "an-hour"])
def test_only_a_transition_within_the_window_is_announced(seconds_ago: int, announced: bool) -> None:
    state = job(exclusive("Failed", "WorkloadFailed", ago(seconds_ago)))
    (alert,) = on_job_state(state, NOW, WINDOW, announced=False)
    assert (not isinstance(alert, Restated)) is announced
    assert alert.starts_at == NOW - timedelta(seconds=seconds_ago)


@pytest.mark.parametrize(("reason", "summary", "failed"), [
    ("OOMKilled", "CRE Job ns/llm failed (WorkloadFailed): OOMKilled on gpu-node-17", "OOMKilled (exit 137)"),
    ("", "CRE Job ns/llm failed (WorkloadFailed): Error on gpu-node-17", "Error (exit 137)"),
], ids=["container-reason", "no-container-reason"])
def test_the_failed_alert_names_the_failed_containers_reason_or_error(reason: str, summary: str, failed: str) -> None:
    """A failed container the kubelet gave no reason is `Error`, in the summary as in the description."""
    failure = {"podName": "llm-workload-node-1-0", "nodeName": "gpu-node-17", "exitCode": 137, "reason": reason}
    (alert,) = on_job_state(job(exclusive("Failed", "WorkloadFailed"), status={"failureLog": failure}), NOW, WINDOW,
                            False)
    assert alert.summary == summary
    assert alert.description.endswith(f" Failed container: {failed} in pod llm-workload-node-1-0 on node gpu-node-17.")
