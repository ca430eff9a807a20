"""Which alerts an event raises or resolves (SPEC §8), as truth tables: what a decision event claims and
the stored Job bears out, what a Job update states, what a delete resolves; which sink each alert goes to."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from events.emitted import (
    AlertData,
    JobConditionChangedData,
    JobHardwareFailedData,
    JobRestartedData,
    JobValidationData,
)
from functions.alertsinks import Alertmanager, AlertSink, CloudEventsSink, PagerDuty, Slack, configured_sinks, meant_for
from functions.codec import to_envelope
from functions.context import Context
from functions.errors import PermanentError
from functions.handlers.alert import read
from functions.plan import Notify
from functions.resources import cre_jobs
from functions.rules.alert import Decided, Skipped, Updated, decide, sink_names
from functions.rules.alerting import Restated, dedup_key, on_job_deleted, on_job_state, restart_states
from functions.rules.claims import Decision, claimed, on_decision, on_deleted
from functions.rules.jobs import JobState, parse_job
from functions.settings import Settings
from localstack.eventing.apisource import apiserver_record
from tests.support.helpers import EARLIER, cond, job

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
WINDOW = timedelta(seconds=90)


def ago(seconds: float) -> str:
    return (NOW - timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


FRESH, OLD = ago(30), EARLIER  # within the window; two hours before NOW


def exclusive(type_: str, reason: str, ltt: str = FRESH, message: str = "m") -> list[dict[str, Any]]:
    """The exclusive set with `type_` True since `ltt`."""
    return [cond(t, "True" if t == type_ else "False", reason if t == type_ else "NotApplicable",
                 message if t == type_ else "", ltt=ltt if t == type_ else OLD)
            for t in ("InProgress", "Succeeded", "Failed")]


RUNNING = exclusive("InProgress", "WorkloadRunning", OLD)


# -- decision events: what they claim, as the stored Job bears it out -------------------------

def changed(new_type: str, reason: str, restarts: int = 0, message: str = "boom") -> JobConditionChangedData:
    return JobConditionChangedData.model_validate({
        "job": {"name": "llm", "namespace": "ns"}, "new": {"type": new_type, "reason": reason, "message": message},
        "restartCount": restarts, "failedNodes": [{"name": "gpu-7", "reason": "WorkloadFailed"}],
        "workload": {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "llm-workload",
                     "namespace": "ns", "attempt": restarts}})


def restarted(attempt: int = 1) -> JobRestartedData:
    return JobRestartedData.model_validate({
        "job": {"name": "llm", "namespace": "ns"}, "attempt": attempt, "maxRestarts": 3, "notBefore": NOW.isoformat(),
        "previousWorkload": {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                             "name": "llm-workload", "namespace": "ns", "attempt": attempt - 1},
        "failure": {"podName": "made-up", "nodeName": "made-up", "exitCode": 1, "reason": "MadeUp"}})


def hardware() -> JobHardwareFailedData:
    return JobHardwareFailedData.model_validate({
        "job": {"name": "llm", "namespace": "ns"}, "nodes": ["gpu-3"], "action": "report",
        "message": "Hardware failure detected on node(s): [gpu-3]"})


def validation(failed: bool) -> JobValidationData:
    return JobValidationData.model_validate({
        "job": {"name": "llm", "namespace": "ns"}, "failed": failed,
        "reason": "ThresholdViolated" if failed else "ThresholdsMet", "message": "goodput low"})


def summary(alerts: list[Any]) -> list[tuple[str, str, str, str]]:
    return [(a.alertname, a.severity, a.status, a.reason) for a in alerts]


def unblocked() -> JobConditionChangedData:
    return changed("InProgress", "WorkloadRunning").model_copy(update={
        "previous": changed("InProgress", "WorkloadSchedulingBlocked").new})


CHECKPOINT = {"pvcName": "p", "maxRestarts": 3}
GRACE_END = {"crefn.dev/restart-not-before": "2026-11-30T12:00:00Z"}
RESTARTING = exclusive("InProgress", "WorkloadRestarting", OLD)
BLOCKED = exclusive("InProgress", "WorkloadSchedulingBlocked", OLD)


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


@pytest.mark.parametrize("settings", [
    {}, {"alertmanager_url": "http://am"}, {"slack_webhook_url": "http://slack", "alert_sink_url": "http://ce"},
    {"alertmanager_url": "http://am", "slack_webhook_url": "http://slack", "pagerduty_routing_key": "k",
     "alert_sink_url": "http://ce"},
], ids=["none", "alertmanager", "slack-and-cloudevents", "all"])
def test_the_decision_names_the_sinks_that_are_configured(settings: dict[str, str]) -> None:
    configured = Settings.model_validate(settings)
    assert sink_names(configured) == tuple(sink.name for sink in configured_sinks(configured))


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
    plan = decide(Updated(state), Settings.model_validate(settings), NOW)
    if isinstance(expected, str):
        assert (plan.effects, plan.reason) == ((), expected)
    else:
        (notify,) = plan.effects
        assert isinstance(notify, Notify)
        assert [f"{a.alertname} {a.status}" for a in notify.alerts] == expected


NOTHING_BORNE_OUT = "Job ns/llm: the stored Job bears out nothing the event claims"


@pytest.mark.parametrize(("event", "stored", "expected"), [
    (changed("Succeeded", "WorkloadCompleted", restarts=1), job(exclusive("Succeeded", "WorkloadCompleted"),
                                                                restart_count=1), ["CREJobRestarted resolved"]),
    (hardware(), job([*RUNNING, cond("HardwareFailed", "True", "HardwareFailureDetected", ltt=FRESH)]),
     ["CREJobHardwareFailed firing"]),
    (validation(True), job([cond("ValidationFailed", "True", "ThresholdViolated", ltt=FRESH)]),
     ["CREJobValidationFailed firing"]),
    (validation(False), job([cond("ValidationFailed", "False", "ThresholdsMet", ltt=FRESH)]),
     ["CREJobValidationFailed resolved"]),
    (changed("Failed", "WorkloadFailed"), job(RUNNING), NOTHING_BORNE_OUT),
    (validation(False), job([cond("ValidationFailed", "True", "ThresholdViolated", ltt=FRESH)]), NOTHING_BORNE_OUT),
], ids=["succeeded-after-a-restart", "hardware-failed", "validation-failed", "validation-passed",
        "forged-failure", "forged-thresholds-met"])
def test_each_decision_event_raises_its_alert_or_answers_202(event: Decision, stored: JobState,
                                                             expected: list[str] | str) -> None:
    """What the `alert` function sends for each decision event, given the Job it read."""
    settings = Settings.model_validate({"alertmanager_url": "http://am"})
    plan = decide(Decided(stored, event), settings, NOW)
    if isinstance(expected, str):
        assert (plan.effects, plan.reason) == ((), expected)
        return
    (notify,) = plan.effects
    assert isinstance(notify, Notify)
    assert [f"{a.alertname} {a.status}" for a in notify.alerts] == expected


def test_an_update_of_a_job_that_says_nothing_is_answered_without_a_read() -> None:
    """A running Job's update: nothing to alert on whatever is stored, so no GET (this Context has no API
    server to reach: a read would raise)."""
    record = apiserver_record("update", job(RUNNING).raw, cre_jobs("nvcre.nvidia.com"), "https://127.0.0.1")
    settings = Settings.model_validate({"alertmanager_url": "http://am"})
    observed = read(to_envelope(record), Context(settings, clock=lambda: NOW))
    assert observed == Skipped("Job ns/llm: its update says nothing to alert on")


def test_an_api_server_event_other_than_update_or_delete_is_refused() -> None:
    record = apiserver_record("add", {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                                      "metadata": {"name": "llm", "namespace": "ml"}},
                              cre_jobs("nvcre.nvidia.com"), "https://127.0.0.1")
    envelope = to_envelope(record)
    with pytest.raises(PermanentError) as refused:
        read(envelope, Context(Settings()))
    assert str(refused.value) == f"unknown event type {envelope.type!r} for this function"
