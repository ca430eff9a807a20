"""Stall detection: CRE's `checkStallTimeout` and `startupStallAnchor`, with its ADR-083 clamps. Pure.

Active only when the Job has `spec.stallMultiplier` and a GoodputMeasurement of the Job exists
(`functions.domain.measurement_objects.goodput_of`). Decided in the running path after the scheduling-blocked
check (`functions.domain.running`): never while blocked, never for a Pending workload. Its inputs are
the measurement's status as CRE's GoodputMeasurement controller writes it from the pods' logs.
Startup mode (no step seen yet) waits `startupStallTimeoutSeconds` (default 1200) + 2 * `sampleInterval`;
training mode `stallMultiplier` * `avgStepTimeSec` * max(`logInterval`, 1) + 2 * `sampleInterval`; the
interval no shorter than the producer's cadence (the `measure` tick's minute, when the functions produce).
Stalled when the elapsed time is strictly longer than the bound. Anchors, clamps, defaults and
messages: docs/functions.md#stall-bounds
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from events.objects import CreJob
from functions.domain.measurement_objects import GoodputMeasurement
from functions.runtime.durations import go_float, parse_go_duration
from functions.runtime.settings import Settings

DEFAULT_STARTUP_TIMEOUT_SECONDS = 1200
DEFAULT_SAMPLE_INTERVAL = timedelta(seconds=60)
MEASURE_CADENCE = timedelta(seconds=60)
"""How often the functions' `measure` samples (its PingSource: a minute), whatever `sampleInterval` asks."""
STARTUP_MESSAGE = "Workload stalled: no training step observed within startup timeout"
TRAINING_MESSAGE = "Workload stalled: no training step within the configured threshold"


@dataclass(frozen=True)
class Stall:
    """A stalled workload: which mode found it, how long since its anchor, the bound, the message."""

    mode: Literal["startup", "training"]
    elapsed_seconds: float
    threshold_seconds: float
    message: str


def sample_interval(gm: GoodputMeasurement) -> timedelta:
    """The measurement's `spec.sampleInterval` (a Go duration), 60 s when unset or unreadable."""
    return interval_of(gm.spec.sample_interval)


def interval_of(text: str) -> timedelta:
    """A `spec.sampleInterval` as written (a Go duration), 60 s when unset or unreadable."""
    if not text:
        return DEFAULT_SAMPLE_INTERVAL
    try:
        return parse_go_duration(text)
    except ValueError:
        return DEFAULT_SAMPLE_INTERVAL


def average_step(text: str) -> float:
    """`avgStepTimeSec` as CRE reads it (`parseStallFloat`: Go's `fmt.Sscanf(s, "%f")`, so `12.5s` is
    12.5); 0 when it does not start with a number or is not finite (no training-mode check then)."""
    value = go_float(text)
    return value if math.isfinite(value) else 0.0


def startup_anchor(gm: GoodputMeasurement, workload_start: datetime | None,
                   resumed: datetime | None) -> datetime | None:
    """Where the startup budget is counted from, or None when it cannot be counted yet."""
    since = gm.status.application_start_time or gm.status.start_time
    if since is None:
        return None
    for later in (workload_start, resumed):
        if later is not None and later > since:
            since = later
    return since


def decide_stall(job: CreJob, gm: GoodputMeasurement | None, workload_start: datetime | None,
                 resumed: datetime | None, now: datetime, cadence: timedelta = timedelta(0)) -> Stall | None:
    """Whether the running workload of the Job has stalled. `workload_start`: the persisted
    `workloadStartTime`, or now when this observation is the first to see the workload running;
    `resumed`: `schedulingResumedTime` (now on the observation that ends a scheduling block); `cadence`: how
    often the measurement is sampled at the least (0: as its `sampleInterval` says, CRE's own producer)."""
    interval = max(sample_interval(gm), cadence).total_seconds() if gm is not None else 0.0
    multiplier = job.spec.stall_multiplier
    if multiplier is None or gm is None:
        return None
    status = gm.status
    if status.last_step_timestamp is None or status.avg_step_time_sec == "":
        since = startup_anchor(gm, workload_start, resumed)
        if since is None:
            return None
        configured = job.spec.startup_stall_timeout_seconds
        seconds = DEFAULT_STARTUP_TIMEOUT_SECONDS if configured is None else configured
        timeout = float(seconds + 2 * int(interval))
        elapsed = (now - since).total_seconds()
        return Stall("startup", elapsed, timeout, STARTUP_MESSAGE) if elapsed > timeout else None
    avg = average_step(status.avg_step_time_sec)
    if avg <= 0:
        return None
    threshold = multiplier * avg * max(status.log_interval, 1) + 2 * interval
    last = status.last_step_timestamp
    if resumed is not None and resumed > last:
        last = resumed
    elapsed = (now - last).total_seconds()
    return Stall("training", elapsed, threshold, TRAINING_MESSAGE) if elapsed > threshold else None


def producer_cadence(settings: Settings) -> timedelta:
    """How often the measurements are sampled at the least: in manage mode the functions' `measure` samples them
    (once a tick), in observe mode CRE's controller does (at their `sampleInterval`)."""
    return timedelta(0) if settings.observe else MEASURE_CADENCE
