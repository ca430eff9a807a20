"""`functions.timeout.decide.decide` as a truth table: what the `timeout` function does with what it read
(no API server)."""

from __future__ import annotations

from typing import Any

import pytest

from events.emitted import JobDeadlineData
from events.types import EventType
from functions.domain.jobs import Gone
from functions.runtime.codec import to_envelope
from functions.runtime.plan import Delete, KubeEvent, WriteStatus
from functions.runtime.resources import TRAINJOBS
from functions.runtime.settings import Settings
from functions.timeout.decide import Found, Observed, decide
from tests.support.helpers import NOW, cond, job

RECORD = {"attributes": {"specversion": "1.0", "id": "d1", "source": "/crefn/resync", "type": "dev.crefn.job.deadline"},
          "data": {"job": {"name": "llm", "namespace": "ns"}, "attempt": 0, "elapsedSeconds": 7200.0,
                   "timeoutSeconds": 3600.0, "blocked": False}}
CAUSE = to_envelope(RECORD)
DATA = JobDeadlineData.model_validate(RECORD["data"])
RUNNING = [cond("InProgress", "True", "WorkloadRunning")]
CONTROLLED_BY_THE_JOB = [{"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": "llm", "uid": "job-uid",
                          "controller": True}]
TRAINJOB: dict[str, Any] = {"metadata": {"name": "llm-workload", "namespace": "ns", "uid": "tj-uid",
                                         "ownerReferences": CONTROLLED_BY_THE_JOB}}
GOING = {"metadata": {**TRAINJOB["metadata"], "deletionTimestamp": "2026-11-30T11:00:00Z"}}
ANOTHERS = {"metadata": {**TRAINJOB["metadata"], "ownerReferences": [{**CONTROLLED_BY_THE_JOB[0], "uid": "x"}]}}


def bounded(timeout: str = "1h", conditions: list[dict[str, Any]] | None = None) -> Found:
    """A Job created two hours before NOW, no workload yet (its clock runs since its creation)."""
    return Found(CAUSE, DATA, job(conditions or RUNNING, annotations={"crefn.dev/timeout-per-job": timeout}))


@pytest.mark.parametrize(("observed", "reason"), [
    (Gone(DATA.job), "Job ns/llm is gone"),
    (bounded(conditions=[cond("Failed", "True", "WorkloadFailed")]), "Job ns/llm is terminal"),
    (bounded("3h"), "Job ns/llm: within its time bound on a fresh read"),
], ids=["gone", "terminal", "within-its-bound"])
def test_nothing_to_time_out(observed: Observed, reason: str) -> None:
    plan = decide(observed, Settings(), NOW)
    assert (plan.effects, plan.reply, plan.reason) == ((), None, reason)


@pytest.mark.parametrize(("trainjob", "deleted"), [
    (None, False), (TRAINJOB, True), (GOING, False), (ANOTHERS, False),
], ids=["no-trainjob", "trainjob-deleted", "trainjob-terminating-left", "another-jobs-trainjob-left"])
def test_a_job_past_its_bound_fails_timed_out(trainjob: dict[str, Any] | None, deleted: bool) -> None:
    observed = bounded()
    plan = decide(Found(CAUSE, DATA, observed.state, trainjob), Settings(), NOW)
    write, *rest = plan.effects
    assert isinstance(write, WriteStatus)
    failed = next(c for c in write.status["conditions"] if c["type"] == "Failed")
    assert (failed["status"], failed["reason"], failed["message"]) == ("True", "JobTimedOut",
                                                                       "Job exceeded timeoutPerJob")
    assert [type(e) for e in rest] == [KubeEvent, *([Delete] if deleted else [])]
    if deleted:
        assert rest[-1] == Delete(TRAINJOBS, "ns", "llm-workload", "tj-uid")
    assert plan.reply is not None and plan.reply.type == EventType.JOB_CONDITION_CHANGED
    assert plan == decide(Found(CAUSE, DATA, observed.state, trainjob), Settings(), NOW)  # plain, comparable data
