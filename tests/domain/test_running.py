"""The running-path decision (`functions.domain.running`): CRE's scheduling-blocked rule (ADR-083) as a
truth table over pods, and the clock arithmetic of a recovery."""

from __future__ import annotations

from datetime import timedelta

import pytest

from events.objects import Pod
from events.types import Phase
from functions.domain.phase_conditions import decide_status, in_step
from functions.domain.running import decide_running
from tests.support.helpers import NOW, cond, job, pod

UNSCHEDULABLE = ("False", "Unschedulable", "0/3 nodes are available: 1 Insufficient nvidia.com/gpu.")
RUNNING = [cond("InProgress", "True", "WorkloadRunning", "Workload TrainJob/llm-workload is running")]


def at(delta: timedelta) -> str:
    return (NOW + delta).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize(("pods", "blocked"), [
    ([], False),
    ([pod(node="gpu-1", scheduled=("True", "", ""))], False),
    ([pod(scheduled=UNSCHEDULABLE)], True),
    ([pod(node="gpu-1", scheduled=UNSCHEDULABLE)], False),  # placed since: the condition is stale
    ([pod(scheduled=("False", "SchedulingGated", "waiting for DRA"))], False),
    ([pod()], False),  # the scheduler has not looked at it yet
    ([pod("a", node="gpu-1", scheduled=("True", "", "")), pod("b", scheduled=UNSCHEDULABLE)], True),
], ids=["no-pods", "scheduled", "unschedulable", "placed", "gated", "no-condition", "one-of-many"])
def test_which_pods_block(pods: list[Pod], blocked: bool) -> None:
    decided = decide_running(job(RUNNING, workload_ref=True, status={"workloadStartTime": at(-timedelta(hours=1))}),
                             pods, "llm-workload", NOW)
    assert ("schedulingBlockedSince" in decided.fields) is blocked
    if not blocked:
        assert decided.fields == {} and decided.condition is not None
        assert decided.condition.reason == "WorkloadRunning"


def test_first_blocked_sight_says_running_sets_the_marker_and_never_starts_the_clock() -> None:
    """CRE's `checkSchedulingBlocked` on the first sight: the marker and `InProgress`/`WorkloadRunning`
    (`Workload TrainJob/<n> is running`), whatever the Job said before; no `workloadStartTime`."""
    state = job([cond("InProgress", "True", "WorkloadCreated", "created")], workload_ref=True)
    decided = decide_running(state, [pod(scheduled=UNSCHEDULABLE)], "llm-workload", NOW)
    assert decided.condition is not None
    assert (decided.condition.type, decided.condition.reason, decided.condition.message) == (
        "InProgress", "WorkloadRunning", "Workload TrainJob/llm-workload is running")
    assert decided.fields == {"schedulingBlockedSince": at(timedelta(0))}


@pytest.mark.parametrize(("blocked_for", "grace", "says_blocked"), [
    (timedelta(seconds=299), None, False),  # the default grace, not over yet
    (timedelta(seconds=300), None, True),  # CRE: time.Since(marker) >= grace
    (timedelta(seconds=20), 20, True),
    (timedelta(seconds=19), 20, False),
])
def test_grace_delays_only_the_condition(blocked_for: timedelta, grace: int | None, says_blocked: bool) -> None:
    spec = {"schedulingStallGraceSeconds": grace} if grace else {}
    state = job(RUNNING, workload_ref=True, spec=spec,
                status={"schedulingBlockedSince": at(-blocked_for), "workloadStartTime": at(-timedelta(hours=1))})
    decided = decide_running(state, [pod(scheduled=UNSCHEDULABLE)], "llm-workload", NOW)
    assert decided.fields == {}  # the marker is kept as first set; the start time is not touched
    if says_blocked:
        assert decided.condition is not None
        assert (decided.condition.type, decided.condition.reason, decided.condition.message) == (
            "InProgress", "WorkloadSchedulingBlocked",
            "Workload pods are unschedulable: 0/3 nodes are available: 1 Insufficient nvidia.com/gpu.")
    else:
        assert decided.condition is None


@pytest.mark.parametrize(("pods", "message"), [
    ([pod("p-0", scheduled=("False", "Unschedulable", ""))], "Workload pods are unschedulable"),
    ([pod("p-0", scheduled=("False", "Unschedulable", "")), pod("p-1", scheduled=UNSCHEDULABLE),
      pod("p-2", scheduled=("False", "Unschedulable", "0/3 nodes are available: 3 node(s) were cordoned."))],
     "Workload pods are unschedulable: 0/3 nodes are available: 1 Insufficient nvidia.com/gpu."),
    ([pod("p-0", node="gpu-1", scheduled=("False", "Unschedulable", "stale")),
      pod("p-1", scheduled=("False", "Unschedulable", ""))], "Workload pods are unschedulable"),
], ids=["no-message", "first-non-empty-message", "placed-pods-do-not-speak"])
def test_the_blocked_message_is_cres(pods: list[Pod], message: str) -> None:
    """CRE's `checkSchedulingBlocked` text: exactly `Workload pods are unschedulable` without a scheduler
    message (`scheduling_stall_test.go`, "blocked with generic message"), else the first non-empty
    PodScheduled message of the blocked pods, in pod order."""
    state = job(RUNNING, workload_ref=True, status={"schedulingBlockedSince": at(-timedelta(hours=1))})
    decided = decide_running(state, pods, "llm-workload", NOW)
    assert decided.condition is not None and decided.condition.message == message


def test_recovery_keeps_the_runtime_consumed_before_the_block() -> None:
    """Started 59 minutes ago, blocked for the last 10: 49 minutes consumed, and still 49 after."""
    state = job([cond("InProgress", "True", "WorkloadSchedulingBlocked", "Workload pods are unschedulable: x")],
                workload_ref=True, status={"workloadStartTime": at(-timedelta(minutes=59)),
                                           "schedulingBlockedSince": at(-timedelta(minutes=10))})
    decided = decide_running(state, [pod(node="gpu-1", scheduled=("True", "", ""))], "llm-workload", NOW)
    assert decided.fields == {"schedulingBlockedSince": None, "schedulingResumedTime": at(timedelta(0)),
                              "workloadStartTime": at(-timedelta(minutes=49))}
    assert decided.condition is not None and decided.condition.reason == "WorkloadRunning"


@pytest.mark.parametrize(("since", "start"), [
    (timedelta(minutes=5), -timedelta(minutes=30)),  # the marker's writer clock ahead of this one
    (timedelta(minutes=2), timedelta(minutes=1)),  # the start written ahead too
], ids=["marker-ahead", "marker-and-start-ahead"])
def test_recovery_never_moves_the_start_earlier(since: timedelta, start: timedelta) -> None:
    """CRE's `resumeFromSchedulingBlock`: the start shifts by `max(now - max(marker, start), 0)`, so a marker
    written by a clock ahead of this one leaves the start where it was."""
    state = job(workload_ref=True, status={"workloadStartTime": at(start), "schedulingBlockedSince": at(since)})
    decided = decide_running(state, [pod(node="gpu-1", scheduled=("True", "", ""))], "llm-workload", NOW)
    assert decided.fields["workloadStartTime"] == at(start)


def test_recovery_before_the_clock_started_starts_it_now() -> None:
    state = job(workload_ref=True, status={"schedulingBlockedSince": at(-timedelta(minutes=10))})
    decided = decide_running(state, [], "llm-workload", NOW)
    assert decided.fields == {"schedulingBlockedSince": None, "schedulingResumedTime": at(timedelta(0)),
                              "workloadStartTime": at(timedelta(0))}


def test_status_writes_only_the_marker_within_grace() -> None:
    """A running Job's first blocked sight: no condition change, a marker-only write, no Event."""
    full = [*RUNNING, cond("Succeeded", "False", "NotApplicable", ""), cond("Failed", "False", "NotApplicable", "")]
    state = job(full, workload_ref=True, status={"workloadStartTime": at(-timedelta(hours=1))})
    decided = decide_status(state, Phase.RUNNING,
                            "llm-workload", "", NOW, "nvcre.nvidia.com", "status", [pod(scheduled=UNSCHEDULABLE)])
    assert decided is not None
    write, new = decided
    assert write.status == {"schedulingBlockedSince": at(timedelta(0))} and new == state.true_condition
    assert len(write.effects) == 1  # the write alone: no Event without a flip


def test_a_blocked_job_is_never_in_step() -> None:
    """The tick re-drives it: its grace runs out with no pod changing."""
    from events.emitted import WorkloadRef
    from functions.domain.adapter import PhaseResult

    workload = WorkloadRef(api_version="trainer.kubeflow.org/v1alpha1", kind="TrainJob", name="llm-workload",
                           namespace="ns", attempt=0)
    started = {"workloadStartTime": at(-timedelta(hours=1))}
    assert in_step(job(RUNNING, workload_ref=True, status=started), workload, PhaseResult(phase=Phase.RUNNING))
    blocked = {**started, "schedulingBlockedSince": at(-timedelta(minutes=1))}
    assert not in_step(job(RUNNING, workload_ref=True, status=blocked), workload, PhaseResult(phase=Phase.RUNNING))
