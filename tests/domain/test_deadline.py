"""A Job's wall-clock bound (`functions.domain.deadline`): where the bound comes from and each branch of
CRE's elapsed-time rule, with back-dated timestamps."""

from __future__ import annotations

from datetime import timedelta

import pytest

from functions.domain.deadline import deadline, elapsed, timeout_of
from functions.domain.jobs import parse_job
from tests.support.helpers import NOW, cond, job

HOUR = timedelta(hours=1)
RUNNING = [cond("InProgress", "True", "WorkloadRunning", "running")]


def at(delta: timedelta) -> str:
    return (NOW + delta).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize(("annotation", "default", "expected"), [
    (None, None, None),  # no bound at all, as CRE's Job tier
    (None, 2 * HOUR, 2 * HOUR),
    ("90m", 2 * HOUR, timedelta(minutes=90)),  # the Job's own annotation wins
    ("soon", None, 24 * HOUR),  # unreadable: CRE's default
    ("0s", None, 24 * HOUR),
])
def test_where_the_bound_comes_from(annotation: str | None, default: timedelta | None,
                                    expected: timedelta | None) -> None:
    annotations = {"crefn.dev/timeout-per-job": annotation} if annotation else {}
    assert timeout_of(job(annotations=annotations), default) == expected


def timed(status: dict[str, str], workload_ref: bool = True, created: timedelta = -48 * HOUR,
          conditions: list[dict[str, str]] | None = None) -> tuple[float, bool] | None:
    state = job(RUNNING if conditions is None else conditions, workload_ref=workload_ref, status=status,
                created=at(created), annotations={"crefn.dev/timeout-per-job": "1h"})
    due = deadline(state, NOW, None)
    return None if due is None else (due.elapsed.total_seconds(), due.blocked)


def test_running_workload_times_out_strictly_after_the_bound() -> None:
    assert timed({"workloadStartTime": at(-HOUR)}) is None  # exactly the bound: not yet
    assert timed({"workloadStartTime": at(-HOUR - timedelta(seconds=1))}) == (3601.0, False)


def test_the_clock_is_frozen_while_blocked() -> None:
    """Started 100 min ago, blocked for the last 50: 50 min charged, and the episode is within 1 h."""
    assert timed({"workloadStartTime": at(-timedelta(minutes=100)),
                  "schedulingBlockedSince": at(-timedelta(minutes=50))}) is None
    assert timed({"workloadStartTime": at(-3 * HOUR), "schedulingBlockedSince": at(-timedelta(minutes=50))}) == (
        7800.0, True)  # 2 h 10 min ran before the block; blocked when the time ran out


def test_a_blocked_episode_alone_times_out_even_before_the_clock_started() -> None:
    due = timed({"schedulingBlockedSince": at(-HOUR - timedelta(minutes=1))})
    assert due == (3660.0, True)
    state = job(RUNNING, workload_ref=True, status={"schedulingBlockedSince": at(-2 * HOUR)},
                annotations={"crefn.dev/timeout-per-job": "1h"})
    found = deadline(state, NOW, None)
    assert found is not None and found.message == "Job exceeded timeoutPerJob while its pods were unschedulable"


def test_a_workload_never_seen_running_does_not_time_out() -> None:
    """Pending or suspended (queued by Kueue): the queue time is not charged."""
    assert timed({}, workload_ref=True, created=-100 * HOUR) is None


def test_no_workload_yet_counts_from_the_jobs_creation() -> None:
    assert timed({}, workload_ref=False, created=-timedelta(minutes=59)) is None
    assert timed({}, workload_ref=False, created=-timedelta(minutes=61)) == (3660.0, False)


def test_terminal_jobs_and_unbounded_jobs_never_time_out() -> None:
    failed = [cond("Failed", "True", "WorkloadFailed", "x")]
    assert timed({"workloadStartTime": at(-10 * HOUR)}, conditions=failed) is None
    assert deadline(job(RUNNING, workload_ref=True, status={"workloadStartTime": at(-1000 * HOUR)}), NOW, None) is None
    found = deadline(job(RUNNING, workload_ref=True, status={"workloadStartTime": at(-3 * HOUR)}), NOW, 2 * HOUR)
    assert found is not None and found.message == "Job exceeded timeoutPerJob"


@pytest.mark.parametrize(("status", "blocked"), [
    ({"workloadStartTime": at(-2 * HOUR)}, False),
    ({"workloadStartTime": at(-3 * HOUR), "schedulingBlockedSince": at(-2 * HOUR)}, True),
    ({"workloadStartTime": at(-3 * HOUR), "schedulingBlockedSince": at(-timedelta(minutes=5))}, True),
], ids=["running", "blocked-episode", "ran-out-while-blocked"])
def test_a_deadline_carries_the_bound_it_ran_out(status: dict[str, str], blocked: bool) -> None:
    state = job(RUNNING, workload_ref=True, status=status, annotations={"crefn.dev/timeout-per-job": "1h"})
    due = deadline(state, NOW, None)
    assert due is not None and (due.timeout, due.blocked) == (HOUR, blocked)


@pytest.mark.parametrize(("status", "message"), [
    ({"workloadStartTime": at(-2 * HOUR)}, "Job exceeded timeoutPerJob"),
    ({"workloadStartTime": at(-3 * HOUR), "schedulingBlockedSince": at(-timedelta(minutes=5))},
     "Job exceeded timeoutPerJob while its pods were unschedulable"),
    ({"schedulingBlockedSince": at(-2 * HOUR)}, "Job exceeded timeoutPerJob while its pods were unschedulable"),
], ids=["not-blocked", "blocked-for-minutes-when-time-ran-out", "blocked-episode-alone"])
def test_the_message_is_cres_fail_timed_out_job(status: dict[str, str], message: str) -> None:
    """CRE's `failTimedOutJob`: the unschedulable message whenever the marker is set when time runs out,
    not only when the blocked episode alone exceeded the bound."""
    state = job(RUNNING, workload_ref=True, status=status, annotations={"crefn.dev/timeout-per-job": "1h"})
    due = deadline(state, NOW, None)
    assert due is not None and due.message == message


def test_a_blocked_episode_times_out_strictly_after_the_bound() -> None:
    assert timed({"schedulingBlockedSince": at(-HOUR)}) is None  # exactly the bound: not yet
    assert timed({"schedulingBlockedSince": at(-HOUR - timedelta(seconds=1))}) == (3601.0, True)


def test_a_job_with_no_creation_time_and_no_workload_is_not_charged() -> None:
    state = parse_job({"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "metadata": {"name": "llm"},
                       "spec": {"workload": {"trainJob": {}}}, "status": {"conditions": RUNNING}}, "nvcre.nvidia.com")
    assert state.job.metadata.creation_timestamp is None and elapsed(state, NOW) is None
