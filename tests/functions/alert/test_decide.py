"""`functions.alert.decide`, the alert function's decision (SPEC §8), as truth tables: a Job update notified
or answered 202, each decision event's alert, which sinks are configured and which sink each alert goes to."""

from __future__ import annotations

from typing import Any

import pytest

from events.emitted import AlertData
from functions.alert.decide import Decided, Deleted, Updated, decide, sink_names
from functions.domain.alerts import Restated, on_job_deleted, on_job_state
from functions.domain.claims import Decision
from functions.domain.jobs import JobState, parse_job
from functions.runtime.alertsinks import (
    Alertmanager,
    AlertSink,
    CloudEventsSink,
    PagerDuty,
    Slack,
    configured_sinks,
    meant_for,
)
from functions.runtime.effects import Notify
from functions.runtime.settings import Settings
from tests.support.alertjobs import RUNNING, exclusive
from tests.support.alerts import FRESH, NOW, OLD, WINDOW, changed, hardware, validation
from tests.support.helpers import cond, job

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


@pytest.mark.parametrize(("recorded", "settings", "expected"), [
    (True, {"slack_webhook_url": "http://slack"}, [("CREJobFailed resolved", False)]),
    (False, {"slack_webhook_url": "http://slack"}, "1 alerts restated, no sink that takes them is configured"),
    (False, {"slack_webhook_url": "http://slack", "pagerduty_routing_key": "k"}, [("CREJobFailed resolved", True)]),
], ids=["its-events-held", "no-event-chat-only", "no-event-pagerduty"])
def test_a_deleted_job_is_resolved_in_chat_only_when_an_event_says_it_existed(
        recorded: bool, settings: dict[str, str], expected: list[tuple[str, bool]] | str) -> None:
    """A delete event names a Job gone on the fresh read, which a Job that never existed is too: its resolves
    are announced when the API server holds an Event about its uid, else restated (never in chat)."""
    deleted = job(exclusive("Failed", "WorkloadFailed")).raw
    plan = decide(Deleted(deleted, None, recorded), Settings.model_validate(settings), NOW)
    if isinstance(expected, str):
        assert (plan.effects, plan.reason) == ((), expected)
        return
    (notify,) = plan.effects
    assert isinstance(notify, Notify)
    assert [(f"{a.alertname} {a.status}", isinstance(a, Restated)) for a in notify.alerts] == expected
