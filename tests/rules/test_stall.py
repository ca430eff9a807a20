"""Stall detection (CRE's `checkStallTimeout`): the formulas of `functions.rules.stall` as a truth table
over back-dated GoodputMeasurement status, their place in the running path (`functions.rules.running`),
then the lifecycle on the real API server: the test writes the measurement's status through its status
subresource (as CRE's GoodputMeasurement controller would), the tick or a measurement change makes
`status` find the stall, and `restart` restarts the Job from its checkpoint or fails it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from events.emitted import JobRef, WorkloadRef, WorkloadStalledData
from events.types import Phase
from functions.client import send
from functions.codec import to_envelope
from functions.resources import TRAINJOBS, cre_goodput
from functions.rules.measurements import GoodputMeasurement
from functions.rules.running import decide_running
from functions.rules.stall import Stall, decide_stall
from functions.rules.status import decide_status
from localstack.cluster.apiserver import LocalCluster
from localstack.eventing.apisource import apiserver_record
from tests.support.helpers import NOW, cond, job, job_events, pod
from tests.support.world import GROUP, World

GOODPUT = cre_goodput(GROUP)
RUNNING = [cond("InProgress", "True", "WorkloadRunning", "Workload TrainJob/llm-workload is running")]
UNSCHEDULABLE = ("False", "Unschedulable", "0/3 nodes are available: 1 Insufficient nvidia.com/gpu.")
S = timedelta(seconds=1)
# CRE's job_controller.go `checkStallTimeout`, verbatim
STARTUP_MESSAGE = "Workload stalled: no training step observed within startup timeout"
TRAINING_MESSAGE = "Workload stalled: no training step within the configured threshold"


def at(delta: timedelta, now: datetime = NOW) -> str:
    return (now + delta).strftime("%Y-%m-%dT%H:%M:%SZ")


def goodput(sample: str | None = None, **status: Any) -> GoodputMeasurement:
    spec: dict[str, Any] = {"jobRef": {"kind": "Job", "name": "llm"}, "logProfileRef": "nemo"}
    if sample is not None:
        spec["sampleInterval"] = sample
    return GoodputMeasurement.model_validate({"metadata": {"name": "llm-goodput", "namespace": "ns"}, "spec": spec,
                                              "status": status})


STEPPING = {"avgStepTimeSec": "2.5"}  # 10 x 2.5 s + 2 x 60 s = 145 s without a log interval


@pytest.mark.parametrize(("spec", "gm", "start", "resumed", "expected"), [
    ({}, goodput(lastStepTimestamp=at(-3600 * S), **STEPPING), None, None, None),
    ({"stallMultiplier": 10}, None, None, None, None),
    # startup mode: anchored at applicationStartTime, else startTime; 1200 s + 2 x 60 s
    ({"stallMultiplier": 10}, goodput(applicationStartTime=at(-1321 * S), startTime=at(-2 * 3600 * S)), None, None,
     ("startup", 1321, 1320)),
    ({"stallMultiplier": 10}, goodput(applicationStartTime=at(-1320 * S)), None, None, None),
    ({"stallMultiplier": 10}, goodput(startTime=at(-1321 * S)), None, None, ("startup", 1321, 1320)),
    ({"stallMultiplier": 10}, goodput(), None, None, None),
    ({"stallMultiplier": 10}, goodput(applicationStartTime=at(-7200 * S)), -600 * S, None, None),
    ({"stallMultiplier": 10}, goodput(applicationStartTime=at(-7200 * S)), -1400 * S, None, ("startup", 1400, 1320)),
    ({"stallMultiplier": 10}, goodput(applicationStartTime=at(-7200 * S)), -7200 * S, -300 * S, None),
    ({"stallMultiplier": 10}, goodput(applicationStartTime=at(-300 * S)), -7200 * S, -7200 * S, None),
    ({"stallMultiplier": 10, "startupStallTimeoutSeconds": 600}, goodput(applicationStartTime=at(-721 * S)), None,
     None, ("startup", 721, 720)),
    ({"stallMultiplier": 10}, goodput("1500ms", applicationStartTime=at(-1203 * S)), None, None,
     ("startup", 1203, 1202)),
    ({"stallMultiplier": 10}, goodput("45s", applicationStartTime=at(-1291 * S)), None, None, ("startup", 1291, 1290)),
    ({"stallMultiplier": 10}, goodput(lastStepTimestamp=at(-3600 * S), avgStepTimeSec="",
                                      applicationStartTime=at(-1321 * S)), None, None, ("startup", 1321, 1320)),
    # training mode: multiplier x avg x max(logInterval, 1) + 2 x sampleInterval
    ({"stallMultiplier": 10}, goodput(lastStepTimestamp=at(-146 * S), **STEPPING), None, None, ("training", 146, 145)),
    ({"stallMultiplier": 10}, goodput(lastStepTimestamp=at(-145 * S), **STEPPING), None, None, None),
    ({"stallMultiplier": 10}, goodput(lastStepTimestamp=at(-221 * S), logInterval=4, **STEPPING), None, None,
     ("training", 221, 220)),
    ({"stallMultiplier": 10}, goodput(lastStepTimestamp=at(-220 * S), logInterval=4, **STEPPING), None, None, None),
    ({"stallMultiplier": 3}, goodput(lastStepTimestamp=at(-128 * S), **STEPPING), None, None, ("training", 128, 127.5)),
    ({"stallMultiplier": 10}, goodput("30s", lastStepTimestamp=at(-86 * S), **STEPPING), None, None,
     ("training", 86, 85)),
    ({"stallMultiplier": 10}, goodput("1500ms", lastStepTimestamp=at(-29 * S), **STEPPING), None, None,
     ("training", 29, 28)),
    ({"stallMultiplier": 10}, goodput("often", lastStepTimestamp=at(-146 * S), **STEPPING), None, None,
     ("training", 146, 145)),
    ({"stallMultiplier": 10}, goodput(lastStepTimestamp=at(-3600 * S), avgStepTimeSec="0"), None, None, None),
    ({"stallMultiplier": 10}, goodput(lastStepTimestamp=at(-3600 * S), avgStepTimeSec="-1.5"), None, None, None),
    ({"stallMultiplier": 10}, goodput(lastStepTimestamp=at(-3600 * S), avgStepTimeSec="fast"), None, None, None),
    ({"stallMultiplier": 10}, goodput(lastStepTimestamp=at(-3600 * S), avgStepTimeSec="NaN"), None, None, None),
    ({"stallMultiplier": 10}, goodput(lastStepTimestamp=at(-246 * S), avgStepTimeSec="12.5s"), None, None,
     ("training", 246, 245)),  # CRE's parseStallFloat, fmt.Sscanf("%f"): "12.5s" is 12.5
    ({"stallMultiplier": 10}, goodput(lastStepTimestamp=at(-245 * S), avgStepTimeSec=" 12.5 s/step"), None, None,
     None),
    ({"stallMultiplier": 10}, goodput(lastStepTimestamp=at(-3600 * S), **STEPPING), None, -100 * S, None),
    ({"stallMultiplier": 10}, goodput(lastStepTimestamp=at(-3600 * S), **STEPPING), None, -146 * S,
     ("training", 146, 145)),
    ({"stallMultiplier": 10}, goodput(lastStepTimestamp=at(-3600 * S), **STEPPING), -60 * S, None,
     ("training", 3600, 145)),
], ids=["no-multiplier", "no-goodput", "startup-from-application-start", "startup-at-the-bound",
        "startup-from-start-time", "startup-no-anchor-yet", "startup-clamped-to-workload-start",
        "startup-past-a-later-workload-start", "startup-clamped-to-resumed", "startup-anchor-after-both",
        "startup-timeout-configured", "startup-sample-interval-whole-seconds", "startup-sample-interval",
        "startup-steps-without-average", "training", "training-at-the-bound", "training-log-interval",
        "training-log-interval-at-the-bound", "training-fractional-threshold", "training-sample-interval",
        "training-sample-interval-fraction", "training-sample-interval-unreadable", "training-average-zero",
        "training-average-negative", "training-average-unparseable", "training-average-not-finite",
        "training-average-with-unit", "training-average-with-unit-at-the-bound",
        "training-resumed-since", "training-resumed-long-ago", "training-not-clamped-to-workload-start"])
def test_stall_formulas(spec: dict[str, Any], gm: GoodputMeasurement | None, start: timedelta | None,
                        resumed: timedelta | None, expected: tuple[str, float, float] | None) -> None:
    state = job(RUNNING, workload_ref=True, spec=spec)
    stall = decide_stall(state.job, gm, None if start is None else NOW + start,
                         None if resumed is None else NOW + resumed, NOW)
    if expected is None:
        assert stall is None
        return
    mode, elapsed, threshold = expected
    message = STARTUP_MESSAGE if mode == "startup" else TRAINING_MESSAGE
    assert stall == Stall(mode, elapsed, threshold, message)


# -- the running path: blocked, then stalled, then running ---------------------------------------

MONITORED = {"stallMultiplier": 10}
STALE = goodput(lastStepTimestamp=at(-3600 * S), **STEPPING)


def test_a_blocked_workload_is_never_judged_stalled() -> None:
    state = job(RUNNING, workload_ref=True, spec=MONITORED, status={"workloadStartTime": at(-7200 * S)})
    decided = decide_running(state, [pod(scheduled=UNSCHEDULABLE)], "llm-workload", NOW, STALE)
    assert decided.stall is None and decided.fields == {"schedulingBlockedSince": at(timedelta(0))}


def test_a_stall_on_the_first_running_sight_writes_nothing() -> None:
    """CRE: a Job found stalled on its first Running observation never persists workloadStartTime."""
    state = job([cond("InProgress", "True", "WorkloadCreated", "created")], workload_ref=True, spec=MONITORED)
    decided = decide_running(state, [], "llm-workload", NOW, STALE)
    assert decided.stall is not None and decided.stall.mode == "training"
    assert decided.condition is None and decided.fields == {}


def test_the_first_running_sight_clamps_the_startup_anchor_to_now() -> None:
    """A workload queued for hours (Kueue) starts its startup budget when it is first seen running."""
    state = job([cond("InProgress", "True", "WorkloadPending", "pending")], workload_ref=True, spec=MONITORED)
    decided = decide_running(state, [], "llm-workload", NOW, goodput(startTime=at(-7200 * S)))
    assert decided.stall is None and decided.fields == {"workloadStartTime": at(timedelta(0))}


def test_the_recovery_from_a_block_restarts_the_stall_clocks() -> None:
    state = job(RUNNING, workload_ref=True, spec=MONITORED,
                status={"workloadStartTime": at(-7200 * S), "schedulingBlockedSince": at(-3000 * S)})
    decided = decide_running(state, [], "llm-workload", NOW, STALE)
    assert decided.stall is None and decided.fields["schedulingResumedTime"] == at(timedelta(0))


def test_status_returns_the_stall_for_running_and_never_for_pending() -> None:
    state = job(RUNNING, workload_ref=True, spec=MONITORED, status={"workloadStartTime": at(-7200 * S)})
    args = ("llm-workload", "", NOW, "nvcre.nvidia.com", "status", (), STALE)
    stalled = decide_status(state, Phase.RUNNING, *args)
    assert isinstance(stalled, Stall) and stalled.message == TRAINING_MESSAGE
    pending = decide_status(state, Phase.PENDING, *args)
    assert isinstance(pending, tuple) and pending[1] is not None and pending[1].reason == "WorkloadPending"


# -- on the real API server ----------------------------------------------------------------------

def now_at(delta: timedelta) -> str:
    return at(delta, datetime.now(UTC))


def create_job(w: World, max_restarts: int | None = None, goodput_spec: bool = False, nodes: str = "") -> None:
    """A Job with stall detection (`stallMultiplier: 10`); `goodput_spec`: `measurements` creates its
    GoodputMeasurement (`spec.goodputMeasurement` has no sampleInterval, so the restart grace is the
    setting's)."""
    spec: dict[str, Any] = {"workload": {"trainJob": {"runtimeRef": {"name": "torch-distributed"}}},
                            "stallMultiplier": 10}
    if max_restarts is not None:
        spec["checkpoint"] = {"pvcName": "llm-ckpt", "maxRestarts": max_restarts}
    if goodput_spec:
        spec["goodputMeasurement"] = {"logProfileRef": "nemo"}
    annotations = {f"{GROUP}/group-nodes": nodes} if nodes else {}
    w.gw.create(w.jobs, w.ns, {"apiVersion": f"{GROUP}/v1alpha1", "kind": "Job", "metadata": {
        "name": "llm", "labels": {"crefn.dev/managed": "true"}, "annotations": annotations}, "spec": spec})


def hand_made_goodput(w: World, **status: Any) -> None:
    """A GoodputMeasurement made by hand (as CRE's docs allow), with its status."""
    w.gw.create(GOODPUT, w.ns, {"apiVersion": f"{GROUP}/v1alpha1", "kind": "GoodputMeasurement",
                                "metadata": {"name": "llm-goodput", "labels": {f"{GROUP}/job": "llm"}},
                                "spec": {"jobRef": {"kind": "Job", "name": "llm"}, "logProfileRef": "nemo"}})
    if status:
        measure(w, **status)


def measure(w: World, **status: Any) -> None:
    """What CRE's GoodputMeasurement controller writes: a merge patch of the status subresource."""
    w.gw.patch(GOODPUT, w.ns, "llm-goodput", {"status": status}, status=True)


def stalled_training(checkpoint_step: int = 0, average: str = "2.5") -> dict[str, Any]:
    """Steps of 2.5 s logged every 4 (threshold 10 x 2.5 x 4 + 120 = 220 s), the last 5 minutes ago."""
    return {"avgStepTimeSec": average, "logInterval": 4, "lastStepTimestamp": now_at(-300 * S),
            "startTime": now_at(-3600 * S), "applicationStartTime": now_at(-3500 * S),
            "lastCheckpointStep": checkpoint_step}


def stalled_record(ns: str, attempt: int = 0, uid: str = "") -> dict[str, Any]:
    """A `dev.crefn.workload.stalled` event as `status` sends it."""
    data = WorkloadStalledData(job=JobRef(name="llm", namespace=ns),
                               workload=WorkloadRef(api_version="trainer.kubeflow.org/v1alpha1", kind="TrainJob",
                                                    name="llm-workload", namespace=ns, uid=uid, attempt=attempt),
                               mode="training", elapsed_seconds=300, threshold_seconds=220, message=TRAINING_MESSAGE)
    return {"attributes": {"specversion": "1.0", "id": "s", "source": "/crefn/status",
                           "type": "dev.crefn.workload.stalled", "subject": f"{ns}/llm", "namespace": ns,
                           "job": "llm", "partitionkey": f"{ns}/llm"},
            "data": data.model_dump(mode="json", by_alias=True)}


def condition(w: World, type_: str) -> dict[str, Any]:
    return next(c for c in w.job()["status"]["conditions"] if c["type"] == type_)


def test_a_stall_restarts_the_job_from_its_checkpoint_and_resets_the_goodput(
        world: Callable[..., World], functions: Callable[..., dict[str, str]]) -> None:
    w = world(functions(CREFN_RESTART_GRACE_SECONDS="30"))  # the grace holds the next attempt back
    create_job(w, max_restarts=2, goodput_spec=True)
    w.settle()
    assert w.gw.get(GOODPUT, w.ns, "llm-goodput") is not None  # created by `measurements`
    assert w.final() == ("InProgress", "WorkloadRunning", 0)  # no step, no anchor yet: nothing to judge
    measure(w, **stalled_training(checkpoint_step=1200))
    w.tick()  # nothing changed but time: the tick re-drives the running Job
    w.settle()
    assert ("crefn-restart-stalls", "dev.crefn.job.restarted") in w.replies()
    assert any(type_ == "dev.crefn.workload.stalled" for _, type_ in w.replies())
    assert w.final() == ("InProgress", "WorkloadRestarting", 1)
    assert condition(w, "InProgress")["message"] == "Restarting workload from checkpoint (restart 1/2)"
    assert w.trainjob() is None  # the stalled attempt was deleted; the next waits for its grace
    status = (w.gw.get(GOODPUT, w.ns, "llm-goodput") or {})["status"]
    assert "lastStepTimestamp" not in status and "applicationStartTime" not in status
    assert status["avgStepTimeSec"] == "" and status["lastCheckpointStep"] == 1200
    started = datetime.fromisoformat(status["startTime"].replace("Z", "+00:00"))
    assert abs(started - datetime.now(UTC)) < timedelta(seconds=60)
    assert "failureLog" not in w.job()["status"]


@pytest.mark.parametrize("average", ["2.5", "2.5s"], ids=["number", "with-unit"])
def test_a_stall_without_a_checkpoint_fails_the_job(world: Callable[..., World], average: str) -> None:
    """`2.5s` is read as CRE's `parseStallFloat` reads it (`fmt.Sscanf("%f")`): 2.5, the same stall."""
    w = world()
    create_job(w, nodes="gpu-node-02,gpu-node-01")
    hand_made_goodput(w)
    w.settle()
    w.trainer("run")  # the pods run
    w.settle()
    assert "workloadStartTime" in w.job()["status"]
    measure(w, **stalled_training(average=average))
    w.tick()
    w.settle()
    assert w.final() == ("Failed", "WorkloadStalled", 0)
    assert condition(w, "Failed")["message"] == TRAINING_MESSAGE
    status = w.job()["status"]
    assert status["failedNodes"] == [{"name": n, "reason": "WorkloadFailed", "message": TRAINING_MESSAGE}
                                     for n in ("gpu-node-01", "gpu-node-02")]
    assert status["failureLog"]["reason"] == "NoTerminatedContainer"  # running pods, none failed
    events = job_events(w.gw, w.ns)
    assert [(e["type"], e["reason"]) for e in events] == [("Normal", "WorkloadCreated"), ("Warning", "WorkloadStalled")]
    assert events[-1]["message"] == TRAINING_MESSAGE
    assert ("crefn-restart-stalls", "dev.crefn.job.condition.changed") in w.replies()
    assert w.trainjob() is not None  # as CRE: the Job fails, its TrainJob is kept


def test_a_job_stalled_on_its_first_running_sight_never_records_its_start(world: Callable[..., World]) -> None:
    w = world()
    hand_made_goodput(w, **stalled_training())  # the measurement of an earlier run, never reset
    create_job(w)
    w.settle()
    status = w.job()["status"]
    assert w.final() == ("Failed", "WorkloadStalled", 0)
    assert "workloadStartTime" not in status
    assert status["failureLog"]["reason"] == "PodNotFound"  # no pod was ever made


def test_a_goodput_change_reaches_status_through_phase(world: Callable[..., World]) -> None:
    """Startup mode: the application started, no step for longer than 1200 s + 120 s since the workload
    started (its back-dated workloadStartTime is later than the measurement's anchors)."""
    w = world()
    create_job(w)
    hand_made_goodput(w)
    w.settle()
    w.gw.patch(w.jobs, w.ns, "llm", {"status": {"workloadStartTime": now_at(-1500 * S)}}, status=True)
    w.settle()
    measure(w, startTime=now_at(-7200 * S), applicationStartTime=now_at(-3600 * S))
    gm = w.gw.get(GOODPUT, w.ns, "llm-goodput")
    assert gm is not None
    w.broker.publish(apiserver_record("update", gm, GOODPUT, w.gw.host))  # the crefn-goodput source
    w.settle()
    assert ("crefn-phase-goodput", "dev.crefn.workload.phase") in w.replies()
    assert w.final() == ("Failed", "WorkloadStalled", 0)
    assert condition(w, "Failed")["message"] == STARTUP_MESSAGE


def restart_decides(cluster: LocalCluster, record: dict[str, Any]) -> str:
    """What `restart` decides for an event, in process (a 202's reason is logged, not answered)."""
    from functions.context import Context
    from functions.handlers import restart
    from functions.settings import Settings

    ctx = Context(Settings(kubeconfig=str(cluster.kubeconfig)))
    plan = restart.decide(restart.read(to_envelope(record), ctx), ctx.settings, ctx.clock())
    assert not plan.effects and plan.reply is None
    return plan.reason


def test_stale_and_recovered_stall_events_change_nothing(world: Callable[..., World], cluster: LocalCluster,
                                                         functions: Callable[..., dict[str, str]]) -> None:
    urls = functions()
    w = world(urls)
    create_job(w, max_restarts=2)
    hand_made_goodput(w, avgStepTimeSec="2.5", lastStepTimestamp=now_at(-10 * S), lastCheckpointStep=100)
    w.settle()
    before = w.job()["metadata"]["resourceVersion"]
    cases = [(stalled_record(w.ns), "is not stalled on a fresh read"),
             (stalled_record(w.ns, attempt=3), "stale: TrainJob llm-workload attempt 3 is not the current attempt"),
             (stalled_record(w.ns, uid="not-the-trainjob"), "is not running on a fresh read")]
    for record, why in cases:
        assert send(urls["restart"], record).status == 202
        assert why in restart_decides(cluster, record)
    assert w.job()["metadata"]["resourceVersion"] == before
    w.trainer("suspend")
    w.settle()
    measure(w, lastStepTimestamp=now_at(-3600 * S))  # stale steps, but the workload is not running
    assert send(urls["restart"], stalled_record(w.ns)).status == 202
    assert "is not running on a fresh read" in restart_decides(cluster, stalled_record(w.ns))
    assert w.final() == ("InProgress", "WorkloadPending", 0)
    assert (w.gw.get(TRAINJOBS, w.ns, "llm-workload") or {}).get("metadata", {}).get("deletionTimestamp") is None
