"""`functions.status.decide` (SPEC §5): the conditions it derives from a workload phase, as a truth table.
The function on the real API server: tests/functions/status/test_read.py."""

from __future__ import annotations

import pytest

from events.emitted import WorkloadPhaseData, WorkloadRef
from events.envelope import parse_phase_event
from events.types import Phase
from functions.domain.adapter import PhaseResult
from functions.domain.phase_conditions import decide_status
from functions.runtime.codec import to_envelope
from functions.runtime.effects import KubeEvent, WriteStatus
from functions.runtime.plan import Plan
from functions.runtime.resources import cre_jobs
from functions.runtime.settings import Settings
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
    assert isinstance(event, KubeEvent) and event.body["reportingInstance"] == "crefn-status"


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


RUNNING_SHOWN_SET = [cond("InProgress", "True", "WorkloadRunning", "Workload TrainJob/llm-workload is running"),
                     cond("Succeeded", "False", "NotApplicable"), cond("Failed", "False", "NotApplicable")]
READ = WorkloadRef(api_version="trainer.kubeflow.org/v1alpha1", kind="TrainJob", name="llm-workload", namespace="ns",
                   uid="tj-uid", attempt=0)


def decided(said: str, read: PhaseResult | None) -> Plan:
    """`status`'s decision for an event saying `said` about a running Job's attempt whose TrainJob, read
    fresh, says `read` (None: gone)."""
    from functions.status.decide import Found, Read, decide

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
    from functions.domain.jobs import Gone
    from functions.status.decide import Unread, decide

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








def test_a_stall_found_on_the_read_is_sent_to_the_restart_function_unwritten() -> None:
    """A running attempt whose last step is an hour old (10 x 2.5 s + 2 x 60 s allowed): no write, the stall
    sent as `workload.stalled` about the Job and the TrainJob as read."""
    from functions.domain.measurement_objects import GoodputMeasurement
    from functions.status.decide import Read, decide

    goodput = GoodputMeasurement.model_validate({
        "metadata": {"name": "llm-goodput", "namespace": "ns"},
        "spec": {"jobRef": {"kind": "Job", "name": "llm"}, "logProfileRef": "nemo"},
        "status": {"lastStepTimestamp": "2026-11-30T11:00:00Z", "avgStepTimeSec": "2.5"}})
    state = job(conditions=RUNNING_SHOWN_SET, workload_ref=True, spec={"stallMultiplier": 10},
                status={"workloadStartTime": EARLIER})
    record = phase_record("ns", "llm", "Running")
    cause, data = to_envelope(record), parse_phase_event(to_envelope(record))
    plan = decide(Read(cause, data, state, READ, PhaseResult(phase=Phase.RUNNING), (), goodput), Settings(), NOW)
    assert plan.effects == () and plan.reply is not None and plan.reply.type == "dev.crefn.workload.stalled"
    assert plan.reply.data.model_dump(mode="json", by_alias=True) == {
        "job": {"name": "llm", "namespace": "ns"},
        "workload": {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "llm-workload",
                     "namespace": "ns", "uid": "tj-uid", "resourceVersion": "", "attempt": 0},
        "mode": "training", "elapsedSeconds": 3600.0, "thresholdSeconds": 145.0,
        "message": "Workload stalled: no training step within the configured threshold"}
