"""When an event may be the one that decided a verdict, delivered again (`functions.domain.redelivery.recent`):
written within the hour, and the event seen (`observedAt`, else its `time`) no later than the write, to the
second. Then (`restate`): a missing Event waits 30 s after the write (the Broker's delivery timeout, PT30S in
knative/base), and the Event names its cause in the annotation `crefn.dev/cause`, which tells a redelivery of
that event from another."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from events.envelope import Envelope
from functions.domain.conditions import condition
from functions.domain.jobs import JobState, parse_job
from functions.domain.redelivery import recent, restate, sent_at
from functions.runtime.effects import KubeEvent, Wait

WRITTEN = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(("observed", "now", "expected"), [
    (WRITTEN - timedelta(seconds=1), WRITTEN + timedelta(seconds=5), True),
    (WRITTEN + timedelta(milliseconds=900), WRITTEN + timedelta(seconds=5), True),
    (WRITTEN + timedelta(seconds=1), WRITTEN + timedelta(seconds=5), False),
    (None, WRITTEN + timedelta(seconds=5), True),
    (WRITTEN, WRITTEN + timedelta(minutes=60), True),
    (WRITTEN, WRITTEN + timedelta(minutes=60, seconds=1), False),
], ids=["seen-before", "seen-within-the-second", "seen-a-second-after", "no-time", "an-hour-on", "past-the-hour"])
def test_a_write_is_restated_for_an_event_seen_before_it_within_the_hour(observed: datetime | None, now: datetime,
                                                                        expected: bool) -> None:
    assert recent(WRITTEN, observed, now) is expected


def test_no_write_time_restates_nothing() -> None:
    assert recent(None, None, WRITTEN) is False


@pytest.mark.parametrize(("time", "expected"), [
    ("2026-03-01T12:00:00Z", WRITTEN),
    ("2026-03-01T12:00:00.250+00:00", WRITTEN + timedelta(milliseconds=250)),
    ("", None),
    ("yesterday", None),
    ("2026-03-01T12:00:00", None),
], ids=["rfc3339", "with-fraction-and-offset", "absent", "unreadable", "without-an-offset"])
def test_the_time_attribute_stands_for_when_the_event_was_seen(time: str, expected: datetime | None) -> None:
    assert sent_at(Envelope(id="d1", type="dev.crefn.job.deadline", source="/crefn/resync", time=time)) == expected


FAILED = condition("Failed", "WorkloadFailed", "exit 137")
CAUSE = Envelope(id="e1", type="dev.crefn.workload.phase", source="/crefn/phase")


def failed_at(written: datetime) -> JobState:
    """A Job whose True exclusive condition, `FAILED`, was written at `written`."""
    return parse_job({"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                      "metadata": {"name": "llm", "namespace": "ml", "uid": "job-uid"},
                      "status": {"restartCount": 0, "conditions": [
                          {"type": "Failed", "status": "True", "reason": "WorkloadFailed", "message": "exit 137",
                           "lastTransitionTime": written.strftime("%Y-%m-%dT%H:%M:%SZ")}]}}, "nvcre.nvidia.com")


@pytest.mark.parametrize(("age", "waited"), [(0, 30), (1, 29), (29, 1)])
def test_a_missing_event_is_not_recorded_within_30_s_of_the_write(age: int, waited: int) -> None:
    """The decider may still be recording it for as long as the Broker waits for its answer (PT30S)."""
    plan = restate(failed_at(WRITTEN), FAILED, None, WRITTEN + timedelta(seconds=age), "restart", CAUSE, None)
    assert plan.reply is None and len(plan.effects) == 1
    (wait,) = plan.effects
    assert isinstance(wait, Wait) and wait.retry_after == waited
    assert f"was written {age} s ago" in wait.reason


@pytest.mark.parametrize("age", [30, 31, 3600])
def test_a_missing_event_is_recorded_30_s_after_the_write_with_its_cause(age: int) -> None:
    plan = restate(failed_at(WRITTEN), FAILED, None, WRITTEN + timedelta(seconds=age), "restart", CAUSE, None)
    assert plan.reply is not None and plan.reason == "Job ml/llm: Failed/WorkloadFailed delivered again"
    (event,) = plan.effects
    assert isinstance(event, KubeEvent) and event.body["reason"] == "WorkloadFailed"
    assert event.body["metadata"]["annotations"] == {"crefn.dev/cause": "e1"}


@pytest.mark.parametrize(("annotations", "replied"), [
    ({"crefn.dev/cause": "e1"}, True),
    ({"crefn.dev/cause": "e0"}, False),
    ({"crefn.dev/cause-of": "e1"}, False),
    ({}, False),
], ids=["this-event", "another-event", "another-annotation", "none"])
def test_a_recorded_event_names_its_cause_in_crefn_dev_cause(annotations: dict[str, str], replied: bool) -> None:
    """The Event found: recorded for this event (its id in `crefn.dev/cause`), only the reply is sent again;
    recorded for another (or naming none), nothing."""
    announced = {"metadata": {"name": "llm.0123456789abcdef", "annotations": annotations}}
    plan = restate(failed_at(WRITTEN), FAILED, announced, WRITTEN + timedelta(seconds=5), "restart", CAUSE, None)
    assert plan.effects == ()
    assert (plan.reply is not None) is replied
    if not replied:
        assert plan.reason == "Job ml/llm: its Failed/WorkloadFailed was announced by another event"


def test_a_failed_verdict_restated_is_a_warning_whose_previous_condition_is_not_known() -> None:
    """The Event a verdict's write records is a Warning for `Failed`; the reply is read off the stored Job, which
    shows only the verdict: its `previous` is null, never the verdict itself."""
    plan = restate(failed_at(WRITTEN), FAILED, None, WRITTEN + timedelta(seconds=30), "restart", CAUSE, None)
    (event,) = plan.effects
    assert isinstance(event, KubeEvent) and (event.body["type"], event.body["note"]) == ("Warning", "exit 137")
    assert plan.reply is not None
    data = plan.reply.data.model_dump(by_alias=True)
    assert data["previous"] is None
    assert data["new"] == {"type": "Failed", "reason": "WorkloadFailed", "message": "exit 137"}
