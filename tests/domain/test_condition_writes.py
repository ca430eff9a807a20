"""The exclusive-condition write and node attribution (`functions.domain.condition_writes`)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from functions.domain.condition_writes import condition_write, failed_nodes, group_nodes, independent_write
from functions.domain.conditions import condition
from functions.domain.jobs import JobState, parse_job
from functions.runtime.effects import KubeEvent, WriteStatus
from functions.runtime.resources import cre_jobs

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
GROUP = "nvcre.nvidia.com"


def job(annotations: dict[str, str] | None = None, nodes: list[dict[str, str]] | None = None,
        running: bool = False) -> JobState:
    status: dict[str, Any] = {"failedNodes": nodes or []}
    if running:
        status["conditions"] = [
            {"type": "InProgress", "status": "True", "reason": "WorkloadRunning", "message": "m",
             "observedGeneration": 1, "lastTransitionTime": "2026-11-30T10:00:00Z"},
            {"type": "Succeeded", "status": "False", "reason": "NotApplicable", "message": "",
             "observedGeneration": 1, "lastTransitionTime": "2026-11-30T10:00:00Z"},
            {"type": "Failed", "status": "False", "reason": "NotApplicable", "message": "",
             "observedGeneration": 1, "lastTransitionTime": "2026-11-30T10:00:00Z"}]
    return parse_job({"apiVersion": f"{GROUP}/v1alpha1", "kind": "Job",
                      "metadata": {"name": "llm", "namespace": "ml", "uid": "u", "generation": 1,
                                   "resourceVersion": "42", "annotations": annotations or {}},
                      "status": status}, GROUP)


@pytest.mark.parametrize(("value", "expected"), [
    ("gpu-2,gpu-1", ("gpu-1", "gpu-2")), (" gpu-1 , gpu-1,, gpu-3 ", ("gpu-1", "gpu-3")), ("", ()),
], ids=["sorted", "trimmed-and-deduplicated", "empty"])
def test_group_nodes_come_from_the_jobs_annotation(value: str, expected: tuple[str, ...]) -> None:
    assert group_nodes(job({f"{GROUP}/group-nodes": value}), GROUP) == expected
    assert group_nodes(job({f"{GROUP}/group-nodes": value}), "cre.nvidia.com") == ()


def test_first_attribution_wins() -> None:
    annotated = {f"{GROUP}/group-nodes": "gpu-2,gpu-1"}
    assert failed_nodes(job(annotated), GROUP, "boom") == {"failedNodes": [
        {"name": "gpu-1", "reason": "WorkloadFailed", "message": "boom"},
        {"name": "gpu-2", "reason": "WorkloadFailed", "message": "boom"}]}
    earlier = [{"name": "gpu-9", "reason": "HardwareFailureDetected", "message": "xid"}]
    assert failed_nodes(job(annotated, nodes=earlier), GROUP, "boom") == {}
    assert failed_nodes(job(), GROUP, "boom") == {}


def test_condition_write_is_the_write_then_the_event_of_a_flip() -> None:
    write = condition_write(job(running=True), condition("Failed", "WorkloadFailed", "boom"), NOW, GROUP, "restart",
                            {"failedNodes": []})
    assert write is not None
    status_write, event = write.effects
    assert isinstance(status_write, WriteStatus) and status_write.resource_version == "42"
    assert isinstance(event, KubeEvent) and event.body["reason"] == "WorkloadFailed"
    assert status_write.status == write.status and "failedNodes" in write.status


def test_the_event_of_a_flip_names_its_cause_only_when_given_one() -> None:
    """`crefn.dev/cause` carries the id of the deciding event; a write made without one (a launch's
    `InProgress`) records an Event with no annotations at all."""
    new = condition("Failed", "WorkloadFailed", "boom")
    caused = condition_write(job(running=True), new, NOW, GROUP, "restart", cause="e1")
    uncaused = condition_write(job(running=True), new, NOW, GROUP, "restart")
    assert caused is not None and uncaused is not None
    (_, with_cause), (_, without) = caused.effects, uncaused.effects
    assert isinstance(with_cause, KubeEvent) and isinstance(without, KubeEvent)
    assert with_cause.body["metadata"]["annotations"] == {"crefn.dev/cause": "e1"}
    assert "annotations" not in without.body["metadata"]


def test_condition_write_without_a_flip_records_no_event_and_nothing_is_none() -> None:
    state = job(running=True)
    pending = condition_write(state, condition("InProgress", "WorkloadPending", "p"), NOW, GROUP, "status")
    assert pending is not None and [type(e) for e in pending.effects] == [WriteStatus]
    assert condition_write(state, condition("InProgress", "WorkloadRunning", "m"), NOW, GROUP, "status") is None
    extra_only = condition_write(state, condition("InProgress", "WorkloadRunning", "m"), NOW, GROUP, "status",
                                 {"workloadStartTime": "2026-11-30T12:00:00Z"})
    assert extra_only is not None and extra_only.status == {"workloadStartTime": "2026-11-30T12:00:00Z"}


def with_condition(status: str | None) -> JobState:
    """A Job whose `HardwareFailed` is `status` (None: it has none yet)."""
    state = job(running=True)
    if status is None:
        return state
    extra = {"type": "HardwareFailed", "status": status, "reason": "XidError", "message": "xid 79",
             "observedGeneration": 1, "lastTransitionTime": "2026-11-30T10:00:00Z"}
    return parse_job({**state.raw, "status": {**state.raw["status"],
                                              "conditions": [*state.conditions, extra]}}, GROUP)


@pytest.mark.parametrize(("before", "status", "normal_event", "event"), [
    (None, True, False, ("XidError", "Warning")),
    ("False", True, False, ("XidError", "Warning")),
    (None, False, True, ("XidError", "Normal")),
    (None, False, False, None),
    ("True", False, True, None),
], ids=["first-true", "flip-to-true", "first-false-normal", "first-false-quiet", "flip-to-false"])
def test_an_independent_condition_is_written_with_the_event_of_its_flip(
        before: str | None, status: bool, normal_event: bool, event: tuple[str, str] | None) -> None:
    """`HardwareFailed` set on the read resourceVersion, the exclusive set kept; a Warning on the flip to
    True, a Normal one only on a first False write that asks for it (CRE's `ThresholdsMet`)."""
    state = with_condition(before)
    message = "xid 79" if status else "healthy"
    write = independent_write(state, "HardwareFailed", status, "XidError", message, NOW, GROUP, "nodehealth",
                              {"failedNodes": []}, normal_event=normal_event)
    assert write is not None
    (mine,) = [c for c in write.status["conditions"] if c["type"] == "HardwareFailed"]
    assert (mine["status"], mine["reason"], mine["message"]) == ("True" if status else "False", "XidError", message)
    assert [c for c in write.status["conditions"] if c["type"] != "HardwareFailed"] == state.conditions[:3]
    assert write.status["failedNodes"] == []
    commit, *events = write.effects
    assert isinstance(commit, WriteStatus)
    assert (commit.res, commit.name, commit.resource_version, commit.status) == (
        cre_jobs(GROUP), "llm", "42", write.status)
    recorded = [(e.body["reason"], e.body["type"]) for e in events if isinstance(e, KubeEvent)]
    assert recorded == ([event] if event else [])
    for e in events:
        assert isinstance(e, KubeEvent)
        assert (e.body["note"], e.body["reportingInstance"]) == (message, "crefn-nodehealth")
        assert e.body["metadata"]["name"].startswith("llm.")


def test_the_event_of_an_independent_flip_names_its_cause() -> None:
    """The Warning of a flip to True carries the id of the deciding event, as a verdict's Event does."""
    write = independent_write(with_condition(None), "HardwareFailed", True, "XidError", "xid 79", NOW, GROUP,
                              "nodehealth", cause="e7")
    assert write is not None
    _, event = write.effects
    assert isinstance(event, KubeEvent) and event.body["metadata"]["annotations"] == {"crefn.dev/cause": "e7"}


def test_an_independent_condition_that_says_so_already_is_not_written() -> None:
    state = with_condition("True")
    assert independent_write(state, "HardwareFailed", True, "XidError", "xid 79", NOW, GROUP, "nodehealth") is None
    write = independent_write(state, "HardwareFailed", True, "XidError", "xid 79", NOW, GROUP, "nodehealth",
                              {"failedNodes": []})
    assert write is not None and write.status == {"failedNodes": []} and len(write.effects) == 1


def test_each_reason_of_an_independent_condition_is_an_event_of_its_own() -> None:
    state = with_condition(None)
    names = set()
    for reason in ("XidError", "ThresholdViolation"):
        write = independent_write(state, "HardwareFailed", True, reason, "m", NOW, GROUP, "nodehealth")
        assert write is not None and isinstance(write.effects[1], KubeEvent)
        names.add(write.effects[1].body["metadata"]["name"])
    assert len(names) == 2


def test_a_flip_is_an_event_of_its_own_per_attempt_and_condition() -> None:
    """The same reason in another attempt, or on the other independent condition, is another Event (a name
    shared with an earlier one would be refused as taken, and the Event lost)."""
    names = set()
    for restarts in (0, 1):
        for cond_type in ("HardwareFailed", "ValidationFailed"):
            state = parse_job({**job(running=True).raw, "status": {**job(running=True).raw["status"],
                                                                   "restartCount": restarts}}, GROUP)
            write = independent_write(state, cond_type, True, "XidError", "m", NOW, GROUP, "nodehealth")
            assert write is not None and isinstance(write.effects[1], KubeEvent)
            names.add(write.effects[1].body["metadata"]["name"])
    assert len(names) == 4


def test_a_first_false_write_records_no_event_unless_asked() -> None:
    write = independent_write(with_condition(None), "ValidationFailed", False, "ThresholdsMet", "ok", NOW, GROUP,
                              "validate")
    assert write is not None and [type(e) for e in write.effects] == [WriteStatus]
