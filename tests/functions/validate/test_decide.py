"""`functions.validate.decide`, pure: a succeeded Job's thresholds become its `ValidationFailed` condition;
the decision as a table with `now`, group-node attribution kept from the first verdict, observe mode."""

from __future__ import annotations

from typing import Any

import pytest

from events.emitted import JobCheckData, JobRef
from events.envelope import Envelope
from events.objects import Pod
from events.types import EventType
from functions.domain.cel import outcomes as outcomes_of
from functions.domain.jobs import Gone, JobState, Skipped, parse_job
from functions.domain.thresholds import measured_values, to_evaluate
from functions.runtime.effects import KubeEvent, WriteStatus
from functions.runtime.settings import Settings
from functions.validate.decide import Found, Observed, decide
from tests.functions.validate.test_read import GROUP, VIOLATED
from tests.support.helpers import NOW, cond, job, pod

NODES = "gpu-b, gpu-a,gpu-b"


SUCCEEDED = cond("Succeeded", "True", "WorkloadCompleted", "done", ltt="2026-11-30T11:58:00Z")


def check_event(checks: list[str]) -> Envelope:
    data = JobCheckData(job=JobRef(name="llm", namespace="ns"), attempt=0, checks=checks)
    return Envelope(id="1", type=EventType.JOB_CHECK, source="/crefn/resync", data=data.model_dump(by_alias=True))


def observed(state: JobState | None, bandwidth: list[dict[str, Any]] | None = None, skip: str = "",
             pods: tuple[Pod, ...] | None = None) -> Observed:
    """What `read` gives, the thresholds evaluated in this process (`functions.runtime.celbudget` runs the
    same code)."""
    measured = measured_values("llm", "job-uid", (), bandwidth or (), "nvcre.nvidia.com")
    outcomes = {key: next(outcomes_of("value", expression, [value]))
                for key, expression, value in to_evaluate(state.job.spec.thresholds if state else {}, measured)}
    cause, ref = check_event(["validation"]), JobRef(name="llm", namespace="ns")
    if skip:
        return Skipped(skip)
    return Found(cause, ref, state, (), tuple(bandwidth or ()), outcomes, pods) if state else Gone(ref)


def awaiting(thresholds: dict[str, str] | None = None, conditions: list[dict[str, Any]] | None = None,
             nodes: str = NODES, failed_nodes: list[dict[str, str]] | None = None,
             managed: bool = True) -> JobState:
    state = job(conditions if conditions is not None else [SUCCEEDED],
                annotations={f"{GROUP}/group-nodes": nodes} if nodes else {},
                spec={"thresholds": {"busBandwidthGBps": "value >= 400"} if thresholds is None else thresholds},
                status={"failedNodes": failed_nodes or []})
    if managed:
        return state
    return parse_job({**state.raw, "metadata": {**state.raw["metadata"], "labels": {}}}, GROUP)


def bandwidth(bus: str) -> dict[str, Any]:
    return {"spec": {"jobRef": {"kind": "Job", "name": "llm"}},
            "status": {"conditions": [{"type": "Complete", "status": "True", "reason": "JobSucceeded"}],
                       "results": [{"sizeBytes": 1, "busBW": bus, "algBW": "1", "samples": 1}]}}


def test_a_violation_writes_validation_failed_attributes_the_group_nodes_and_warns() -> None:
    plan = decide(observed(awaiting(), [bandwidth("350")]), Settings(), NOW)
    write, event = plan.effects
    assert isinstance(write, WriteStatus) and isinstance(event, KubeEvent)
    assert write.resource_version == "" and write.res.plural == "jobs"
    assert write.status["failedNodes"] == [{"name": n, "reason": "ThresholdViolation", "message": VIOLATED}
                                           for n in ("gpu-a", "gpu-b")]
    conditions = {c["type"]: c for c in write.status["conditions"]}
    assert conditions["Succeeded"] == SUCCEEDED  # the Job stays Succeeded
    fields = ("status", "reason", "message", "lastTransitionTime")
    assert {k: conditions["ValidationFailed"][k] for k in fields} == {
        "status": "True", "reason": "ThresholdViolated", "message": VIOLATED,
        "lastTransitionTime": "2026-11-30T12:00:00Z"}
    assert (event.body["type"], event.body["reason"], event.body["note"]) == ("Warning", "ThresholdViolated", VIOLATED)
    assert plan.reply is not None and plan.reply.type == "dev.crefn.job.validation"
    assert plan.reply.data.model_dump(mode="json", by_alias=True) == {
        "job": {"name": "llm", "namespace": "ns"}, "failed": True, "reason": "ThresholdViolated", "message": VIOLATED,
        "failedNodes": [{"name": n, "reason": "ThresholdViolation", "message": VIOLATED} for n in ("gpu-a", "gpu-b")]}


@pytest.mark.parametrize(("bus", "reason"), [
    ("350", "Job ns/llm: ValidationFailed=True/ThresholdViolated"),
    ("450", "Job ns/llm: ValidationFailed=False/ThresholdsMet"),
], ids=["violated", "met"])
def test_the_answer_says_the_verdict_written(bus: str, reason: str) -> None:
    """The reason logged with the answer names the Job, the condition's status and its reason."""
    assert decide(observed(awaiting(), [bandwidth(bus)]), Settings(), NOW).reason == reason


def test_an_earlier_attribution_is_kept() -> None:
    earlier = [{"name": "gpu-z", "reason": "HardwareFailureDetected", "message": "node gpu-z failed"}]
    plan = decide(observed(awaiting(failed_nodes=earlier), [bandwidth("350")]), Settings(), NOW)
    write = plan.effects[0]
    assert isinstance(write, WriteStatus) and "failedNodes" not in write.status
    assert plan.reply is not None and plan.reply.data.model_dump(by_alias=True)["failedNodes"] == earlier


@pytest.mark.parametrize(("nodes", "pods", "expected"), [
    ("", (pod("p0", "gpu-9"), pod("p1", "gpu-3"), pod("p2", "gpu-9"), pod("p3")), ["gpu-3", "gpu-9"]),
    (" , ", (pod("p0", "gpu-4", phase="Succeeded"),), ["gpu-4"]),
    ("", (pod("p3"),), None),
    ("", (), None),
], ids=["no-annotation-placed-pods", "empty-annotation-placed-pod", "no-pod-placed", "no-pods"])
def test_without_group_nodes_the_nodes_the_pods_were_bound_to(nodes: str, pods: tuple[Pod, ...],
                                                               expected: list[str] | None) -> None:
    """CRE's `setJobValidationStatus` fills an empty failedNodes from `groupNodeNames`: without the annotation,
    every node the Job's pods were bound to (any phase, de-duplicated, sorted)."""
    write = decide(observed(awaiting(nodes=nodes), [bandwidth("350")], pods=pods), Settings(), NOW).effects[0]
    assert isinstance(write, WriteStatus)
    assert write.status.get("failedNodes") == (None if expected is None else [
        {"name": n, "reason": "ThresholdViolation", "message": VIOLATED} for n in expected])


def test_a_violation_whose_pods_were_not_read_waits_for_the_next_check() -> None:
    """The read saw the measurement timeout an instant before it ran out: decided on the next check, with
    the pods read."""
    plan = decide(observed(awaiting(nodes=""), [bandwidth("350")]), Settings(), NOW)
    assert plan.effects == () and plan.reply is None
    assert plan.reason == ("Job ns/llm: ThresholdViolated found without its pods read; decided on the next check")


def test_thresholds_met_is_false_with_a_normal_event_and_no_nodes() -> None:
    plan = decide(observed(awaiting(), [bandwidth("450")]), Settings(), NOW)
    write, event = plan.effects
    assert isinstance(write, WriteStatus) and isinstance(event, KubeEvent)
    assert "failedNodes" not in write.status
    validation = next(c for c in write.status["conditions"] if c["type"] == "ValidationFailed")
    assert (validation["status"], validation["reason"], validation["message"]) == (
        "False", "ThresholdsMet", "All performance thresholds satisfied")
    assert (event.body["type"], event.body["reason"]) == ("Normal", "ThresholdsMet")
    assert plan.reply is not None and plan.reply.data.model_dump(by_alias=True)["failed"] is False


@pytest.mark.parametrize(("state", "skip", "reason"), [
    (None, "", "Job ns/llm is gone"),
    (awaiting(managed=False), "", "Job ns/llm is not managed"),
    (awaiting(thresholds={}), "", "Job ns/llm is not awaiting validation (no thresholds)"),
    (awaiting(conditions=[cond("InProgress", "True", "WorkloadRunning")]), "", "Job ns/llm is not awaiting validation"),
    (awaiting(conditions=[SUCCEEDED, cond("Failed", "True", "JobTimedOut")]), "",
     "Job ns/llm is not awaiting validation"),
    (awaiting(conditions=[SUCCEEDED, cond("ValidationFailed", "False", "ThresholdsMet")]), "",
     "Job ns/llm is not awaiting validation"),
    (awaiting(thresholds={"goodputRatio": "value > 0.9"}), "",
     "Job ns/llm: waiting for measurement data for keys: [goodputRatio] (3m0s of 5m0s left)"),
    (awaiting(), "not a validation check", "not a validation check"),
], ids=["gone", "not-managed", "no-thresholds", "not-succeeded", "dual-true-reads-failed", "already-validated",
        "waiting", "skipped"])
def test_nothing_to_write(state: JobState | None, skip: str, reason: str) -> None:
    plan = decide(observed(state, skip=skip), Settings(), NOW)
    assert (plan.effects, plan.reply, plan.reason) == ((), None, reason)


def test_observe_mode_still_answers() -> None:
    plan = decide(observed(awaiting(), [bandwidth("350")]), Settings(mode="observe"), NOW)
    assert plan.reply is not None  # apply skips the writes in observe mode; the verdict is still published


@pytest.mark.parametrize(("status", "reason", "message", "event_type"), [
    ("True", "ThresholdViolated", VIOLATED, "Warning"),
    ("False", "ThresholdsMet", "All performance thresholds satisfied", "Normal"),
], ids=["violated", "met"])
def test_a_verdict_delivered_again_is_announced_as_the_job_stores_it(status: str, reason: str, message: str,
                                                                     event_type: str) -> None:
    """The check that wrote `ValidationFailed` an hour ago, delivered again with its Event missing: the Event
    and `dev.crefn.job.validation` again, read off the stored condition (its status, reason and message) and
    the Job's failedNodes; nothing written."""
    from functions.domain.redelivery import Announced

    nodes = [{"name": "gpu-a", "reason": "ThresholdViolation", "message": message}] if status == "True" else []
    state = awaiting(conditions=[SUCCEEDED, cond("ValidationFailed", status, reason, message,
                                                 ltt="2026-11-30T11:00:00Z")], failed_nodes=nodes)
    found = Found(check_event(["validation"]), JobRef(name="llm", namespace="ns"), state, announced=Announced(None))
    plan = decide(found, Settings(), NOW)
    (event,) = plan.effects
    assert isinstance(event, KubeEvent)
    assert (event.body["type"], event.body["reason"], event.body["note"]) == (event_type, reason, message)
    assert plan.reply is not None and plan.reply.data.model_dump(mode="json", by_alias=True) == {
        "job": {"name": "llm", "namespace": "ns"}, "failed": status == "True", "reason": reason, "message": message,
        "failedNodes": nodes}
    assert plan.reason == f"Job ns/llm: ValidationFailed={status}/{reason} delivered again"
