"""`functions.domain.deletion`, pure: CRE's deletion of a Job finished as CRE's Job reconciler finishes it (the
TrainJob deleted, the pods waited for at most 5 minutes from the deletion timestamp, then CRE's finalizer, and only
CRE's, removed, locked on the Job's version)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from events.objects import Pod
from functions.domain.deletion import Deleting, decide_deletion, finishes
from functions.domain.jobs import JobState, parse_job
from functions.runtime.effects import Delete, Finalizers, Wait
from functions.runtime.resources import TRAINJOBS, cre_jobs
from functions.runtime.settings import Settings
from tests.support.helpers import NOW

DELETED = NOW - timedelta(minutes=1)
CRE = "nvcre.nvidia.com/finalizer"  # CRE's finalizer, verbatim


def deleting(finalizers: tuple[str, ...] = (CRE,), managed: bool = True, when: Any = DELETED) -> JobState:
    meta: dict[str, Any] = {"name": "llm", "namespace": "ns", "uid": "job-uid", "resourceVersion": "41",
                            "labels": {"crefn.dev/managed": "true"} if managed else {},
                            "finalizers": list(finalizers)}
    if when is not None:
        meta["deletionTimestamp"] = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    return parse_job({"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "metadata": meta,
                      "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "t"}}}}}, "nvcre.nvidia.com")


def pod(name: str, phase: str) -> Pod:
    return Pod.model_validate({"metadata": {"name": name, "labels": {"nvcre.nvidia.com/job": "llm"}},
                               "status": {"phase": phase}})


TRAINJOB = {"metadata": {"name": "llm-workload", "namespace": "ns", "uid": "tj-uid",
                         "ownerReferences": [{"kind": "Job", "name": "llm", "uid": "job-uid", "controller": True}]}}


@pytest.mark.parametrize(("state", "settings", "expected"), [
    (deleting(), Settings(), True),
    (deleting(finalizers=("foregroundDeletion",)), Settings(), False),
    (deleting(when=None), Settings(), False),
    (deleting(managed=False), Settings(), False),
    (deleting(managed=False), Settings(manage_all=True), True),
    (deleting(finalizers=("cre.nvidia.com/finalizer",)), Settings(cre_group="cre.nvidia.com"), True),
], ids=["cres-finalizer", "another-finalizer", "not-deleted", "unmanaged", "manage-all", "legacy-group"])
def test_which_deletions_the_functions_finish(state: JobState, settings: Settings, expected: bool) -> None:
    assert finishes(state, settings) is expected


def test_running_pods_keep_the_job_and_its_trainjob_goes_first() -> None:
    plan = decide_deletion(Deleting(deleting(), TRAINJOB, (pod("a", "Running"), pod("b", "Succeeded"),
                                                          pod("c", "Pending"))), Settings(), NOW)
    assert plan.effects == (Delete(TRAINJOBS, "ns", "llm-workload", "tj-uid"),
                            Wait("Job ns/llm is being deleted: its pods have not ended (a, c)", 15))


@pytest.mark.parametrize(("running", "listed"), [
    (5, "p0, p1, p2, p3, p4"),
    (7, "p0, p1, p2, p3, p4 and 2 more"),
], ids=["five-named", "five-named-and-the-count-of-the-rest"])
def test_the_wait_names_five_running_pods_at_most(running: int, listed: str) -> None:
    pods = tuple(pod(f"p{i}", "Running") for i in range(running))
    plan = decide_deletion(Deleting(deleting(), None, pods), Settings(), NOW)
    assert plan.effects == (Wait(f"Job ns/llm is being deleted: its pods have not ended ({listed})", 15),)


def test_once_the_pods_ended_only_cres_finalizer_is_removed_locked_on_the_version() -> None:
    state = deleting(finalizers=("foregroundDeletion", CRE, "example.com/keep"))
    plan = decide_deletion(Deleting(state, None, (pod("a", "Succeeded"), pod("b", "Failed"))), Settings(), NOW)
    assert plan.effects == (Finalizers(cre_jobs("nvcre.nvidia.com"), "ns", "llm",
                                       ("foregroundDeletion", "example.com/keep"), "41"),)
    assert plan.reason == "Job ns/llm is being deleted and its pods have ended: CRE's finalizer removed"


@pytest.mark.parametrize(("after", "released"), [(timedelta(minutes=5) - timedelta(seconds=1), False),
                                                 (timedelta(minutes=5), True)], ids=["within", "at-the-bound"])
def test_pods_that_never_end_hold_the_job_five_minutes_from_its_deletion(after: timedelta, released: bool) -> None:
    plan = decide_deletion(Deleting(deleting(), None, (pod("a", "Running"),)), Settings(), DELETED + after)
    assert any(isinstance(e, Finalizers) for e in plan.effects) is released
    if released:
        assert plan.reason == ("Job ns/llm is being deleted and its pods did not end within 5 min: CRE's finalizer "
                               "removed")
    else:
        assert plan.effects == (Wait("Job ns/llm is being deleted: its pods have not ended (a)", 1),)


def test_a_trainjob_the_job_does_not_control_is_left_alone() -> None:
    theirs = {"metadata": {**TRAINJOB["metadata"], "ownerReferences": [{"kind": "Job", "uid": "other",
                                                                        "controller": True}]}}
    plan = decide_deletion(Deleting(deleting(), theirs, ()), Settings(), NOW)
    assert not any(isinstance(e, Delete) for e in plan.effects)


def test_observe_mode_writes_nothing() -> None:
    plan = decide_deletion(Deleting(deleting(), TRAINJOB, ()), Settings(mode="observe"), NOW)
    assert plan.effects == () and plan.reason.startswith("observe mode: would finish the deletion of Job ns/llm")
