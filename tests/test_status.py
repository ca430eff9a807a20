"""`status` (SPEC §5): the conditions `functions.rules.status` derives from a workload phase, as a
truth table, then the function over HTTP on the real API server, as its ServiceAccount."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from events.emitted import WorkloadPhaseData
from functions.rules.status import decide_status
from functions.transport import send
from tests.support.helpers import NOW, job
from tests.support.world import phase_record


def phase_data(phase: str, message: str = "") -> WorkloadPhaseData:
    return WorkloadPhaseData.model_validate({
        "job": {"name": "llm", "namespace": "ns"}, "phase": phase, "message": message, "observedAt": NOW.isoformat(),
        "workload": {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "llm-workload",
                     "namespace": "ns", "attempt": 0}})


@pytest.mark.parametrize(("phase", "message", "expected"), [
    ("Pending", "TrainJob is suspended", ("InProgress", "WorkloadPending",
                                          "Workload TrainJob/llm-workload is pending: TrainJob is suspended")),
    ("Pending", "", ("InProgress", "WorkloadPending", "Workload TrainJob/llm-workload is pending")),
    ("Running", "ignored", ("InProgress", "WorkloadRunning", "Workload TrainJob/llm-workload is running")),
    ("Succeeded", "all jobs completed", ("Succeeded", "WorkloadCompleted",
                                         "Workload TrainJob/llm-workload completed: all jobs completed")),
    ("Succeeded", "", ("Succeeded", "WorkloadCompleted", "Workload TrainJob/llm-workload completed successfully")),
], ids=["pending-msg", "pending", "running", "succeeded-msg", "succeeded"])
def test_status_conditions(phase: str, message: str, expected: tuple[str, str, str]) -> None:
    data = phase_data(phase, message)
    decided = decide_status(job(workload_ref=True), data.phase, data.workload.name, data.message, NOW,
                            "nvcre.nvidia.com", "status")
    assert decided is not None
    write, new = decided
    assert (new.type, new.reason, new.message) == expected
    assert ("workloadStartTime" in write.status) is (phase == "Running")


def test_object_gone_is_202(functions: Callable[..., dict[str, str]], namespace: str) -> None:
    answer = send(functions()["status"], phase_record(namespace, "never-was", "Running"))
    assert answer.status == 202, answer.text


def test_bad_events_are_400(functions: Callable[..., dict[str, str]], namespace: str) -> None:
    record = phase_record(namespace, "llm", "Running")
    record["data"]["phase"] = "Exploded"
    answer = send(functions()["status"], record)
    assert answer.status == 400 and "invalid dev.crefn.workload.phase data: phase" in answer.text
