"""`functions.resync.decide.decide` as a truth table: what one tick sends for one Job, every event a
`Send` (no API server)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from functions.domain.jobs import JobState, parse_job
from functions.resync.decide import Observed, decide, is_sweep, label_writes
from functions.runtime.effects import Create, Label, Send, WriteStatus
from functions.runtime.settings import Settings
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


def deleting(state: JobState, finalizers: list[str]) -> JobState:
    return parse_job({**state.raw, "metadata": {**state.raw["metadata"], "deletionTimestamp": EARLIER,
                                                "resourceVersion": "9", "finalizers": finalizers}}, "nvcre.nvidia.com")


@pytest.mark.parametrize(("case", "expected"), [
    (observed(tracked(), COMPLETE), ["workload.phase"]),
    (observed(tracked(), None), ["workload.phase"]),
    (observed(tracked(annotations={"crefn.dev/timeout-per-job": "1h"})), ["job.deadline"]),
    (observed(tracked(spec=MONITOR), COMPLETE), ["job.check", "workload.phase"]),
    (observed(tracked(SUCCEEDED, spec={"thresholds": {"goodputRatio": "value > 0.9"}})), ["job.check"]),
    (observed(tracked(spec=MONITOR), COMPLETE, listed=tracked()), ["workload.phase"]),
    (observed(job(), None), ["create", "write", "KubeEvent", "workload.created"]),
    (observed(tracked(SUCCEEDED)), ["Label"]),
    (observed(deleting(job(), ["example.com/keep"]), None), []),
    (observed(deleting(tracked(), ["nvcre.nvidia.com/finalizer"]), None), ["Finalizers"]),
], ids=["drift-phase", "trainjob-gone", "past-its-bound", "check-then-drift", "awaiting-validation",
        "checks-are-the-listed-jobs", "launch", "terminal-in-step", "being-deleted-launches-nothing",
        "cres-deletion-finished"])
def test_what_a_tick_sends_for_a_job(case: Observed, expected: list[str]) -> None:
    assert sent(case) == expected


def test_a_launch_sends_its_created_event_with_the_created_object() -> None:
    plan = decide(observed(job(), None), Settings(), NOW)
    last = plan.effects[-1]
    assert isinstance(last, Send) and last.created_ref == "workload"
    assert plan == decide(observed(job(), None), Settings(), NOW)  # plain, comparable data


def test_a_launch_names_the_replicated_jobs_of_the_runtime_read() -> None:
    """The tick launches as the event path does: the training runtime's replicatedJobs, read for the launch,
    are those the TrainJob's runtime patch labels."""
    plan = decide(Observed(job(), job(), None, ("launcher", "trainer")), Settings(), NOW)
    (create,) = [e for e in plan.effects if isinstance(e, Create)]
    (patch,) = create.body["spec"]["runtimePatches"]
    assert [r["name"] for r in patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]] == [
        "launcher", "trainer"]


FINISHED = {"crefn.dev/finished": "true"}
OWNED = {"ownerReferences": [{"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": "llm",
                              "uid": "job-uid", "controller": True}]}


def labelled(state: JobState, labels: dict[str, str]) -> JobState:
    raw = {**state.raw, "metadata": {**state.raw["metadata"], "resourceVersion": "7",
                                     "labels": {**state.raw["metadata"]["labels"], **labels}}}
    return parse_job(raw, "nvcre.nvidia.com")


def trainjob_of(status: dict[str, Any], labels: dict[str, str] | None = None, owned: bool = True) -> dict[str, Any]:
    meta = {**TRAINJOB["metadata"], **(OWNED if owned else {}),
            "labels": {**TRAINJOB["metadata"]["labels"], **(labels or {})}}
    return {**TRAINJOB, "metadata": meta, "status": status}


def label_of(state: JobState, trainjob: dict[str, Any] | None) -> list[tuple[str, str | None, str]]:
    """(kind, the finished label's new value, the lock) of each label write."""
    writes = label_writes(Observed(state, state, trainjob), Settings())
    assert all(isinstance(w, Label) for w in writes)
    return [(w.res.kind, w.labels["crefn.dev/finished"], w.resource_version) for w in writes if isinstance(w, Label)]


@pytest.mark.parametrize(("state", "trainjob", "expected"), [
    (tracked(SUCCEEDED), trainjob_of(COMPLETE["status"]), [("Job", "true", "7"), ("TrainJob", "true", "")]),
    (tracked([cond("Failed", "True", "WorkloadFailed")]), None, [("Job", "true", "7")]),
    (tracked(SUCCEEDED), trainjob_of(COMPLETE["status"], owned=False), [("Job", "true", "7")]),
    (labelled(tracked(SUCCEEDED), FINISHED), trainjob_of(COMPLETE["status"], FINISHED), []),
    (labelled(tracked(SUCCEEDED), FINISHED), trainjob_of(COMPLETE["status"]), [("TrainJob", "true", "")]),
    (tracked(), trainjob_of(TRAINJOB["status"]), []),
    (labelled(tracked(), FINISHED), trainjob_of(TRAINJOB["status"], FINISHED),
     [("Job", None, "7"), ("TrainJob", None, "")]),
    (tracked(SUCCEEDED, spec={"thresholds": {"goodputRatio": "value > 0.9"}}), trainjob_of(COMPLETE["status"]), []),
], ids=["succeeded", "failed-trainjob-gone", "another-jobs-trainjob", "labelled-already", "trainjob-unlabelled",
        "running", "running-again-unlabelled", "awaiting-validation-not-finished"])
def test_the_finished_label_follows_the_job(state: JobState, trainjob: dict[str, Any] | None,
                                            expected: list[tuple[str, str | None, str]]) -> None:
    state = labelled(state, {}) if state.job.metadata.resource_version != "7" else state
    assert label_of(state, trainjob) == expected


def test_an_orphaned_trainjob_is_not_labelled_finished() -> None:
    """A TrainJob of the current attempt that the terminal Job records nowhere (a launch a verdict beat) is an
    orphan the tick deletes: only the Job is labelled, not the TrainJob about to go."""
    state = labelled(job(SUCCEEDED), {})
    assert state.job.status.workload_ref is None
    assert label_of(state, trainjob_of(COMPLETE["status"])) == [("Job", "true", "7")]


def test_the_finished_label_is_written_on_the_jobs_own_trainjob_by_its_name() -> None:
    """The TrainJob's label write names the TrainJob as read (not the Job), unlocked; the Job's is locked."""
    state = labelled(tracked(SUCCEEDED), {})
    writes = label_writes(Observed(state, state, trainjob_of(COMPLETE["status"])), Settings())
    assert [(w.res.kind, w.namespace, w.name, dict(w.labels), w.resource_version) for w in writes
            if isinstance(w, Label)] == [("Job", "ns", "llm", {"crefn.dev/finished": "true"}, "7"),
                                         ("TrainJob", "ns", "llm-workload", {"crefn.dev/finished": "true"}, "")]


@pytest.mark.parametrize(("now", "sweep"), [
    (datetime(2026, 12, 2, 11, 0, 0, tzinfo=UTC), True),
    (datetime(2026, 12, 2, 11, 0, 59, tzinfo=UTC), True),
    (datetime(2026, 12, 2, 11, 1, 0, tzinfo=UTC), False),
    (datetime(2026, 12, 2, 11, 59, 59, tzinfo=UTC), False),
], ids=["on-the-hour", "within-its-minute", "a-minute-on", "the-minute-before"])
def test_the_sweep_is_the_tick_of_each_hours_first_minute(now: datetime, sweep: bool) -> None:
    assert is_sweep(now) is sweep
