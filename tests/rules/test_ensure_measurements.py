"""`functions.rules.ensure_measurements.decide` as a truth table: which measurements the `measurements`
function creates for what it read (no API server)."""

from __future__ import annotations

import pytest

from events.emitted import WorkloadCreatedData
from functions.codec import to_envelope
from functions.plan import Create
from functions.rules.ensure_measurements import Found, Observed, decide
from functions.rules.jobs import Gone, JobState
from functions.rules.kubeevents import RefusalWarning
from functions.settings import Settings
from tests.support.helpers import NOW, cond, job

RECORD = {"attributes": {"specversion": "1.0", "id": "c1", "source": "/crefn/launch",
                         "type": "dev.crefn.workload.created"},
          "data": {"job": {"name": "llm", "namespace": "ns"}, "adopted": False, "attempt": 0,
                   "workload": {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                "name": "llm-workload", "namespace": "ns", "attempt": 0}}}
CAUSE = to_envelope(RECORD)
DATA = WorkloadCreatedData.model_validate(RECORD["data"])
BOTH = {"goodputMeasurement": {"logProfileRef": "nemo"}, "bandwidthMeasurement": {"logProfileRef": "nccl"}}
RUNNING = [cond("InProgress", "True", "WorkloadRunning")]


def measured(workload_ref: bool = True, conditions: list[dict[str, object]] | None = None) -> JobState:
    return job(conditions or RUNNING, workload_ref=workload_ref, spec=BOTH)


@pytest.mark.parametrize(("observed", "settings", "reason"), [
    (Gone(DATA.job), Settings(), "Job ns/llm is gone"),
    (Found(CAUSE, DATA, measured(conditions=[cond("Failed", "True", "WorkloadFailed")])), Settings(),
     "Job ns/llm is terminal"),
    (Found(CAUSE, DATA, measured(workload_ref=False)), Settings(), "Job ns/llm has no workload recorded"),
    (Found(CAUSE, DATA, measured(), True, True), Settings(), "Job ns/llm: its measurements exist"),
    (Found(CAUSE, DATA, measured()), Settings(mode="observe"),
     "observe mode: would create GoodputMeasurement llm-goodput, BandwidthMeasurement llm-bandwidth"),
], ids=["gone", "terminal", "no-workload", "both-exist", "observe-mode"])
def test_nothing_to_create(observed: Observed, settings: Settings, reason: str) -> None:
    plan = decide(observed, settings, NOW)
    assert (plan.effects, plan.reply, plan.reason) == ((), None, reason)


@pytest.mark.parametrize(("goodput", "bandwidth", "kinds"), [
    (False, False, ["GoodputMeasurement", "BandwidthMeasurement"]),
    (True, False, ["BandwidthMeasurement"]),
    (False, True, ["GoodputMeasurement"]),
], ids=["both-missing", "bandwidth-missing", "goodput-missing"])
def test_the_missing_ones_are_created_in_order(goodput: bool, bandwidth: bool, kinds: list[str]) -> None:
    plan = decide(Found(CAUSE, DATA, measured(), goodput, bandwidth), Settings(), NOW)
    assert all(isinstance(e, Create) for e in plan.effects)
    assert [e.body["kind"] for e in plan.effects if isinstance(e, Create)] == kinds
    first = plan.effects[0]
    assert isinstance(first, Create) and isinstance(first.refused, RefusalWarning)
    assert first.refused.then == plan.effects[1:]  # a refused create is followed by the ones after it
