"""`functions.workloadrun.decide`, pure: the decision as a table, a refused spec's answer, and the
resources every generated kind maps to."""

from __future__ import annotations

from typing import Any

import pytest

from functions.domain.translation import translate
from functions.runtime.resources import Resource
from tests.functions.workloadrun.test_read import RESOURCES
from tests.support.render_cases import CASES


def test_resource_helper_covers_every_generated_kind() -> None:
    assert set(RESOURCES) == {o["kind"] for o in translate(CASES["checkpoint"]).objects} | {"ConfigMap"}
    assert all(isinstance(r, Resource) for r in RESOURCES.values())


def test_a_refused_spec_says_why_in_the_answer() -> None:
    """The reason logged with the answer names the run and the field, as the Failed condition does."""
    from datetime import UTC, datetime

    from functions.runtime.effects import KubeEvent, WriteStatus
    from functions.runtime.settings import Settings
    from functions.workloadrun.decide import Invalid, decide

    raw = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "WorkloadRun",
           "metadata": {"name": "wr", "namespace": "ml", "uid": "u1", "labels": {"crefn.dev/managed": "true"}},
           "spec": {}, "status": {}}
    message = "spec.framework.mpi.mpiImplementation: only OpenMPI is supported by Kubeflow Trainer"
    plan = decide(Invalid("WorkloadRun ml/wr", raw, message), Settings(),
                  datetime(2026, 11, 30, tzinfo=UTC))
    assert plan.reason == f"WorkloadRun ml/wr: invalid spec: {message}"
    write, event = plan.effects
    assert isinstance(write, WriteStatus) and isinstance(event, KubeEvent)
    assert (event.body["type"], event.body["reason"], event.body["note"]) == ("Warning", "InvalidSpec", message)


RUN = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "WorkloadRun",
       "metadata": {"name": "wr", "namespace": "ml", "uid": "u1", "resourceVersion": "7",
                    "labels": {"crefn.dev/managed": "true"}}, "spec": {}, "status": {}}


TRUE_SINCE = "2026-11-30T10:00:00Z"


CREATED = {**RUN, "status": {"conditions": [{"type": "InProgress", "status": "True", "reason": "WorkflowCreated",
                                             "message": "", "lastTransitionTime": TRUE_SINCE}]}}


ENDED = {**RUN, "status": {"conditions": [{"type": "Failed", "status": "True", "reason": "WorkflowDeleted",
                                           "message": "", "lastTransitionTime": TRUE_SINCE}]}}


OBJECTS = ({"kind": "TrainingRuntime", "metadata": {"name": "wr", "namespace": "ml"}},
           {"kind": "Job", "metadata": {"name": "wr", "namespace": "ml"}})


OURS = {"metadata": {"ownerReferences": [{"uid": "u1", "controller": True}]}}


THEIRS = {"metadata": {"ownerReferences": [{"uid": "u2", "controller": True}]}}


def run_decision(observed: Any, mode: str = "manage") -> tuple[list[str], str]:
    """The kinds of a `workloadrun` plan's effects (a write by the condition it makes True), and its reason."""
    from datetime import UTC, datetime

    from functions.runtime.effects import Create, WriteStatus
    from functions.runtime.settings import Settings
    from functions.workloadrun.decide import decide

    plan = decide(observed, Settings(mode=mode), datetime(2026, 11, 30, 12, tzinfo=UTC))
    kinds = [e.body["kind"] if isinstance(e, Create) else
             "/".join(next((c["type"], c["reason"]) for c in e.status["conditions"] if c["status"] == "True"))
             for e in plan.effects if isinstance(e, Create | WriteStatus)]
    return kinds, plan.reason


@pytest.mark.parametrize(("case", "mode", "kinds", "reason"), [
    ("skipped", "manage", [], "WorkloadRun ml/wr was deleted"),
    ("mirrored", "manage", ["Succeeded/WorkflowSucceeded"], "WorkloadRun ml/wr: Succeeded/WorkflowSucceeded"),
    ("mirrored-on-an-ended-run", "manage", [], "WorkloadRun ml/wr: Succeeded/WorkflowSucceeded (already so)"),
    ("not-managed", "manage", [], "WorkloadRun ml/wr is not managed"),
    ("ended", "manage", [], "WorkloadRun ml/wr is terminal"),
    ("all-missing", "manage", ["TrainingRuntime", "Job", "InProgress/WorkflowCreated"],
     "WorkloadRun ml/wr: 2 objects created"),
    ("redelivered", "manage", [], "WorkloadRun ml/wr: 0 objects created"),
    ("name-taken", "manage", ["Failed/ObjectConflict"],
     "WorkloadRun ml/wr: Job wr already exists and is not owned by this WorkloadRun"),
    ("job-deleted", "manage", ["Failed/WorkflowDeleted"],
     "WorkloadRun ml/wr: its Job was deleted; it is not created again"),
    ("observe", "observe", [], "observe mode: WorkloadRun ml/wr would create 2 objects"),
])
def test_the_workloadrun_decision(case: str, mode: str, kinds: list[str], reason: str) -> None:
    from events.emitted import ConditionSummary
    from functions.domain.jobs import Skipped
    from functions.workloadrun.decide import Mirror, Translated

    where = "WorkloadRun ml/wr"
    succeeded = ConditionSummary(type="Succeeded", reason="WorkflowSucceeded", message="")
    unmanaged = {**RUN, "metadata": {**RUN["metadata"], "labels": {}}}
    observed = {
        "skipped": Skipped(f"{where} was deleted"),
        "mirrored": Mirror(where, CREATED, succeeded),
        "mirrored-on-an-ended-run": Mirror(where, ENDED, succeeded),
        "not-managed": Translated(where, unmanaged, OBJECTS, (None, None)),
        "ended": Translated(where, ENDED, OBJECTS, (None, None)),
        "all-missing": Translated(where, RUN, OBJECTS, (None, None)),
        "redelivered": Translated(where, CREATED, OBJECTS, (OURS, OURS)),
        "name-taken": Translated(where, RUN, OBJECTS, (OURS, THEIRS)),
        "job-deleted": Translated(where, CREATED, OBJECTS, (OURS, None)),
        "observe": Translated(where, RUN, OBJECTS, (None, None)),
    }[case]
    assert run_decision(observed, mode) == (kinds, reason)


def test_a_threshold_verdict_is_mirrored_as_the_runs_own_validation_failed() -> None:
    """CRE's WorkloadRun controller sets `ValidationFailed` True / `ThresholdViolation` before it writes
    `Failed`/`WorkflowValidationFailed`: both in one write here, then the transition's Warning Event (ADR-080,
    `setWorkloadRunConditionAndUpdate`); the same mirror again writes and records nothing."""
    from datetime import UTC, datetime

    from events.emitted import ConditionSummary
    from functions.runtime.effects import KubeEvent, WriteStatus
    from functions.runtime.settings import Settings
    from functions.workloadrun.decide import Mirror, decide

    message = 'Threshold "busBandwidthGBps" violated: measured 100.0000, expression: value >= 400'
    verdict = ConditionSummary(type="Failed", reason="WorkflowValidationFailed", message=message)
    plan = decide(Mirror("WorkloadRun ml/wr", CREATED, verdict, message), Settings(),
                  datetime(2026, 11, 30, 12, tzinfo=UTC))
    write, event = plan.effects
    assert isinstance(write, WriteStatus) and isinstance(event, KubeEvent)
    assert (event.body["type"], event.body["reason"], event.body["note"], event.body["regarding"]["kind"]) == (
        "Warning", "WorkflowValidationFailed", message, "WorkloadRun")
    assert [(c["type"], c["status"], c["reason"], c["message"], c["lastTransitionTime"])
            for c in write.status["conditions"]] == [
        ("InProgress", "False", "Superseded", "", "2026-11-30T12:00:00Z"),
        ("Succeeded", "False", "Superseded", "", "2026-11-30T12:00:00Z"),
        ("Failed", "True", "WorkflowValidationFailed", message, "2026-11-30T12:00:00Z"),
        ("ValidationFailed", "True", "ThresholdViolation", message, "2026-11-30T12:00:00Z"),
    ]
    again = {**CREATED, "status": {"conditions": write.status["conditions"]}}
    assert decide(Mirror("WorkloadRun ml/wr", again, verdict, message), Settings(),
                  datetime(2026, 11, 30, 12, 5, tzinfo=UTC)).effects == ()


def test_a_runs_conditions_are_written_on_the_resource_version_read() -> None:
    """The status write of a run's conditions is conditional on the resourceVersion it was decided on (a run
    changed since is decided again, not overwritten)."""
    from datetime import UTC, datetime

    from functions.runtime.effects import WriteStatus
    from functions.runtime.resources import cre_workloadruns
    from functions.runtime.settings import Settings
    from functions.workloadrun.decide import Translated, decide

    plan = decide(Translated("WorkloadRun ml/wr", RUN, OBJECTS, (None, None)), Settings(),
                  datetime(2026, 11, 30, 12, tzinfo=UTC))
    (write,) = [e for e in plan.effects if isinstance(e, WriteStatus)]
    assert (write.res, write.namespace, write.name, write.resource_version) == (
        cre_workloadruns(Settings().cre_group), "ml", "wr", "7")


def test_a_runs_conditions_carry_its_generation_and_a_reason_change_records_no_event() -> None:
    """The conditions written observe the run's generation; a new reason of the True type (no flip) is written
    without an Event (the run's Events are its transitions)."""
    from datetime import UTC, datetime

    from events.emitted import ConditionSummary
    from functions.runtime.effects import WriteStatus
    from functions.runtime.settings import Settings
    from functions.workloadrun.decide import run_conditions

    raw = {**CREATED, "metadata": {**CREATED["metadata"], "generation": 3}}
    effects = run_conditions(raw, ConditionSummary(type="InProgress", reason="WorkflowRunning", message="m"),
                             datetime(2026, 11, 30, 12, tzinfo=UTC), Settings())
    (write,) = effects
    assert isinstance(write, WriteStatus)
    assert {c["observedGeneration"] for c in write.status["conditions"]} == {3}
    (true,) = [c for c in write.status["conditions"] if c["status"] == "True"]
    assert (true["type"], true["reason"], true["lastTransitionTime"]) == ("InProgress", "WorkflowRunning", TRUE_SINCE)


def test_a_built_run_whose_job_is_gone_is_failed_whatever_else_stands() -> None:
    """A run built already (a condition) whose Job, the last object, is gone fails `WorkflowDeleted`, though
    its other objects (a ConfigMap, the runtime) still stand: nothing is created again."""
    from datetime import UTC, datetime

    from functions.runtime.effects import Create, WriteStatus
    from functions.runtime.settings import Settings
    from functions.workloadrun.decide import Translated, decide

    objects = ({"kind": "ConfigMap", "metadata": {"name": "wr-config", "namespace": "ml"}}, *OBJECTS)
    plan = decide(Translated("WorkloadRun ml/wr", CREATED, objects, (OURS, OURS, None)), Settings(),
                  datetime(2026, 11, 30, 12, tzinfo=UTC))
    assert plan.reason == "WorkloadRun ml/wr: its Job was deleted; it is not created again"
    assert not [e for e in plan.effects if isinstance(e, Create)]
    (write,) = [e for e in plan.effects if isinstance(e, WriteStatus)]
    (failed,) = [c for c in write.status["conditions"] if c["status"] == "True"]
    assert (failed["type"], failed["reason"]) == ("Failed", "WorkflowDeleted")


@pytest.mark.parametrize("detected", [{"detectedGPUArchitecture": "gb200", "detectedPlatform": "oci"}, {}],
                         ids=["detected", "none-detected"])
def test_the_created_run_names_the_hardware_it_detected(detected: dict[str, str]) -> None:
    """CRE's `mirrorWorkflowStatus`: `detectedGPUArchitecture` and `detectedPlatform` on the run's status (unset
    when no node was found)."""
    from datetime import UTC, datetime

    from functions.runtime.effects import WriteStatus
    from functions.runtime.settings import Settings
    from functions.workloadrun.decide import Translated, decide

    plan = decide(Translated("WorkloadRun ml/wr", RUN, OBJECTS, (None, None), tuple(detected.items())), Settings(),
                  datetime(2026, 11, 30, 12, tzinfo=UTC))
    (write,) = [e for e in plan.effects if isinstance(e, WriteStatus)]
    assert {k: v for k, v in write.status.items() if k != "conditions"} == detected


def test_each_create_of_a_build_says_how_the_run_fails_if_the_api_refuses_it() -> None:
    """A generated object the API refuses for good (its schema, admission) fails the run `BuildFailed`,
    naming the object and quoting the API on one line; then the run's Warning Event."""
    from datetime import UTC, datetime

    from functions.runtime.effects import Create, KubeEvent, WriteStatus
    from functions.runtime.settings import Settings
    from functions.workloadrun.decide import Translated, decide

    plan = decide(Translated("WorkloadRun ml/wr", RUN, OBJECTS, (None, None)), Settings(),
                  datetime(2026, 11, 30, 12, tzinfo=UTC))
    creates = [e for e in plan.effects if isinstance(e, Create)]
    assert [c.body["kind"] for c in creates] == ["TrainingRuntime", "Job"]
    for create, kind in zip(creates, ("TrainingRuntime", "Job"), strict=True):
        assert create.refused is not None
        write, event = create.refused.follow('admission webhook "deny" denied the request:\n  jobs are frozen')
        assert isinstance(write, WriteStatus) and isinstance(event, KubeEvent)
        message = f'{kind} wr was refused: admission webhook "deny" denied the request: jobs are frozen'
        (failed,) = [c for c in write.status["conditions"] if c["status"] == "True"]
        assert (failed["type"], failed["reason"], failed["message"]) == ("Failed", "BuildFailed", message)
        assert (event.body["type"], event.body["reason"], event.body["note"]) == ("Warning", "BuildFailed", message)
