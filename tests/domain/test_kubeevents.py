"""Kubernetes Events on the Job (`functions.domain.kubeevents`): CRE's note cap, type flips only,
Warning for Failed, names derived from the transition."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from functions.domain.conditions import condition
from functions.domain.jobs import JobState, parse_job
from functions.domain.kubeevents import action_event, cap_note, run_event, transition_event

NOW = datetime(2026, 11, 30, 12, 0, 0, 123456, tzinfo=UTC)


def job(true_type: str | None = None, restart_count: int = 0) -> JobState:
    conditions: list[dict[str, Any]] = []
    if true_type:
        conditions = [{"type": true_type, "status": "True", "reason": "R", "message": "m"}]
    return parse_job({"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                      "metadata": {"name": "llm", "namespace": "ml", "uid": "job-uid"},
                      "status": {"conditions": conditions, "restartCount": restart_count}}, "nvcre.nvidia.com")


@pytest.mark.parametrize(("message", "expected"), [
    ("short", "short"),
    ("a" * 1024, "a" * 1024),
    ("a" * 1025, "a" * 1009 + "... [truncated]"),  # CRE's event_note.go: 1024 bytes with the 15-byte suffix
    ("é" * 600, "é" * 504 + "... [truncated]"),  # 1009 bytes would cut an "é" in two: 1008 + 15
], ids=["short", "exactly-1024-bytes", "one-byte-over", "two-byte-characters-cut-on-a-boundary"])
def test_note_is_capped_at_1024_bytes_utf8_safe(message: str, expected: str) -> None:
    note = cap_note(message)
    assert note == expected and len(note.encode()) <= 1024


@pytest.mark.parametrize(("before", "new_type", "recorded", "warning"), [
    (None, "InProgress", True, False), ("InProgress", "InProgress", False, False),
    ("InProgress", "Succeeded", True, False), ("InProgress", "Failed", True, True), (None, "Failed", True, True),
], ids=["first-inprogress", "same-type", "completed", "failed", "failed-at-once"])
def test_only_a_type_flip_records_an_event(before: str | None, new_type: str, recorded: bool, warning: bool) -> None:
    event = transition_event(job(before), condition(new_type, "WorkloadX", "what happened"), NOW, "status")  # type: ignore[arg-type]
    assert (event is not None) is recorded
    if event is not None:
        body = event.body
        assert (body["type"], body["reason"], body["action"], body["note"]) == (
            "Warning" if warning else "Normal", "WorkloadX", "WorkloadX", "what happened")
        assert body["regarding"] == {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": "llm",
                                     "namespace": "ml", "uid": "job-uid"}
        assert body["eventTime"] == "2026-11-30T12:00:00.123456Z" and body["reportingInstance"] == "crefn-status"


def test_event_names_follow_the_transition() -> None:
    new = condition("Failed", "WorkloadFailed", "m")
    first = transition_event(job("InProgress"), new, NOW, "restart")
    again = transition_event(job("InProgress"), new, NOW.replace(second=5), "status")
    other_attempt = transition_event(job("InProgress", restart_count=1), new, NOW, "restart")
    assert first and again and other_attempt
    assert first.body["metadata"]["name"] == again.body["metadata"]["name"]  # a redelivery: the same Event
    assert first.body["metadata"]["name"] != other_attempt.body["metadata"]["name"]
    assert first.body["metadata"]["name"].startswith("llm.")


def test_each_flip_of_an_attempt_is_an_event_of_its_own() -> None:
    """`WorkloadCreated` then `WorkloadFailed` in one attempt are two Events: the name of the second is
    never taken by the first."""
    created = transition_event(job(), condition("InProgress", "WorkloadCreated", "m"), NOW, "launch")
    failed = transition_event(job("InProgress"), condition("Failed", "WorkloadFailed", "m"), NOW, "restart")
    assert created and failed and created.body["metadata"]["name"] != failed.body["metadata"]["name"]


def test_the_event_as_recorded() -> None:
    """An events.k8s.io/v1 Event in the Job's namespace, `regarding` the Job, reported by the controller
    and the function's instance."""
    event = transition_event(job("InProgress"), condition("Failed", "WorkloadFailed", "exit 137"), NOW, "restart")
    assert event is not None and event.namespace == "ml"
    body = dict(event.body)
    assert body.pop("metadata") == {"name": event.body["metadata"]["name"], "namespace": "ml"}
    assert body == {"apiVersion": "events.k8s.io/v1", "kind": "Event", "eventTime": "2026-11-30T12:00:00.123456Z",
                    "reportingController": "crefn.dev/controller", "reportingInstance": "crefn-restart",
                    "action": "WorkloadFailed", "reason": "WorkloadFailed", "note": "exit 137", "type": "Warning",
                    "regarding": {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": "llm",
                                  "namespace": "ml", "uid": "job-uid"}}


def test_a_verdicts_event_names_the_event_that_decided_it() -> None:
    """Its id in the annotation `crefn.dev/cause`: what tells that event's redelivery from another's."""
    event = transition_event(job("InProgress"), condition("Failed", "WorkloadFailed", "exit 137"), NOW, "restart",
                             cause="phase-e1")
    assert event is not None
    assert event.body["metadata"] == {"name": event.body["metadata"]["name"], "namespace": "ml",
                                      "annotations": {"crefn.dev/cause": "phase-e1"}}


def test_action_events_are_warnings_named_by_their_message() -> None:
    a = action_event(job("InProgress"), "WorkloadCreationError", "Failed to create TrainJob/x: denied", NOW, "launch")
    b = action_event(job("InProgress"), "WorkloadCreationError", "Failed to create TrainJob/x: denied", NOW, "resync")
    c = action_event(job("InProgress"), "WorkloadCreationError", "Failed to create TrainJob/x: quota", NOW, "launch")
    assert a.body["type"] == "Warning" and a.body["metadata"]["name"] == b.body["metadata"]["name"]
    assert a.body["metadata"]["name"] != c.body["metadata"]["name"]
    assert (a.body["reason"], a.body["action"], a.body["reportingInstance"]) == (
        "WorkloadCreationError", "WorkloadCreationError", "crefn-launch")
    other_reason = action_event(job("InProgress"), "MeasurementCreationError", "Failed to create TrainJob/x: denied",
                                NOW, "launch")
    next_attempt = action_event(job("InProgress", restart_count=1), "WorkloadCreationError",
                                "Failed to create TrainJob/x: denied", NOW, "launch")
    assert len({a.body["metadata"]["name"], other_reason.body["metadata"]["name"],
                next_attempt.body["metadata"]["name"]}) == 3  # one Event per reason, attempt and message


def test_a_runs_event_regards_the_run() -> None:
    """CRE's WorkloadRun controller records its transitions on the run: the Event regards it by kind, name,
    namespace and uid; a Warning for Failed."""
    run = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "WorkloadRun",
           "metadata": {"name": "wr", "namespace": "ml", "uid": "run-uid"}}
    event = run_event(run, condition("Failed", "BuildFailed", "refused"), datetime(2026, 11, 30, tzinfo=UTC),
                      "workloadrun")
    assert event.body["regarding"] == {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "WorkloadRun",
                                       "name": "wr", "namespace": "ml", "uid": "run-uid"}
    assert (event.body["type"], event.body["reason"], event.body["note"]) == ("Warning", "BuildFailed", "refused")
