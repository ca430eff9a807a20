"""`functions.rules.status` (SPEC §5): the conditions it derives from a workload phase, as a truth table.
The function on the real API server: tests/handlers/test_status.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from events.emitted import WorkloadPhaseData, WorkloadRef
from events.envelope import parse_phase_event
from events.types import Phase
from functions.codec import to_envelope
from functions.errors import PermanentError
from functions.plan import Plan, RecordEvent, WriteStatus
from functions.resources import cre_jobs
from functions.rules.adapter import PhaseResult
from functions.rules.status import decide_status
from functions.settings import Settings
from tests.support.helpers import EARLIER, NOW, cond, job
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
    commit, event = write.effects
    assert isinstance(commit, WriteStatus)
    assert (commit.res, commit.status) == (cre_jobs("nvcre.nvidia.com"), write.status)
    assert isinstance(event, RecordEvent) and event.body["reportingInstance"] == "crefn-status"


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


def test_a_running_job_without_its_start_time_gets_it_alone() -> None:
    """The condition shows Running already: only `workloadStartTime` is written, no Event."""
    running = cond("InProgress", "True", "WorkloadRunning", "Workload TrainJob/llm-workload is running")
    siblings = [cond(t, "False", "NotApplicable") for t in ("Succeeded", "Failed")]
    state = job(conditions=[running, *siblings], workload_ref=True)
    decided = decide_status(state, Phase.RUNNING, "llm-workload", "", NOW, "nvcre.nvidia.com", "status")
    assert isinstance(decided, tuple)
    write, true = decided
    assert write.status == {"workloadStartTime": "2026-11-30T12:00:00Z"}
    (commit,) = write.effects
    assert isinstance(commit, WriteStatus)
    assert (commit.res, commit.status) == (cre_jobs("nvcre.nvidia.com"), write.status)
    assert true is not None and true.reason == "WorkloadRunning"


def test_a_failed_phase_is_refused_naming_the_function_that_decides_it() -> None:
    with pytest.raises(PermanentError) as raised:
        decide_status(job(workload_ref=True), Phase.FAILED, "llm-workload", "", NOW, "nvcre.nvidia.com", "status")
    assert str(raised.value) == "phase Failed is handled by the restart function"


RUNNING_SHOWN_SET = [cond("InProgress", "True", "WorkloadRunning", "Workload TrainJob/llm-workload is running"),
                     cond("Succeeded", "False", "NotApplicable"), cond("Failed", "False", "NotApplicable")]
READ = WorkloadRef(api_version="trainer.kubeflow.org/v1alpha1", kind="TrainJob", name="llm-workload", namespace="ns",
                   uid="tj-uid", attempt=0)


def decided(said: str, read: PhaseResult | None) -> Plan:
    """`status`'s decision for an event saying `said` about a running Job's attempt whose TrainJob, read
    fresh, says `read` (None: gone)."""
    from functions.rules.status import Found, Read, decide

    record = phase_record("ns", "llm", said)
    state = job(conditions=RUNNING_SHOWN_SET, workload_ref=True, status={"workloadStartTime": EARLIER})
    cause, data = to_envelope(record), parse_phase_event(to_envelope(record))
    return decide(Read(cause, data, state, READ, read) if read else Found(cause, data, state), Settings(), NOW)


@pytest.mark.parametrize(("said", "read", "reason"), [
    ("Succeeded", PhaseResult(phase=Phase.RUNNING),
     "Job ns/llm: nothing changed: TrainJob llm-workload is Running (the event said Succeeded)"),
    ("Pending", PhaseResult(phase=Phase.RUNNING),
     "Job ns/llm: nothing changed: TrainJob llm-workload is Running (the event said Pending)"),
    ("Succeeded", PhaseResult(phase=Phase.FAILED, reason="JobsFailed"),
     "Job ns/llm: TrainJob llm-workload has failed on a fresh read (the event said Succeeded): the restart "
     "function decides"),
    ("Succeeded", None, "Job ns/llm: TrainJob llm-workload of attempt 0 is gone on a fresh read"),
    ("Running", PhaseResult(phase=Phase.RUNNING), "Job ns/llm: nothing changed: TrainJob llm-workload is Running"),
], ids=["forged-success-of-a-running-workload", "forged-pending", "failed-on-the-read", "gone-on-the-read",
        "in-step"])
def test_the_event_phase_is_a_cue_and_the_read_decides(said: str, read: PhaseResult | None, reason: str) -> None:
    plan = decided(said, read)
    assert (plan.effects, plan.reply, plan.reason) == ((), None, reason)


def test_a_failed_phase_or_a_gone_job_reads_and_writes_nothing() -> None:
    from functions.rules.jobs import Gone
    from functions.rules.status import Unread, decide

    failed = to_envelope(phase_record("ns", "llm", "Failed"))
    running = to_envelope(phase_record("ns", "llm", "Running"))
    assert decide(Unread(failed, parse_phase_event(failed)), Settings(), NOW).reason == \
        "phase Failed is handled by the restart function"
    assert decide(Gone(parse_phase_event(running).job), Settings(), NOW).reason == "Job ns/llm is gone"


def test_a_stale_running_event_after_the_workload_completed_writes_what_the_trainjob_says() -> None:
    plan = decided("Running", PhaseResult(phase=Phase.SUCCEEDED, reason="Completed", message="all jobs completed"))
    write, _event = plan.effects
    assert isinstance(write, WriteStatus)
    (true,) = [(c["type"], c["reason"], c["message"]) for c in write.status["conditions"] if c["status"] == "True"]
    assert true == ("Succeeded", "WorkloadCompleted", "Workload TrainJob/llm-workload completed: all jobs completed")
    assert plan.reply is not None and plan.reason == "the event said Running"
    assert plan.reply.data.model_dump()["workload"]["uid"] == "tj-uid"  # the TrainJob as read, not the event


def in_step_case(phase: str, conditions: list[tuple[str, str, str]], started: bool = True, attempt: int = 0,
                 message: str = "", spec: dict[str, Any] | None = None) -> bool:
    from events.emitted import WorkloadRef
    from events.types import Phase
    from functions.rules.adapter import PhaseResult
    from functions.rules.jobs import parse_job
    from functions.rules.status import in_step

    state = job(workload_ref=True, spec=spec)
    raw = {**state.raw, "status": {**state.raw["status"], "conditions": [
        {"type": t, "status": "True", "reason": r, "message": m} for t, r, m in conditions]}}
    if started:
        raw["status"]["workloadStartTime"] = "2026-11-30T10:00:00Z"
    workload = WorkloadRef(api_version="trainer.kubeflow.org/v1alpha1", kind="TrainJob", name="llm-workload",
                           namespace="ns", attempt=attempt)
    return in_step(parse_job(raw, "nvcre.nvidia.com"), workload, PhaseResult(phase=Phase(phase), message=message))


RUNNING_SHOWN = [("InProgress", "WorkloadRunning", "Workload TrainJob/llm-workload is running")]


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


@pytest.mark.parametrize(("phase", "created", "unread"), [
    ("Running", True, True),
    ("Running", None, False),
    ("Pending", True, False),
    ("Succeeded", True, False),
], ids=["created-running", "running", "created-suspended", "created-succeeded"])
def test_the_creation_of_a_running_trainjob_is_its_creators_to_decide(phase: str, created: bool | None,
                                                                        unread: bool) -> None:
    """The first phase of a TrainJob the functions created is written by its creator
    (`functions.rules.launch.FirstPhase`): its creation's Running event is answered unread."""
    from functions.rules.status import Unread, decide, first_phase_decided

    data = phase_data(phase).model_copy(update={"created": created})
    assert first_phase_decided(data) is unread
    if unread:
        plan = decide(Unread(to_envelope(phase_record("ns", "llm", phase)), data), Settings(), NOW)
        assert (plan.effects, plan.reply, plan.reason) == ((), None, "TrainJob llm-workload was just created: the "
                                                           "function that created it decided its first phase")
