"""Scheduling-blocked workloads (CRE's ADR-083) on the real API server: pods the scheduler could not
place pause the Job's clocks at once, say `WorkloadSchedulingBlocked` past the grace, and on recovery
shift `workloadStartTime` so the runtime consumed before the block is kept. Pod states are written
through `pods/status` and `pods/binding`, as the scheduler would; timestamps are back-dated."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from functions.runtime.client import send
from localstack.cluster.pods import UNSCHEDULABLE, bind, create_pod, set_running, set_unschedulable
from tests.support.helpers import job_events
from tests.support.world import World, phase_record

LABELS = {"nvcre.nvidia.com/job": "llm", "crefn.dev/attempt": "0", "crefn.dev/managed": "true"}
Scheduled = tuple[str, str, str] | None
BLOCKED_MESSAGE = f"Workload pods are unschedulable: {UNSCHEDULABLE}"


def stamp(delta: timedelta = timedelta(0)) -> str:
    return (datetime.now(UTC) + delta).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


CREATED = {"type": "InProgress", "status": "True", "reason": "WorkloadCreated",
           "message": "Workload TrainJob/llm-workload created and is starting"}


def launched(world: Callable[..., World], pods: Callable[[World], None] = lambda w: None) -> World:
    """A Job whose TrainJob runs (a new TrainJob is Running to the adapter) and whose first Running sight is
    `status`'s, on the events of `pods`, made then. `launch` writes the first phase of the TrainJob it
    creates (no pod exists then); the Job is put back as it was before that write (`WorkloadCreated`, no
    `workloadStartTime`), as for a TrainJob `status` has not seen yet (one adopted from CRE, say)."""
    w = world()
    w.create_job(max_restarts=0)
    w.settle()
    assert w.job()["status"]["workloadRef"]["name"] == "llm-workload"
    assert "workloadStartTime" in w.job()["status"]  # launch's first phase: no pods, not blocked
    conditions = [{**c, **CREATED} if c["type"] == "InProgress" else c for c in w.job()["status"]["conditions"]]
    w.gw.patch(w.jobs, w.ns, "llm", {"status": {"workloadStartTime": None, "conditions": conditions}}, status=True)
    pods(w)
    w.settle()
    if reason(w.job()["status"])[0] == "WorkloadCreated":  # no pod event for status: the tick re-drives the Job
        w.tick()
    return w


def unschedulable(name: str) -> Callable[[World], None]:
    def make(w: World) -> None:
        create_pod(w.gw, w.ns, name, LABELS)
        set_unschedulable(w.gw, w.ns, name)
    return make


def running(w: World, urls: dict[str, str]) -> tuple[int, dict[str, Any]]:
    """`status` told the workload is Running (what `phase` sends for any TrainJob or pod change)."""
    answer = send(urls["status"], phase_record(w.ns, "llm", "Running"))
    assert answer.status in (200, 202), answer.text
    return answer.status, w.job()["status"]


def back_date(w: World, **fields: str) -> None:
    w.gw.patch(w.jobs, w.ns, "llm", {"status": fields}, status=True)


def reason(status: dict[str, Any]) -> tuple[str, str]:
    true = next(c for c in status["conditions"] if c["status"] == "True")
    return true["reason"], true["message"]


def test_blocked_then_scheduled(world: Callable[..., World], functions: Callable[..., dict[str, str]]) -> None:
    w, urls = launched(world, unschedulable("llm-workload-node-0-0")), functions()
    status = w.job()["status"]
    assert "schedulingBlockedSince" in status and "workloadStartTime" not in status
    # CRE's `checkSchedulingBlocked` on the first sight: the marker with `WorkloadRunning`, its running text
    assert reason(status) == ("WorkloadRunning", "Workload TrainJob/llm-workload is running")
    first = status["schedulingBlockedSince"]
    code, status = running(w, urls)  # seen again: the marker stays as first set
    assert code == 202 and status["schedulingBlockedSince"] == first

    back_date(w, schedulingBlockedSince=stamp(-timedelta(seconds=301)))
    code, status = running(w, urls)
    assert code == 200 and reason(status) == ("WorkloadSchedulingBlocked", BLOCKED_MESSAGE)
    assert "workloadStartTime" not in status
    assert [e["reason"] for e in job_events(w.gw, w.ns)] == ["WorkloadCreated"]  # no flip, no Event

    bind(w.gw, w.ns, "llm-workload-node-0-0", "gpu-node-1")
    set_running(w.gw, w.ns, "llm-workload-node-0-0")
    code, status = running(w, urls)
    assert code == 200 and reason(status)[0] == "WorkloadRunning"
    assert "schedulingBlockedSince" not in status
    assert abs(parse(status["schedulingResumedTime"]) - datetime.now(UTC)) < timedelta(seconds=30)
    assert parse(status["workloadStartTime"]) == parse(status["schedulingResumedTime"])


@pytest.mark.parametrize(("messages", "said"), [
    (("",), "Workload pods are unschedulable"),
    (("", "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.", UNSCHEDULABLE),
     "Workload pods are unschedulable: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu."),
], ids=["no-scheduler-message", "first-non-empty-message"])
def test_the_blocked_message_is_cres(world: Callable[..., World], functions: Callable[..., dict[str, str]],
                                     messages: tuple[str, ...], said: str) -> None:
    """CRE's `checkSchedulingBlocked` text (ADR-083; `scheduling_stall_test.go` "blocked with generic
    message"): exactly `Workload pods are unschedulable` when no blocked pod's PodScheduled condition has a
    message, else `: ` and the first non-empty one, in pod order."""
    def make(w: World) -> None:
        for i, message in enumerate(messages):
            create_pod(w.gw, w.ns, f"llm-workload-node-0-{i}", LABELS)
            set_unschedulable(w.gw, w.ns, f"llm-workload-node-0-{i}", message=message)

    w, urls = launched(world, make), functions()
    back_date(w, schedulingBlockedSince=stamp(-timedelta(seconds=300)))
    code, status = running(w, urls)
    assert code == 200 and reason(status) == ("WorkloadSchedulingBlocked", said)


def test_recovery_keeps_the_runtime_consumed(world: Callable[..., World],
                                             functions: Callable[..., dict[str, str]]) -> None:
    """Ran 49 minutes, then blocked for 10: still 49 minutes consumed after the recovery."""
    w, urls = launched(world), functions()
    create_pod(w.gw, w.ns, "llm-workload-node-0-0", LABELS, node="gpu-node-1")
    set_running(w.gw, w.ns, "llm-workload-node-0-0")
    back_date(w, workloadStartTime=stamp(-timedelta(minutes=59)), schedulingBlockedSince=stamp(-timedelta(minutes=10)))
    _, status = running(w, urls)
    resumed = parse(status["schedulingResumedTime"])
    assert resumed - parse(status["workloadStartTime"]) == timedelta(minutes=49)
    assert "schedulingBlockedSince" not in status and reason(status)[0] == "WorkloadRunning"


@pytest.mark.parametrize(("pods", "blocked"), [
    ([("gated", "", ("False", "SchedulingGated", "waiting for a ResourceClaim"))], False),
    ([("fresh", "", None)], False),
    ([("placed", "gpu-node-1", ("True", "", "")), ("stuck", "", ("False", "Unschedulable", UNSCHEDULABLE))], True),
    ([], False),
], ids=["gated", "no-condition-yet", "one-blocked-among-running", "no-pods"])
def test_which_pods_count_as_blocked(world: Callable[..., World], pods: list[tuple[str, str, Scheduled]],
                                     blocked: bool) -> None:
    def make(w: World) -> None:
        for name, node, scheduled in pods:
            create_pod(w.gw, w.ns, name, LABELS, node=node)
            if node:
                set_running(w.gw, w.ns, name)
            elif scheduled is not None:
                set_unschedulable(w.gw, w.ns, name, message=scheduled[2], reason=scheduled[1])

    w = launched(world, make)
    status = w.job()["status"]
    assert ("schedulingBlockedSince" in status) is blocked
    assert ("workloadStartTime" in status) is not blocked


def test_pods_of_another_attempt_or_job_are_not_looked_at(world: Callable[..., World]) -> None:
    def make(w: World) -> None:
        for name, labels in (("old", {**LABELS, "crefn.dev/attempt": "7"}),
                             ("other", {**LABELS, "nvcre.nvidia.com/job": "x"})):
            create_pod(w.gw, w.ns, name, labels)
            set_unschedulable(w.gw, w.ns, name)

    status = launched(world, make).job()["status"]
    assert "schedulingBlockedSince" not in status and "workloadStartTime" in status


def test_a_pod_change_reaches_the_job_through_phase(world: Callable[..., World]) -> None:
    """The Pod source's events: `phase` re-sends the TrainJob's phase, `status` re-decides with the pods."""
    w = launched(world)
    assert "workloadStartTime" in w.job()["status"]
    create_pod(w.gw, w.ns, "llm-workload-node-0-0", LABELS)
    set_unschedulable(w.gw, w.ns, "llm-workload-node-0-0")
    w.settle()
    status = w.job()["status"]
    assert "schedulingBlockedSince" in status
    assert any(o.trigger == "crefn-phase-pods" and o.status == 200 for o in w.broker.outcomes)
    bind(w.gw, w.ns, "llm-workload-node-0-0", "gpu-node-1")
    set_running(w.gw, w.ns, "llm-workload-node-0-0")
    w.settle()
    status = w.job()["status"]
    assert "schedulingBlockedSince" not in status and "schedulingResumedTime" in status
    assert reason(status)[0] == "WorkloadRunning"


def test_a_restart_clears_the_markers(world: Callable[..., World], functions: Callable[..., dict[str, str]]) -> None:
    w = world()
    w.create_job(max_restarts=2)
    w.checkpoint_evidence()
    w.settle()
    back_date(w, schedulingBlockedSince=stamp(-timedelta(minutes=3)), schedulingResumedTime=stamp(-timedelta(hours=1)))
    w.trainer("fail")
    w.settle()
    status = w.job()["status"]
    assert status["restartCount"] == 1
    assert "schedulingBlockedSince" not in status and "schedulingResumedTime" not in status
