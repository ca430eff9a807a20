"""`functions.timeout.decide.decide` as a truth table: what the `timeout` function does with what it read
(no API server)."""

from __future__ import annotations

from typing import Any

import pytest

from events.emitted import JobDeadlineData
from events.types import EventType
from functions.domain.jobs import Gone
from functions.domain.pods import Capture, LogSource
from functions.domain.redelivery import Announced
from functions.runtime.codec import to_envelope
from functions.runtime.effects import Delete, KubeEvent, WriteStatus
from functions.runtime.resources import TRAINJOBS
from functions.runtime.settings import Settings
from functions.timeout.decide import Found, Observed, decide
from tests.support.helpers import NOW, cond, job, pod

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


@pytest.mark.parametrize(("capture", "log"), [
    (Capture((pod(node="gpu-1", exits=[("node", -1, "")]),), LogSource("llm-workload-node-0-0", "gpu-1", "node", 0,
                                                                       "Timeout"), "step 1200"),
     {"podName": "llm-workload-node-0-0", "nodeName": "gpu-1", "exitCode": 0, "reason": "Timeout",
      "tail": "step 1200"}),
    (Capture((pod(phase="Pending"),), None), None),
    (None, None),
], ids=["a-pod-ran", "no-pod-ever-ran", "none-read"])
def test_the_timeout_records_the_log_of_the_pod_that_ran(capture: Capture | None, log: dict[str, Any] | None) -> None:
    """The failure log of a timeout is the trainer pod's (reason `Timeout`, exit code 0); with no pod that ever
    ran, none is written (a failure would record `NoTerminatedContainer` there)."""
    observed = bounded()
    plan = decide(Found(CAUSE, DATA, observed.state, TRAINJOB, capture), Settings(), NOW)
    write = plan.effects[0]
    assert isinstance(write, WriteStatus) and write.status.get("failureLog") == log


TIMED_OUT = [cond("Failed", "True", "JobTimedOut", "Job exceeded timeoutPerJob"),
             cond("InProgress", "False", "NotApplicable"), cond("Succeeded", "False", "NotApplicable")]


@pytest.mark.parametrize(("cause", "kinds", "replied"), [
    ("d1", [Delete], True), ("another-tick", [], False),
], ids=["its-own-event-recorded", "announced-by-another-event"])
def test_a_timeout_delivered_again_makes_good_only_what_its_event_left(cause: str, kinds: list[type],
                                                                       replied: bool) -> None:
    """The Job timed out two hours ago and its Event is recorded: with this event's id, the TrainJob delete and
    the reply again (not the Event); with another's, nothing."""
    announced = {"metadata": {"name": "llm.0123456789abcdef", "annotations": {"crefn.dev/cause": cause}}}
    state = job(TIMED_OUT, annotations={"crefn.dev/timeout-per-job": "1h"})
    plan = decide(Found(CAUSE, DATA, state, TRAINJOB, announced=Announced(announced)), Settings(), NOW)
    assert [type(e) for e in plan.effects] == kinds
    assert (plan.reply is not None) is replied
    if not replied:
        assert plan.reason == "Job ns/llm: its Failed/JobTimedOut was announced by another event"


@pytest.mark.parametrize(("blocked_since", "message"), [
    (None, "Job exceeded timeoutPerJob"),
    ("2026-11-30T10:30:00Z", "Job exceeded timeoutPerJob while its pods were unschedulable"),
], ids=["ran", "unschedulable"])
def test_a_timeout_delivered_again_announces_the_verdict_the_job_carries(blocked_since: str | None,
                                                                         message: str) -> None:
    """The verdict sent again is read off the Job: unschedulable when it keeps `schedulingBlockedSince`."""
    conditions = [cond("Failed", "True", "JobTimedOut", message), cond("InProgress", "False", "NotApplicable"),
                  cond("Succeeded", "False", "NotApplicable")]
    status = {"schedulingBlockedSince": blocked_since} if blocked_since else {}
    state = job(conditions, annotations={"crefn.dev/timeout-per-job": "1h"}, status=status)
    announced = {"metadata": {"name": "llm.0123456789abcdef", "annotations": {"crefn.dev/cause": "d1"}}}
    plan = decide(Found(CAUSE, DATA, state, None, announced=Announced(announced)), Settings(), NOW)
    assert plan.reply is not None and plan.reply.type == "dev.crefn.job.condition.changed"
    assert plan.reply.data_json()["new"] == {"type": "Failed", "reason": "JobTimedOut", "message": message}
