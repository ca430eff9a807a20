"""`functions.phase.decide`, pure: the owning Job of a TrainJob, the phase decision as a table, and an
object without its kind refused with what it got."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from events.envelope import ObjectReference
from events.objects import CreJob
from functions.domain.jobs import Skipped
from functions.domain.phases import parse_trainjob
from functions.phase.decide import Observed, Seen, TrainJobGone, decide
from functions.runtime.codec import to_envelope
from functions.runtime.resources import TRAINJOBS
from functions.runtime.settings import Settings
from localstack.eventing.apisource import apiserver_record


def owned(owner: dict[str, Any] | None, label: str | None = None) -> dict[str, Any]:
    """A TrainJob with an ownerReference (controller) and/or the `nvcre.nvidia.com/job` label."""
    owners = [{"name": "llm", "uid": "u", "controller": True, **owner}] if owner else []
    meta = {"name": "llm-workload", "namespace": "ns", "labels": {"nvcre.nvidia.com/job": label} if label else {},
            "ownerReferences": owners}
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": meta,
            "spec": {"runtimeRef": {"name": "t"}}}


CRE_JOB = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job"}


NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


CAUSE = to_envelope(apiserver_record("update", owned(CRE_JOB), TRAINJOBS, "https://127.0.0.1"))


GONE_REF = ObjectReference(apiVersion="trainer.kubeflow.org/v1alpha1", kind="TrainJob", name="llm-workload",
                           namespace="ns")


REFERRING = CreJob.model_validate({**CRE_JOB, "metadata": {"name": "llm", "namespace": "ns"},
                                   "status": {"restartCount": 2}})


@pytest.mark.parametrize(("observed", "sent"), [
    (Skipped("pod ns/p carries no Job and attempt labels"), None),
    (Seen(CAUSE, parse_trainjob(owned(None))), None),
    (Seen(CAUSE, parse_trainjob(owned(CRE_JOB))), ("llm", "Running", None)),  # no attempt label, no status
    (Seen(CAUSE, parse_trainjob(owned(CRE_JOB)), deleted=True), ("llm", "Failed", None)),
    (TrainJobGone(CAUSE, GONE_REF, None), None),
    (TrainJobGone(CAUSE, GONE_REF, REFERRING), ("llm", "Failed", 2)),
], ids=["skipped", "no-owner", "owned", "deleted", "gone-with-no-job", "gone-job-referring"])
def test_the_phase_decision(observed: Observed, sent: tuple[str, str, int | None] | None) -> None:
    """What `phase` sends for what it read: the owning Job's event (its name, the phase, the attempt), or 202."""
    plan = decide(observed, Settings(), NOW)
    assert plan.effects == ()
    got = plan.reply and (plan.reply.extensions["job"], plan.reply.extensions["workloadphase"],
                          plan.reply.data.model_dump()["workload"]["attempt"])
    assert got == sent, plan.reason


@pytest.mark.parametrize(("observed", "created"), [
    (Seen(CAUSE, parse_trainjob(owned(CRE_JOB)), added=True), True),
    (Seen(CAUSE, parse_trainjob(owned(CRE_JOB))), None),
    (Seen(CAUSE, parse_trainjob({**owned(CRE_JOB), "status": {"conditions": [
        {"type": "Suspended", "status": "False"}]}}), added=True), None),
    (Seen(CAUSE, parse_trainjob(owned(CRE_JOB)), deleted=True), None),
], ids=["added-without-conditions", "updated", "added-with-a-condition", "deleted"])
def test_the_creation_of_a_trainjob_says_so(observed: Seen, created: bool | None) -> None:
    """`created`: the add of a TrainJob nothing has written a condition on yet; absent otherwise."""
    plan = decide(observed, Settings(), NOW)
    assert plan.reply is not None
    assert plan.reply.data.created is created
    assert ("created" in plan.reply.data.model_dump(by_alias=True, exclude_none=True)) is (created is True)


@pytest.mark.parametrize(("annotations", "ours"), [
    ({"crefn.dev/first-phase": "creator"}, True),
    ({"crefn.dev/first-phase": "someone"}, False),
    ({}, False),
], ids=["creator-decides", "other-value", "none"])
def test_only_a_trainjob_saying_its_creator_decides_counts_as_created_by_the_functions(
        annotations: dict[str, str], ours: bool) -> None:
    from functions.phase.decide import created_by_functions

    obj = owned(CRE_JOB)
    obj["metadata"]["annotations"] = annotations
    assert created_by_functions(obj) is ours
