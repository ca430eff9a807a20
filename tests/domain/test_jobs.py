"""A Job as the functions read it (`parse_job`: what is refused, and how it says so) and the
`dev.crefn.job.condition.changed` event a status write sends (`condition_changed`: its data is the Job
as it is after the write)."""

from __future__ import annotations

from typing import Any

import pytest

from events.emitted import ConditionSummary, WorkloadRef
from events.envelope import Envelope
from functions.domain.jobs import JobState, condition_changed, parse_job, why_not_current
from functions.runtime.errors import PermanentError
from tests.support.helpers import cond, job

GROUP = "nvcre.nvidia.com"


def raw_job(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1alpha1", "kind": "Job", "metadata": {"name": "llm", "namespace": "ml"},
            "spec": {}, **fields}


@pytest.mark.parametrize(("raw", "message"), [
    ({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "llm"}},
     "expected nvcre.nvidia.com/v1alpha1 Job, got batch/v1/Job"),
    ({**raw_job(), "kind": "WorkloadRun"},
     "expected nvcre.nvidia.com/v1alpha1 Job, got nvcre.nvidia.com/v1alpha1/WorkloadRun"),
    ({"metadata": {"name": "llm"}}, "expected nvcre.nvidia.com/v1alpha1 Job, got /"),
    (raw_job(status={"restartCount": "many"}),
     "invalid Job: status.restartCount: Input should be a valid integer, unable to parse string as an integer"),
], ids=["another-group", "another-kind", "no-type-at-all", "invalid-status"])
def test_what_is_not_a_job_is_refused_saying_what_it_got(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(PermanentError) as refused:
        parse_job(raw, GROUP)
    assert str(refused.value) == message


OOM = {"podName": "llm-workload-node-0-0", "nodeName": "gpu-7", "exitCode": 137, "reason": "OOMKilled"}
NODES = [{"name": "gpu-7", "reason": "WorkloadFailed", "message": "exit 137"}]
FAILED = ConditionSummary(type="Failed", reason="WorkloadFailed", message="boom")
RUNNING = [cond("InProgress", "True", "WorkloadRunning"), cond("Succeeded", "False", "NotApplicable"),
           cond("Failed", "False", "NotApplicable")]
OTHER = WorkloadRef(api_version="trainer.kubeflow.org/v1alpha1", kind="TrainJob", name="llm-workload-0",
                    namespace="ns", attempt=0)


def sent(written: dict[str, Any], new: ConditionSummary = FAILED, workload: WorkloadRef | None = None,
         **job_fields: Any) -> dict[str, Any]:
    state = job(RUNNING, **job_fields)
    event = condition_changed(state, written, new, "status", None, workload)
    assert (event.type, event.extensions["jobcondition"]) == ("dev.crefn.job.condition.changed", new.type)
    return event.data_json()


def test_the_event_is_the_job_after_the_write() -> None:
    """What the write sets (restartCount, failedNodes, failureLog) wins over the Job as it was read."""
    data = sent({"restartCount": 2, "failedNodes": NODES, "failureLog": OOM}, restart_count=1, workload_ref=True,
                status={"failedNodes": [{"name": "gpu-1", "reason": "WorkloadFailed"}]})
    assert data["previous"] == {"type": "InProgress", "reason": "WorkloadRunning", "message": ""}
    assert data["new"] == {"type": "Failed", "reason": "WorkloadFailed", "message": "boom"}
    assert (data["restartCount"], data["failedNodes"], data["failure"]) == (2, NODES, OOM)
    assert data["workload"] == {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                "name": "llm-workload", "namespace": "ns", "attempt": 1, "uid": "",
                                "resourceVersion": ""}


def test_what_the_write_leaves_out_comes_from_the_job_as_read() -> None:
    data = sent({}, restart_count=1, status={"failedNodes": NODES, "failureLog": OOM})
    assert (data["restartCount"], data["failedNodes"], data["failure"], data["workload"]) == (1, NODES, OOM, None)


@pytest.mark.parametrize(("written", "job_status", "failure"), [
    ({"failureLog": OOM}, {}, OOM),
    ({}, {"failureLog": OOM}, OOM),
    ({}, {}, None),
], ids=["written", "read", "none"])
def test_only_a_failed_condition_carries_the_failure(written: dict[str, Any], job_status: dict[str, Any],
                                                      failure: dict[str, Any] | None) -> None:
    assert sent(written, status=job_status)["failure"] == failure
    succeeded = ConditionSummary(type="Succeeded", reason="WorkloadCompleted")
    assert sent(written, succeeded, status=job_status)["failure"] is None


def test_a_workload_given_is_the_one_sent() -> None:
    """The attempt the decision was about, even when the Job refers to another one by now."""
    assert sent({}, workload=OTHER, workload_ref=True)["workload"]["name"] == "llm-workload-0"
    assert sent({}, workload=OTHER)["workload"]["name"] == "llm-workload-0"


def test_the_event_continues_the_trace_of_its_cause() -> None:
    cause = Envelope(id="e1", type="dev.crefn.workload.phase", source="/crefn/phase",
                     traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", tracestate="k=v")
    event = condition_changed(job(RUNNING), {}, FAILED, "status", cause)
    assert (event.traceparent, event.tracestate) == (cause.traceparent, cause.tracestate)


@pytest.mark.parametrize(("state", "workload", "why"), [
    (job(RUNNING, workload_ref=True), "llm-workload", ""),
    (job(RUNNING, workload_ref=True, restart_count=1), "llm-workload",
     "stale: TrainJob llm-workload attempt 0 is not the current attempt of Job ns/llm"),
    (job([cond("Succeeded", "True", "WorkloadCompleted")], workload_ref=True), "llm-workload",
     "Job ns/llm is terminal"),
], ids=["current", "an-earlier-attempt", "terminal"])
def test_why_an_event_must_not_act_on_the_job(state: JobState, workload: str, why: str) -> None:
    ref = WorkloadRef(api_version="trainer.kubeflow.org/v1alpha1", kind="TrainJob", name=workload, namespace="ns",
                      attempt=0)
    assert why_not_current(state, ref) == why
