"""Stall detection (CRE's `checkStallTimeout`): the formulas of `functions.domain.stall` as a truth table
over back-dated GoodputMeasurement status, and their place in the running path (`functions.domain.running`).
The lifecycle on the real API server: tests/functions/restart/test_read.py and test_phase.py."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from events.types import Phase
from functions.domain.measurement_objects import GoodputMeasurement
from functions.domain.phase_conditions import decide_status
from functions.domain.running import decide_running
from functions.domain.stall import Stall, decide_stall, producer_cadence
from functions.runtime.settings import Settings
from tests.support.helpers import NOW, cond, job, pod
from tests.support.stall import STARTUP_MESSAGE, TRAINING_MESSAGE, S, at

RUNNING = [cond("InProgress", "True", "WorkloadRunning", "Workload TrainJob/llm-workload is running")]
UNSCHEDULABLE = ("False", "Unschedulable", "0/3 nodes are available: 1 Insufficient nvidia.com/gpu.")


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


def test_a_producer_sampling_once_a_minute_widens_a_shorter_intervals_slack() -> None:
    """The functions' `measure` samples once a tick: a `30s` measurement's step can be a minute late to its status,
    so its slack is 2 x 60 s, not CRE's 2 x 30 s (no false stall); a longer interval keeps its own."""
    running = job(RUNNING, spec={"stallMultiplier": 10})
    late = goodput("30s", lastStepTimestamp=at(-120 * S), **STEPPING)
    assert decide_stall(running.job, late, None, None, NOW) == Stall("training", 120, 85, TRAINING_MESSAGE)
    assert decide_stall(running.job, late, None, None, NOW, timedelta(seconds=60)) is None
    stalled = goodput("30s", lastStepTimestamp=at(-146 * S), **STEPPING)
    assert decide_stall(running.job, stalled, None, None, NOW, timedelta(seconds=60)) == Stall(
        "training", 146, 145, TRAINING_MESSAGE)
    slow = goodput("2m", lastStepTimestamp=at(-266 * S), **STEPPING)
    assert decide_stall(running.job, slow, None, None, NOW, timedelta(seconds=60)) == Stall(
        "training", 266, 265, TRAINING_MESSAGE)
    starting = goodput("30s", applicationStartTime=at(-1300 * S))
    assert decide_stall(running.job, starting, None, None, NOW, timedelta(seconds=60)) is None  # 1200 + 2 x 60


def test_the_functions_produce_the_measurements_in_manage_mode_only() -> None:
    assert producer_cadence(Settings()) == timedelta(seconds=60)
    assert producer_cadence(Settings(mode="observe")) == timedelta(0)
