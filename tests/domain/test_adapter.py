"""The workload adapter (SPEC §3) as a truth table: one row per rule."""

from __future__ import annotations

from typing import Any

import pytest

from events.objects import TrainJob
from events.types import Phase
from functions.domain.adapter import WrongKind, decide_phase, deleted_phase

SUSPENDED = "TrainJob is suspended (spec.suspend=true), waiting for it to be resumed"


def cond(type_: str, status: str = "True", reason: str = "", message: str = "") -> dict[str, str]:
    return {"type": type_, "status": status, "reason": reason, "message": message}


def trainjob(conditions: list[dict[str, str]] | None = None, suspend: bool | None = None,
             managed_by: str | None = None, jobs_status: list[dict[str, Any]] | None = None,
             api_version: str = "trainer.kubeflow.org/v1alpha1", kind: str = "TrainJob") -> TrainJob:
    spec: dict[str, Any] = {"runtimeRef": {"name": "torch-distributed"}}
    if suspend is not None:
        spec["suspend"] = suspend
    if managed_by is not None:
        spec["managedBy"] = managed_by
    status: dict[str, Any] = {}
    if conditions is not None:
        status["conditions"] = conditions
    if jobs_status is not None:
        status["jobsStatus"] = jobs_status
    return TrainJob.model_validate({"apiVersion": api_version, "kind": kind,
                                    "metadata": {"name": "tj", "namespace": "ns"}, "spec": spec, "status": status})


ROWS = [
    ("no-status-is-running", trainjob(), (Phase.RUNNING, "", "")),
    ("failed", trainjob([cond("Failed", reason="JobsFailed", message="node-0 exit 137")]),
     (Phase.FAILED, "JobsFailed", "node-0 exit 137")),
    ("complete", trainjob([cond("Complete", reason="JobsCompleted", message="done")]),
     (Phase.SUCCEEDED, "JobsCompleted", "done")),
    ("failed-then-complete", trainjob([cond("Failed", reason="F", message="f"), cond("Complete", reason="C")]),
     (Phase.FAILED, "F", "f")),
    ("complete-then-failed", trainjob([cond("Complete", reason="C"), cond("Failed", reason="F", message="f")]),
     (Phase.FAILED, "F", "f")),
    ("suspended", trainjob(suspend=True), (Phase.PENDING, "Suspended", SUSPENDED)),
    ("suspended-managed-by", trainjob(suspend=True, managed_by="kueue.x-k8s.io/multikueue"),
     (Phase.PENDING, "Suspended", SUSPENDED + "; managed by kueue.x-k8s.io/multikueue")),
    ("suspend-false", trainjob(suspend=False, managed_by="x"), (Phase.RUNNING, "", "")),
    ("suspended-but-failed", trainjob([cond("Failed", reason="F")], suspend=True), (Phase.FAILED, "F", "")),
    ("suspended-but-complete", trainjob([cond("Complete", reason="C")], suspend=True),
     (Phase.SUCCEEDED, "C", "")),
    ("failed-false-ignored", trainjob([cond("Failed", "False", "F")]), (Phase.RUNNING, "", "")),
    ("failed-unknown-ignored", trainjob([cond("Failed", "Unknown", "F")]), (Phase.RUNNING, "", "")),
    ("complete-false-ignored", trainjob([cond("Complete", "False")], suspend=True),
     (Phase.PENDING, "Suspended", SUSPENDED)),
    ("created-condition-ignored", trainjob([cond("Created", reason="JobsCreated")]), (Phase.RUNNING, "", "")),
    ("suspended-condition-ignored", trainjob([cond("Suspended", reason="Suspended")]), (Phase.RUNNING, "", "")),
    ("resumed-suspended-condition-false", trainjob([cond("Suspended", "False", "Resumed")], suspend=False),
     (Phase.RUNNING, "", "")),
    ("jobs-status-ignored", trainjob(jobs_status=[{"name": "node", "failed": 3, "succeeded": 0, "active": 0}]),
     (Phase.RUNNING, "", "")),
    ("jobs-status-all-succeeded-ignored",
     trainjob(jobs_status=[{"name": "node", "succeeded": 2}], suspend=True),
     (Phase.PENDING, "Suspended", SUSPENDED)),
    ("lowercase-true-is-not-true", trainjob([cond("Failed", "true")]), (Phase.RUNNING, "", "")),
]


@pytest.mark.parametrize(("obj", "expected"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_rule(obj: TrainJob, expected: tuple[Phase, str, str]) -> None:
    result = decide_phase(obj)
    assert (result.phase, result.reason, result.message) == expected


@pytest.mark.parametrize(
    ("api_version", "kind"),
    [("batch/v1", "Job"), ("nvcre.nvidia.com/v1alpha1", "Job"), ("trainer.kubeflow.org/v1alpha1", "TrainingRuntime"),
     ("kubeflow.org/v1", "TrainJob"), ("", "")],
    ids=["batch-job", "cre-job", "trainingruntime", "wrong-group", "empty"],
)
def test_wrong_kind(api_version: str, kind: str) -> None:
    with pytest.raises(WrongKind, match=f"^expected TrainJob, got {api_version}/{kind}$"):
        decide_phase(trainjob(api_version=api_version, kind=kind))


def test_delete_is_failed_workload_deleted() -> None:
    result = deleted_phase("llama-workload")
    assert (result.phase, result.reason, result.message) == (
        Phase.FAILED, "WorkloadDeleted", "Workload TrainJob/llama-workload was deleted")
