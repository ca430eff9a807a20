"""Which alerts an event raises or resolves (SPEC §8), as a truth table; which sink each alert goes to."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from events.emitted import (
    AlertData,
    FailureInfo,
    JobConditionChangedData,
    JobHardwareFailedData,
    JobRestartedData,
    JobValidationData,
)
from events.envelope import Envelope
from events.types import EventType
from functions.alertsinks import Alertmanager, AlertSink, CloudEventsSink, PagerDuty, Slack, meant_for
from functions.context import Context
from functions.errors import PermanentError
from functions.handlers.alert import Observed, decide, read
from functions.plan import Notify
from functions.resources import cre_jobs
from functions.rules.alerting import (
    Restated,
    dedup_key,
    on_condition_changed,
    on_hardware_failed,
    on_job_deleted,
    on_job_state,
    on_restarted,
    on_validation,
)
from functions.rules.jobs import JobState, parse_job
from functions.settings import Settings
from functions.transport import to_envelope
from localstack.apisource import apiserver_record
from tests.support.helpers import EARLIER, cond, job

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
WINDOW = timedelta(seconds=90)


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


# -- Job updates: alerts from the Job's stored conditions ------------------------------------

def ago(seconds: float) -> str:
    return (NOW - timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


FRESH, OLD = ago(30), EARLIER  # within the window; two hours before NOW


def exclusive(type_: str, reason: str, ltt: str = FRESH, message: str = "m") -> list[dict[str, Any]]:
    """The exclusive set with `type_` True since `ltt`."""
    return [cond(t, "True" if t == type_ else "False", reason if t == type_ else "NotApplicable",
                 message if t == type_ else "", ltt=ltt if t == type_ else OLD)
            for t in ("InProgress", "Succeeded", "Failed")]


RUNNING = exclusive("InProgress", "WorkloadRunning", OLD)


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


def test_both_paths_build_the_same_alert() -> None:
    """Same labels (one alert in Alertmanager, one PagerDuty dedup key) and the same texts."""
    failure = {"podName": "llm-workload-node-0-0", "nodeName": "gpu-7", "exitCode": 137, "reason": "OOMKilled"}
    state = job(exclusive("Failed", "WorkloadFailed", message="boom"), checkpoint={"pvcName": "p", "maxRestarts": 2},
                restart_count=2, workload_ref=True,
                status={"failedNodes": [{"name": "gpu-7", "reason": "WorkloadFailed"}], "failureLog": failure})
    data = changed("Failed", "WorkloadFailed", restarts=2).model_copy(update={
        "job": state.ref, "failure": FailureInfo.model_validate(failure)})
    by_decision = on_condition_changed(data, 2, NOW)[:2]
    by_state = on_job_state(state, NOW, WINDOW, announced=False)[:2]
    for a, b in zip(by_decision, by_state, strict=True):
        assert (a.labels, a.summary, a.description) == (b.labels, b.summary, b.description)
        assert dedup_key(a) == dedup_key(b)
    hardware = job([*RUNNING, cond("HardwareFailed", "True", "HardwareFailureDetected",
                                   "Hardware failure detected on node(s): [gpu-3]", ltt=FRESH)],
                   status={"failedNodes": [{"name": "gpu-3", "reason": "HardwareFailureDetected"}]})
    (from_state,) = on_job_state(hardware, NOW, WINDOW, announced=False)
    (from_decision,) = on_hardware_failed(JobHardwareFailedData.model_validate({
        "job": hardware.ref.model_dump(), "nodes": ["gpu-3"],
        "message": "Hardware failure detected on node(s): [gpu-3]"}), NOW)
    assert (from_state.labels, from_state.summary) == (from_decision.labels, from_decision.summary)
    violated = job([*exclusive("Succeeded", "WorkloadCompleted", OLD),
                    cond("ValidationFailed", "True", "ThresholdViolated", "Threshold violated", ltt=FRESH)])
    (from_state,) = on_job_state(violated, NOW, WINDOW, announced=False)
    (from_decision,) = on_validation(JobValidationData.model_validate({
        "job": violated.ref.model_dump(), "failed": True, "reason": "ThresholdViolated",
        "message": "Threshold violated"}), NOW)
    assert (from_state.labels, from_state.summary, from_state.description) == (
        from_decision.labels, from_decision.summary, from_decision.description)
    blocked = job(exclusive("InProgress", "WorkloadSchedulingBlocked", OLD, "Workload pods are unschedulable: 0/3"),
                  status={"schedulingBlockedSince": ago(320)})
    (from_state,) = on_job_state(blocked, NOW, WINDOW, announced=False)
    (from_decision,) = on_condition_changed(changed("InProgress", "WorkloadSchedulingBlocked", message=(
        "Workload pods are unschedulable: 0/3")).model_copy(update={"job": blocked.ref}), None, NOW)
    assert (from_state.labels, from_state.summary, from_state.description) == (
        from_decision.labels, from_decision.summary, from_decision.description)


# -- which sink gets what --------------------------------------------------------------------

SINKS: dict[str, AlertSink] = {"alertmanager": Alertmanager("http://am"), "pagerduty": PagerDuty("http://pd", "k"),
         "slack": Slack("http://slack"), "cloudevents": CloudEventsSink("http://ce")}
FIRING = on_job_state(job(exclusive("Failed", "WorkloadFailed")), NOW, WINDOW, announced=False)[0]
RESOLVE = on_job_deleted(job(exclusive("Failed", "WorkloadFailed")).raw, NOW)[0]


@pytest.mark.parametrize(("alert", "sinks"), [
    (FIRING, {"alertmanager", "pagerduty", "slack", "cloudevents"}),
    (RESOLVE, {"alertmanager", "pagerduty", "slack", "cloudevents"}),
    (Restated.of(FIRING), {"alertmanager"}),
    (Restated.of(RESOLVE), {"alertmanager", "pagerduty"}),
], ids=["announced", "announced-resolve", "restated", "restated-resolve"])
def test_restated_alerts_go_only_where_a_repeat_changes_nothing(alert: AlertData, sinks: set[str]) -> None:
    assert {name for name, sink in SINKS.items() if meant_for(sink, [alert])} == sinks


def unmanaged(state: JobState) -> JobState:
    return parse_job({**state.raw, "metadata": {**state.raw["metadata"], "labels": {}}}, "nvcre.nvidia.com")


@pytest.mark.parametrize(("settings", "state", "expected"), [
    ({"mode": "observe", "slack_webhook_url": "http://slack"}, job(exclusive("Failed", "JobTimedOut")),
     ["CREJobFailed firing"]),
    ({"mode": "observe", "slack_webhook_url": "http://slack"}, job(exclusive("Failed", "JobTimedOut", OLD)),
     "1 alerts restated, no sink that takes them is configured"),
    ({"mode": "observe", "alertmanager_url": "http://am"}, job(exclusive("Failed", "JobTimedOut", OLD)),
     ["CREJobFailed firing"]),
    ({"mode": "observe", "alertmanager_url": "http://am"}, job(RUNNING), "no alert to raise or resolve"),
    ({"slack_webhook_url": "http://slack"}, job(exclusive("Failed", "JobTimedOut")),
     "1 alerts restated, no sink that takes them is configured"),
    ({"slack_webhook_url": "http://slack"}, unmanaged(job(exclusive("Failed", "JobTimedOut"))),
     ["CREJobFailed firing"]),
], ids=["observe-fresh", "observe-old-chat-only", "observe-old-alertmanager", "nothing-to-say",
        "manage-announced-by-the-decision", "manage-a-job-it-does-not-manage"])
def test_a_job_update_is_notified_or_answered_202(settings: dict[str, Any], state: JobState,
                                                  expected: list[str] | str) -> None:
    plan = decide(Observed(updated_job=state), Settings.model_validate(settings), NOW)
    if isinstance(expected, str):
        assert (plan.effects, plan.reason) == ((), expected)
    else:
        (notify,) = plan.effects
        assert isinstance(notify, Notify)
        assert [f"{a.alertname} {a.status}" for a in notify.alerts] == expected


def event(type_: str, data: Any) -> Envelope:
    return Envelope(id="e1", type=type_, source="/crefn/test", data=data)


HARDWARE = {"job": {"name": "llm", "namespace": "ml"}, "nodes": ["gpu-3"], "action": "report",
            "message": "Hardware failure detected on node(s): [gpu-3]"}
VALIDATION = {"job": {"name": "llm", "namespace": "ml"}, "failed": True, "reason": "ThresholdViolated",
              "message": "goodput low"}


@pytest.mark.parametrize(("envelope", "expected"), [
    (event(EventType.JOB_CONDITION_CHANGED, changed("Succeeded", "WorkloadCompleted", restarts=1).model_dump(
        mode="json", by_alias=True)), ["CREJobRestarted resolved"]),
    (event(EventType.JOB_HARDWARE_FAILED, HARDWARE), ["CREJobHardwareFailed firing"]),
    (event(EventType.JOB_VALIDATION, VALIDATION), ["CREJobValidationFailed firing"]),
    (event(EventType.JOB_VALIDATION, {**VALIDATION, "failed": False, "reason": "ThresholdsMet"}),
     ["CREJobValidationFailed resolved"]),
], ids=["succeeded-after-a-restart", "hardware-failed", "validation-failed", "validation-passed"])
def test_each_decision_event_raises_its_alert(envelope: Envelope, expected: list[str]) -> None:
    """Events that need no read of the Job: what the `alert` function sends for each."""
    settings = Settings.model_validate({"alertmanager_url": "http://am"})
    (notify,) = decide(read(envelope, Context(settings)), settings, NOW).effects
    assert isinstance(notify, Notify)
    assert [f"{a.alertname} {a.status}" for a in notify.alerts] == expected


def test_an_api_server_event_other_than_update_or_delete_is_refused() -> None:
    record = apiserver_record("add", {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                                      "metadata": {"name": "llm", "namespace": "ml"}},
                              cre_jobs("nvcre.nvidia.com"), "https://127.0.0.1")
    envelope = to_envelope(record)
    with pytest.raises(PermanentError) as refused:
        read(envelope, Context(Settings()))
    assert str(refused.value) == f"unknown event type {envelope.type!r} for this function"
