"""A GoodputMeasurement's accounting as CRE's controller keeps it between samples, rebuilt from the status alone
(CRE's `getOrCreateState` and `buildCumulativeFromStatus`, the path of its own restarts) and written back
(`writeStatusFromCumulative`): seconds as Go's `%f` strings, times at the second (a `metav1.Time`), steps and
counts as integers. A stateless producer always recovers; where CRE's memory is lost (the read anchor, a save
start waiting for its done line) the gap is said in docs/deviations.md. Times are nanoseconds. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from functions.domain.goodput import go_f6, status_number
from functions.domain.gotime import NS, RFC3339_NANO, Unparsed, parse, rfc3339


@dataclass
class Interruption:
    """`status.pendingInterruption`: an interruption whose next run has not logged its first step yet."""

    interrupted: int
    checkpoint_time: int | None
    checkpoint_step: int
    last_step: int
    lost: float
    reason: str


@dataclass
class Figures:
    """The cumulative seconds of the status."""

    training: float = 0.0
    lost_work: float = 0.0
    reschedule: float = 0.0
    resume: float = 0.0
    saving: float = 0.0
    warmup: float = 0.0
    non_warmup: float = 0.0
    prior_warmup: float = 0.0
    prior_non_warmup: float = 0.0


FIGURES = {"training": "trainingTimeSec", "lost_work": "lostWorkTimeSec", "reschedule": "rescheduleTimeSec",
           "resume": "resumeTimeSec", "saving": "checkpointSaveTimeSec", "warmup": "warmupTimeSec",
           "non_warmup": "nonWarmupTimeSec", "prior_warmup": "priorWarmupTimeSec",
           "prior_non_warmup": "priorNonWarmupTimeSec"}


@dataclass
class State:
    """CRE's JobState and cumulative metrics of one measurement."""

    started: bool = False
    start_time: int | None = None
    current_step: int = 0
    highest_step: int = 0
    last_checkpoint_step: int = 0
    last_checkpoint_time: int | None = None
    counted_checkpoint_step: int = 0
    last_non_warmup_step: int = 0
    warmup_base_step: int | None = None
    application_start: int | None = None
    application_stop: int | None = None
    last_step_timestamp: int | None = None
    avg_step_time: str = ""
    avg_tflops: str = ""
    log_interval: int = 0
    interruptions: int = 0
    pending: Interruption | None = None
    result: str = ""
    figures: Figures = field(default_factory=Figures)


def when(text: Any) -> int | None:
    """A status time as nanoseconds (None when absent or unreadable)."""
    try:
        return parse(RFC3339_NANO, str(text))
    except Unparsed:
        return None


def stamp(ns: int | None) -> str | None:
    """A time as the status holds it: RFC 3339 at the second (`metav1.Time`)."""
    return None if ns is None else rfc3339(ns - ns % NS)


def recover(status: Mapping[str, Any]) -> State:
    pending = status.get("pendingInterruption")
    interrupted = when((pending or {}).get("tInterrupt"))
    checkpoint_time = when(status.get("lastCheckpointTime")) or when((pending or {}).get("tCheckpoint"))
    base = status.get("warmupBaseStep")
    state = State(
        start_time=when(status.get("startTime")), current_step=int(status.get("currentStep") or 0),
        highest_step=int(status.get("highestStep") or 0),
        last_checkpoint_step=int(status.get("lastCheckpointStep") or 0), last_checkpoint_time=checkpoint_time,
        counted_checkpoint_step=int(status.get("lastCheckpointStep") or 0),
        last_non_warmup_step=int(status.get("lastNonWarmupStep") or 0),
        warmup_base_step=None if base is None else int(base),
        application_start=when(status.get("applicationStartTime")),
        application_stop=when(status.get("applicationStopTime")),
        last_step_timestamp=when(status.get("lastStepTimestamp")),
        avg_step_time=str(status.get("avgStepTimeSec") or ""), avg_tflops=str(status.get("avgTFLOPSPerGPU") or ""),
        log_interval=int(status.get("logInterval") or 0), interruptions=int(status.get("interruptionCount") or 0),
        result=str(status.get("result") or ""),
        pending=None if pending is None or interrupted is None else Interruption(
            interrupted, when(pending.get("tCheckpoint")), int(pending.get("checkpointStep") or 0),
            int(pending.get("lastStep") or 0), status_number(pending.get("tCh")), str(pending.get("reason") or "")),
        figures=Figures(**{name: status_number(status.get(key)) for name, key in FIGURES.items()}))
    state.started = state.warmup_base_step is not None and state.pending is None
    return state


def written(state: State) -> dict[str, Any]:
    """The status fields a sample writes (a merge patch: None removes a field)."""
    pending = state.pending
    out: dict[str, Any] = {key: go_f6(getattr(state.figures, name)) for name, key in FIGURES.items()}
    out |= {"result": state.result or None, "currentStep": state.current_step, "highestStep": state.highest_step,
            "lastCheckpointStep": state.last_checkpoint_step, "interruptionCount": state.interruptions,
            "lastNonWarmupStep": state.last_non_warmup_step, "warmupBaseStep": state.warmup_base_step,
            "logInterval": state.log_interval, "startTime": stamp(state.start_time),
            "applicationStartTime": stamp(state.application_start),
            "applicationStopTime": stamp(state.application_stop),
            "lastCheckpointTime": stamp(state.last_checkpoint_time),
            "lastStepTimestamp": stamp(state.last_step_timestamp), "avgStepTimeSec": state.avg_step_time or None,
            "avgTFLOPSPerGPU": state.avg_tflops or None,
            "pendingInterruption": None if pending is None else {
                "tInterrupt": stamp(pending.interrupted), "tCheckpoint": stamp(pending.checkpoint_time),
                "checkpointStep": pending.checkpoint_step, "lastStep": pending.last_step, "tCh": go_f6(pending.lost),
                "reason": pending.reason}}
    return out

