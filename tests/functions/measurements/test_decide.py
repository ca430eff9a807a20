"""`functions.measurements.decide.decide` as a truth table: which measurements the `measurements`
function creates, and which BandwidthMeasurement it replaces, for what it read (no API server). CRE:
`job_controller.go` `reconcileWorkload` (ensured on every reconcile with a `workloadRef`; the
BandwidthMeasurement also while a Succeeded Job awaits thresholds), `ensureBandwidthMeasurement` and
`measuresJob` (the `nvcre.nvidia.com/job-uid` annotation; one without it is taken at its name)."""

from __future__ import annotations

from typing import Any

import pytest

from events.emitted import JobCheckData
from functions.domain.jobs import Gone, JobState, Skipped, parse_job
from functions.domain.kubeevents import RefusalWarning
from functions.measurements.decide import Found, Observed, decide
from functions.runtime.codec import to_envelope
from functions.runtime.effects import Create, Delete
from functions.runtime.settings import Settings
from tests.support.helpers import NOW, cond, job

RECORD = {"attributes": {"specversion": "1.0", "id": "c1", "source": "/crefn/resync", "type": "dev.crefn.job.check"},
          "data": {"job": {"name": "llm", "namespace": "ns"}, "attempt": 0, "checks": ["measurements"]}}
CAUSE = to_envelope(RECORD)
REF = JobCheckData.model_validate(RECORD["data"]).job
BOTH = {"goodputMeasurement": {"logProfileRef": "nemo"}, "bandwidthMeasurement": {"logProfileRef": "nccl"}}
THRESHOLDS = {"thresholds": {"busBandwidthGBps": "value >= 400"}}
RUNNING = [cond("InProgress", "True", "WorkloadRunning")]
SUCCEEDED = [cond("Succeeded", "True", "WorkloadCompleted")]


def measured(workload_ref: bool = True, conditions: list[dict[str, object]] | None = None,
             spec: dict[str, Any] | None = None) -> JobState:
    return job(conditions or RUNNING, workload_ref=workload_ref, spec=spec or BOTH)


def bandwidth(uid: str | None) -> dict[str, Any]:
    """The object named `llm-bandwidth`, made for the Job of that uid (no annotation when None)."""
    annotations = {} if uid is None else {"nvcre.nvidia.com/job-uid": uid}
    return {"metadata": {"name": "llm-bandwidth", "namespace": "ns", "uid": "bm-uid", "annotations": annotations},
            "spec": {"jobRef": {"kind": "Job", "name": "llm"}}}


@pytest.mark.parametrize(("observed", "settings", "reason"), [
    (Skipped("not asked"), Settings(), "not asked"),
    (Gone(REF), Settings(), "Job ns/llm is gone"),
    (Found(CAUSE, REF, measured(conditions=[cond("Failed", "True", "WorkloadFailed")])), Settings(),
     "Job ns/llm is terminal (its BandwidthMeasurement is ensured only while it awaits validation)"),
    (Found(CAUSE, REF, measured(conditions=SUCCEEDED)), Settings(),
     "Job ns/llm is terminal (its BandwidthMeasurement is ensured only while it awaits validation)"),
    (Found(CAUSE, REF, measured(conditions=SUCCEEDED, spec={"goodputMeasurement": {"logProfileRef": "nemo"}})),
     Settings(), "Job ns/llm is terminal"),
    (Found(CAUSE, REF, measured(workload_ref=False)), Settings(), "Job ns/llm has no workload recorded"),
    (Found(CAUSE, REF, measured(spec={"stallMultiplier": 3})), Settings(), "Job ns/llm asks for no measurement"),
    (Found(CAUSE, REF, measured(), True, bandwidth("job-uid")), Settings(), "Job ns/llm: its measurements exist"),
    (Found(CAUSE, REF, measured(), True, bandwidth(None)), Settings(), "Job ns/llm: its measurements exist"),
    (Found(CAUSE, REF, measured(conditions=SUCCEEDED, spec={**BOTH, **THRESHOLDS}), False, bandwidth("job-uid")),
     Settings(), "Job ns/llm: its measurements exist"),
    (Found(CAUSE, REF, measured()), Settings(mode="observe"),
     "observe mode: would create GoodputMeasurement llm-goodput, BandwidthMeasurement llm-bandwidth"),
    (Found(CAUSE, REF, measured(), True, bandwidth("earlier-uid")), Settings(mode="observe"),
     "observe mode: would create BandwidthMeasurement llm-bandwidth (replacing the one of an earlier Job, "
     "uid earlier-uid)"),
], ids=["not-asked", "gone", "failed", "succeeded-without-thresholds",
        "terminal-without-bandwidth", "no-workload", "none-asked", "both-exist",
        "bandwidth-from-before-the-annotation-is-kept", "awaiting-validation-bandwidth-exists", "observe-mode",
        "observe-mode-replacement"])
def test_nothing_to_create(observed: Observed, settings: Settings, reason: str) -> None:
    plan = decide(observed, settings, NOW)
    assert (plan.effects, plan.reply, plan.reason) == ((), None, reason)


@pytest.mark.parametrize(("goodput", "bandwidth_exists", "kinds"), [
    (False, False, ["GoodputMeasurement", "BandwidthMeasurement"]),
    (True, False, ["BandwidthMeasurement"]),
    (False, True, ["GoodputMeasurement"]),
], ids=["both-missing", "bandwidth-missing", "goodput-missing"])
def test_the_missing_ones_are_created_in_order(goodput: bool, bandwidth_exists: bool, kinds: list[str]) -> None:
    plan = decide(Found(CAUSE, REF, measured(), goodput, bandwidth("job-uid") if bandwidth_exists else None),
                  Settings(), NOW)
    assert all(isinstance(e, Create) for e in plan.effects)
    assert [e.body["kind"] for e in plan.effects if isinstance(e, Create)] == kinds
    first = plan.effects[0]
    assert isinstance(first, Create) and isinstance(first.refused, RefusalWarning)
    assert first.refused.then == plan.effects[1:]  # a refused create is followed by the ones after it


def test_the_bandwidth_measurement_is_annotated_with_the_jobs_uid() -> None:
    plan = decide(Found(CAUSE, REF, measured(), True, None), Settings(), NOW)
    (create,) = plan.effects
    assert isinstance(create, Create)
    assert create.body["metadata"]["annotations"] == {"nvcre.nvidia.com/job-uid": "job-uid"}


def test_an_earlier_jobs_bandwidth_measurement_is_deleted_by_uid_then_created_again() -> None:
    plan = decide(Found(CAUSE, REF, measured(), False, bandwidth("earlier-uid")), Settings(), NOW)
    assert [type(e).__name__ for e in plan.effects] == ["Create", "Delete", "Create"]
    gm, delete, bm = plan.effects
    assert isinstance(bm, Create) and delete == Delete(bm.res, "ns", "llm-bandwidth", "bm-uid")
    assert isinstance(gm, Create) and isinstance(gm.refused, RefusalWarning)
    assert gm.refused.then == (delete, bm)  # a refused GoodputMeasurement keeps neither back
    assert plan.reason == ("Job ns/llm: created GoodputMeasurement llm-goodput, BandwidthMeasurement llm-bandwidth "
                           "(replacing the one of an earlier Job, uid earlier-uid)")


def test_a_succeeded_job_awaiting_thresholds_gets_only_its_bandwidth_measurement() -> None:
    """CRE's `reconcileWorkload` for a Succeeded Job awaiting thresholds: the BandwidthMeasurement ensured, and a
    refused create only logged (no `MeasurementCreationError` Warning then)."""
    plan = decide(Found(CAUSE, REF, measured(conditions=SUCCEEDED, spec={**BOTH, **THRESHOLDS})), Settings(), NOW)
    assert [e.body["kind"] for e in plan.effects if isinstance(e, Create)] == ["BandwidthMeasurement"]
    (create,) = plan.effects
    assert isinstance(create, Create) and create.refused is not None
    assert create.refused.follow("admission webhook denied the request") == ()
    running = decide(Found(CAUSE, REF, measured()), Settings(), NOW).effects[0]
    assert isinstance(running, Create) and running.refused is not None
    (warning, *_) = running.refused.follow("denied")
    assert (warning.body["type"], warning.body["reason"], warning.body["note"]) == (  # type: ignore[attr-defined]
        "Warning", "MeasurementCreationError",
        "Failed to ensure GoodputMeasurement: failed to create GoodputMeasurement: denied")


def test_a_job_that_is_not_managed_gets_none() -> None:
    raw = job(RUNNING, workload_ref=True, spec=BOTH).raw
    unmanaged = parse_job({**raw, "metadata": {**raw["metadata"], "labels": {}}}, "nvcre.nvidia.com")
    assert decide(Found(CAUSE, REF, unmanaged), Settings(), NOW).reason == "Job ns/llm is not managed"
