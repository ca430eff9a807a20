"""`functions.rules.resync.decide` as a truth table: what one tick sends for one Job, every event a
`Send` (no API server)."""

from __future__ import annotations

from typing import Any

import pytest

from functions.plan import Create, Send, WriteStatus
from functions.rules.jobs import JobState
from functions.rules.resync import Observed, decide
from functions.settings import Settings
from tests.support.helpers import EARLIER, NOW, cond, job

RUNNING = [cond("InProgress", "True", "WorkloadRunning", "Workload TrainJob/llm-workload is running")]
SUCCEEDED = [cond("Succeeded", "True", "WorkloadCompleted")]
MONITOR = {"nodeHealthMonitor": {"cel": {"expression": "node.spec.unschedulable"}}}
TRAINJOB: dict[str, Any] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
    "metadata": {"name": "llm-workload", "namespace": "ns", "uid": "tj-uid", "labels": {"crefn.dev/attempt": "0"}},
    "spec": {"runtimeRef": {"name": "t"}},
    "status": {"jobsStatus": [{"name": "node", "active": 1, "ready": 1}]}}
COMPLETE = {**TRAINJOB, "status": {"conditions": [{"type": "Complete", "status": "True", "reason": "JobsCompleted",
                                                   "message": "done", "lastTransitionTime": EARLIER}]}}


def tracked(conditions: list[dict[str, Any]] = RUNNING, spec: dict[str, Any] | None = None,
            annotations: dict[str, str] | None = None) -> JobState:
    return job(conditions, workload_ref=True, spec=spec, annotations=annotations,
               status={"workloadStartTime": EARLIER})


def sent(observed: Observed) -> list[str]:
    """The types of the events the plan sends, and `write`/`create` for its other effects, in order."""
    plan = decide(observed, Settings(), NOW)
    assert plan.reply is None  # a tick answers no event
    return [e.event.type.removeprefix("dev.crefn.") if isinstance(e, Send) else
            {WriteStatus: "write", Create: "create"}.get(type(e), type(e).__name__) for e in plan.effects]


def observed(state: JobState, trainjob: dict[str, Any] | None = TRAINJOB, listed: JobState | None = None) -> Observed:
    return Observed(listed or state, state, trainjob)


@pytest.mark.parametrize(("case", "expected"), [
    (observed(tracked(), COMPLETE), ["workload.phase"]),
    (observed(tracked(), None), ["workload.phase"]),
    (observed(tracked(annotations={"crefn.dev/timeout-per-job": "1h"})), ["job.deadline"]),
    (observed(tracked(spec=MONITOR), COMPLETE), ["job.check", "workload.phase"]),
    (observed(tracked(SUCCEEDED, spec={"thresholds": {"goodputRatio": "value > 0.9"}})), ["job.check"]),
    (observed(tracked(spec=MONITOR), COMPLETE, listed=tracked()), ["workload.phase"]),
    (observed(job(), None), ["create", "write", "RecordEvent", "workload.created"]),
    (observed(tracked(SUCCEEDED)), []),
], ids=["drift-phase", "trainjob-gone", "past-its-bound", "check-then-drift", "awaiting-validation",
        "checks-are-the-listed-jobs", "launch", "terminal-in-step"])
def test_what_a_tick_sends_for_a_job(case: Observed, expected: list[str]) -> None:
    assert sent(case) == expected


def test_a_launch_sends_its_created_event_with_the_created_object() -> None:
    plan = decide(observed(job(), None), Settings(), NOW)
    last = plan.effects[-1]
    assert isinstance(last, Send) and last.created_ref == "workload"
    assert plan == decide(observed(job(), None), Settings(), NOW)  # plain, comparable data
