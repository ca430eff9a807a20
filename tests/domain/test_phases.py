"""Phases, pure: the owning Job of a TrainJob, and an object of another kind refused saying what it got."""

from __future__ import annotations

from typing import Any

import pytest

from functions.domain.phases import find_owner, parse_trainjob
from functions.runtime.errors import PermanentError


def owned(owner: dict[str, Any] | None, label: str | None = None) -> dict[str, Any]:
    """A TrainJob with an ownerReference (controller) and/or the `nvcre.nvidia.com/job` label."""
    owners = [{"name": "llm", "uid": "u", "controller": True, **owner}] if owner else []
    meta = {"name": "llm-workload", "namespace": "ns", "labels": {"nvcre.nvidia.com/job": label} if label else {},
            "ownerReferences": owners}
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": meta,
            "spec": {"runtimeRef": {"name": "t"}}}


CRE_JOB = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job"}


@pytest.mark.parametrize(("obj", "owner"), [
    (owned(CRE_JOB), "llm"),
    (owned(CRE_JOB, label="by-label"), "llm"),
    (owned({"apiVersion": "batch/v1", "kind": "Job"}), None),
    (owned({"apiVersion": "batch/v1", "kind": "Job"}, label="by-label"), "by-label"),
    (owned({"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "WorkloadRun"}), None),
    (owned({**CRE_JOB, "controller": False}, label="by-label"), "by-label"),
    (owned(None, label="by-label"), "by-label"),
    (owned(None), None),
], ids=["cre-job", "owner-wins-over-label", "batch-job", "batch-job-then-label", "other-cre-kind",
        "not-controller", "label-only", "neither"])
def test_the_owning_job(obj: dict[str, Any], owner: str | None) -> None:
    """The controller ownerReference of kind Job in the CRE group names the Job, else the job label."""
    assert find_owner(parse_trainjob(obj), "nvcre.nvidia.com") == owner


@pytest.mark.parametrize(("drop", "error"), [
    ("apiVersion", "expected TrainJob, got /TrainJob"),
    ("kind", "expected TrainJob, got trainer.kubeflow.org/v1alpha1/"),
])
def test_an_object_without_its_kind_is_rejected_saying_what_it_got(drop: str, error: str) -> None:
    obj = owned(CRE_JOB)
    del obj[drop]
    with pytest.raises(PermanentError) as raised:
        parse_trainjob(obj)
    assert str(raised.value) == error
