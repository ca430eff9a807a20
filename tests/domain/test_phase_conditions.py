"""The Job condition of each phase, pure: the write of each phase (none when the Job shows it already; Failed is
`restart`'s), the event a flip records naming its cause, and `in_step`, what the resync tick skips."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from events.emitted import WorkloadRef
from events.types import Phase
from functions.domain.adapter import PhaseResult
from functions.domain.condition_writes import ConditionWrite
from functions.domain.jobs import parse_job
from functions.domain.phase_conditions import decide_status, in_step
from functions.runtime.effects import KubeEvent
from functions.runtime.errors import PermanentError
from tests.support.helpers import EARLIER, NOW, cond, job


def in_step_case(phase: str, conditions: list[tuple[str, str, str]], started: bool = True, attempt: int = 0,
                 message: str = "", spec: dict[str, Any] | None = None) -> bool:
    state = job(workload_ref=True, spec=spec)
    raw = {**state.raw, "status": {**state.raw["status"], "conditions": [
        {"type": t, "status": "True", "reason": r, "message": m} for t, r, m in conditions]}}
    if started:
        raw["status"]["workloadStartTime"] = "2026-11-30T10:00:00Z"
    workload = WorkloadRef(api_version="trainer.kubeflow.org/v1alpha1", kind="TrainJob", name="llm-workload",
                           namespace="ns", attempt=attempt)
    return in_step(parse_job(raw, "nvcre.nvidia.com"), workload, PhaseResult(phase=Phase(phase), message=message))


RUNNING_SHOWN = [("InProgress", "WorkloadRunning", "Workload TrainJob/llm-workload is running")]


@pytest.mark.parametrize(("phase", "conditions", "status"), [
    ("Pending", [cond("InProgress", "True", "WorkloadPending", "Workload TrainJob/llm-workload is pending")], {}),
    ("Running", [cond("InProgress", "True", "WorkloadRunning", "Workload TrainJob/llm-workload is running")],
     {"workloadStartTime": EARLIER}),
    ("Succeeded", [cond("Succeeded", "True", "WorkloadCompleted",
                        "Workload TrainJob/llm-workload completed successfully")], {}),
], ids=["pending", "running", "succeeded"])
def test_a_phase_the_job_shows_already_writes_nothing(phase: str, conditions: list[dict[str, Any]],
                                                      status: dict[str, Any]) -> None:
    exclusive = [cond(t, "False", "NotApplicable") for t in ("InProgress", "Succeeded", "Failed")
                 if t != conditions[0]["type"]]
    state = job(conditions=conditions + exclusive, workload_ref=True, status=status)
    assert decide_status(state, Phase(phase), "llm-workload", "", NOW, "nvcre.nvidia.com", "status") is None


def test_a_failed_phase_is_refused_naming_the_function_that_decides_it() -> None:
    with pytest.raises(PermanentError) as raised:
        decide_status(job(workload_ref=True), Phase.FAILED, "llm-workload", "", NOW, "nvcre.nvidia.com", "status")
    assert str(raised.value) == "phase Failed is handled by the restart function"


@pytest.mark.parametrize(("case", "expected"), [
    (lambda: in_step_case("Running", RUNNING_SHOWN), True),
    (lambda: in_step_case("Running", RUNNING_SHOWN, started=False), False),
    (lambda: in_step_case("Running", [("InProgress", "WorkloadCreated", "created")]), False),
    (lambda: in_step_case("Pending", [("InProgress", "WorkloadPending",
                                       "Workload TrainJob/llm-workload is pending: s")], message="s"), True),
    (lambda: in_step_case("Pending", RUNNING_SHOWN, message="s"), False),
    (lambda: in_step_case("Failed", RUNNING_SHOWN), False),
    (lambda: in_step_case("Succeeded", RUNNING_SHOWN), False),
    (lambda: in_step_case("Running", RUNNING_SHOWN, attempt=1), False),
    (lambda: in_step_case("Running", RUNNING_SHOWN, spec={"stallMultiplier": 10}), False),
    (lambda: in_step_case("Pending", [("InProgress", "WorkloadPending",
                                       "Workload TrainJob/llm-workload is pending: s")], message="s",
                          spec={"stallMultiplier": 10}), True),
], ids=["running-shown", "running-not-started", "created-not-running-yet", "pending-shown", "suspended-again",
        "failed-always-goes-to-restart", "succeeded-always-goes-to-status", "another-attempt",
        "running-with-stall-detection-is-re-decided-each-tick", "pending-with-stall-detection-is-not"])
def test_in_step_is_what_resync_skips(case: Callable[[], bool], expected: bool) -> None:
    assert case() is expected


@pytest.mark.parametrize(("cause", "annotations"), [("e1", {"crefn.dev/cause": "e1"}), (None, None)],
                         ids=["caused", "a-launchs-first-phase"])
def test_the_event_of_a_phase_flip_names_its_cause_only_when_given_one(cause: str | None,
                                                                       annotations: dict[str, str] | None) -> None:
    """`status` names the event that decided the flip; the first phase a launch decides (given no cause) records
    an Event without annotations."""
    pending = [cond("InProgress", "True", "WorkloadPending", "Workload TrainJob/llm-workload is pending"),
               cond("Succeeded", "False", "NotApplicable"), cond("Failed", "False", "NotApplicable")]
    state = job(conditions=pending, workload_ref=True)
    extra = {} if cause is None else {"cause": cause}
    decided = decide_status(state, Phase.SUCCEEDED, "llm-workload", "", NOW, "nvcre.nvidia.com", "status", **extra)
    assert isinstance(decided, tuple)
    write, _ = decided
    assert isinstance(write, ConditionWrite)
    _, event = write.effects
    assert isinstance(event, KubeEvent) and event.body["metadata"].get("annotations") == annotations
