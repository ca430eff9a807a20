"""A succeeded Job's performance thresholds → its `ValidationFailed` condition, as CRE's Job controller
decides them (`checkPerformanceThresholds`). Pure: `validate` reads the Job and its measurements and
passes `now`.

Only a Job with `spec.thresholds` is validated, once it is Succeeded and while it has no
`ValidationFailed` condition (`functions.domain.due.awaiting_validation`). In this order: an unknown
key ⇒ `UnknownThresholdKey`; the measured values (CRE's `collectJobMeasuredValues`); a key without a
value waits until `spec.measurementTimeout` (default 5m) after the success ⇒ `MeasurementTimeout`;
each threshold by key, a CEL expression on `value` evaluated by the handler (`functions.runtime.celbudget`),
the first failing deciding (`ThresholdViolated`, `InvalidThresholdExpression`); all met ⇒
`False`/`ThresholdsMet`. Messages are CRE's, with Go's formatting.
Each step, its texts and the two limits CRE does not have: docs/functions.md#thresholds-step-by-step
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from events.types import Reason
from functions.domain.cel import CelOutcome
from functions.domain.gotext import go_duration, go_list, go_quote
from functions.domain.measurement_objects import measures, measures_job
from functions.runtime.durations import go_float, positive_duration

BANDWIDTH_KEYS = ("busBandwidthGBps", "algBandwidthGBps")
GOODPUT_KEYS = ("goodputRatio", "avgTFLOPsPerGPU", "avgStepTimeSec")
VALID_KEYS = (*BANDWIDTH_KEYS, *GOODPUT_KEYS)
"""CRE's threshold registry, in its order (the order CRE's message lists them in)."""
DEFAULT_MEASUREMENT_TIMEOUT = timedelta(minutes=5)
BANDWIDTH_FINAL_REASON = "JobSucceeded"
"""The reason of a BandwidthMeasurement's `Complete` condition when its results are final (CRE's
`reasonBandwidthJobSucceeded`)."""
ALL_MET = "All performance thresholds satisfied"
_NOT_BOOL = "expression must return bool"
_GOODPUT_FIELDS = (("goodputRatio", "result"), ("avgTFLOPsPerGPU", "avgTFLOPSPerGPU"),
                   ("avgStepTimeSec", "avgStepTimeSec"))


@dataclass(frozen=True)
class Verdict:
    """What `ValidationFailed` becomes: True (`failed`) or False, with CRE's reason and message."""

    failed: bool
    reason: str
    message: str


@dataclass(frozen=True)
class Waiting:
    """Measurements are missing and the timeout has not run out."""

    missing: tuple[str, ...]
    timeout: timedelta
    left: timedelta

    @property
    def message(self) -> str:
        return (f"waiting for measurement data for keys: {go_list(self.missing)} "
                f"({go_duration(self.left)} of {go_duration(self.timeout)} left)")


def decide_validation(thresholds: Mapping[str, str], measured: Mapping[str, float], succeeded_at: datetime | None,
                      timeout: timedelta, now: datetime, outcomes: Mapping[str, CelOutcome]) -> Verdict | Waiting:
    """The verdict on a succeeded Job's thresholds (not empty), or how long to wait for measurements.
    `succeeded_at` is the Succeeded condition's lastTransitionTime (None: unreadable; CRE then counts
    the timeout as run out). `outcomes`: each threshold's outcome on its measured value, by key, once
    every key has a value (`to_evaluate`)."""
    if unknown := unknown_keys(thresholds):
        return Verdict(True, Reason.UNKNOWN_THRESHOLD_KEY,
                       f"unknown threshold key(s) [{', '.join(unknown)}]; valid keys: [{', '.join(VALID_KEYS)}]")
    if missing := tuple(sorted(k for k in thresholds if k not in measured)):
        waited = now - succeeded_at if succeeded_at is not None else None
        if waited is not None and waited <= timeout:
            return Waiting(missing, timeout, timeout - waited)
        return Verdict(True, Reason.MEASUREMENT_TIMEOUT,
                       f"Measurement data not available within {go_duration(timeout)} for keys: {go_list(missing)}")
    for key in sorted(thresholds):
        if violation := evaluate(key, thresholds[key], measured[key], outcomes[key]):
            return violation
    return Verdict(False, Reason.THRESHOLDS_MET, ALL_MET)


def unknown_keys(thresholds: Mapping[str, str]) -> list[str]:
    return sorted(k for k in thresholds if k not in VALID_KEYS)


def to_evaluate(thresholds: Mapping[str, str], measured: Mapping[str, float]) -> tuple[tuple[str, str, float], ...]:
    """(key, expression, value) of each threshold whose outcome the verdict needs, by key: all of them once
    every key has a value, else none (the verdict is then a wait or `MeasurementTimeout`)."""
    if unknown_keys(thresholds) or any(k not in measured for k in thresholds):
        return ()
    return tuple((key, thresholds[key], measured[key]) for key in sorted(thresholds))


def evaluate(key: str, expression: str, value: float, outcome: CelOutcome) -> Verdict | None:
    """The violation of one threshold by its measured value (the expression's outcome on it); None when it
    is met."""
    if outcome.failure == "length":
        return Verdict(True, Reason.INVALID_THRESHOLD_EXPRESSION, f"Threshold {go_quote(key)}: compile threshold "
                       f"expression ({len(expression)} characters): spec.thresholds.{key} {outcome.error}")
    if outcome.failure == "compile":
        return invalid(key, expression, outcome.error if outcome.error.startswith(_NOT_BOOL)
                       else f"compile: {outcome.error}")
    if outcome.failure:
        if outcome.error.startswith(_NOT_BOOL):  # compiled unchecked (see functions.domain.cel): cel-go rejects it
            return invalid(key, expression, outcome.error)
        return Verdict(True, Reason.INVALID_THRESHOLD_EXPRESSION, f"Threshold {go_quote(key)}: evaluate threshold "
                       f"expression {go_quote(expression)} with value={value:f}: {outcome.error}")
    if outcome.value:
        return None
    return Verdict(True, Reason.THRESHOLD_VIOLATED,
                   f"Threshold {go_quote(key)} violated: measured {value:.4f}, expression: {expression}")


def invalid(key: str, expression: str, reason: str) -> Verdict:
    return Verdict(True, Reason.INVALID_THRESHOLD_EXPRESSION,
                   f"Threshold {go_quote(key)}: compile threshold expression {go_quote(expression)}: {reason}")


def measured_values(job: str, uid: str, goodput: Sequence[Mapping[str, Any]],
                    bandwidth: Sequence[Mapping[str, Any]], group: str) -> dict[str, float]:
    """The values the Job's measurements (of any Job, in list order) give, by threshold key. A
    BandwidthMeasurement left by an earlier Job of the same name (its job-uid annotation names another
    uid) counts for nothing (CRE's `findJobBandwidthMeasurement`, `measuresJob`)."""
    values: dict[str, float] = {}
    bm = next((m for m in bandwidth if measures_job(m, job, uid, group)), None)
    if bm is not None and bandwidth_final(bm):
        results = [r for r in _status(bm)["results"] if isinstance(r, Mapping)]
        values["busBandwidthGBps"] = max([0.0, *(go_float(r.get("busBW")) for r in results)])
        values["algBandwidthGBps"] = max([0.0, *(go_float(r.get("algBW")) for r in results)])
    gm = next((m for m in goodput if measures(m, job)), None)
    if gm is not None and complete(gm):
        for key, field in _GOODPUT_FIELDS:
            if (value := go_float(_status(gm).get(field))) > 0:
                values[key] = value
    return values


def complete(measurement: Mapping[str, Any], reason: str = "") -> bool:
    """Whether its `Complete` condition is True (with `reason`, when given)."""
    return any(c.get("type") == "Complete" and c.get("status") == "True" and (not reason or c.get("reason") == reason)
               for c in _status(measurement).get("conditions") or [] if isinstance(c, Mapping))


def bandwidth_final(measurement: Mapping[str, Any]) -> bool:
    """CRE's `bandwidthFinal`: completed from the Job's full log after it succeeded, with results."""
    return complete(measurement, BANDWIDTH_FINAL_REASON) and bool(_status(measurement).get("results"))


def measurement_timeout(value: str | None) -> timedelta:
    """The Job's `spec.measurementTimeout`, or the default when it is unset or not a positive duration."""
    return positive_duration(value, DEFAULT_MEASUREMENT_TIMEOUT)


def succeeded_at(conditions: Sequence[Mapping[str, Any]]) -> datetime | None:
    """The lastTransitionTime of the Job's Succeeded condition when it is True (None: not so, or unreadable)."""
    cond = next((c for c in conditions if c.get("type") == "Succeeded" and c.get("status") == "True"), None)
    try:
        return datetime.fromisoformat(str((cond or {}).get("lastTransitionTime") or ""))
    except ValueError:
        return None


def _status(measurement: Mapping[str, Any]) -> Mapping[str, Any]:
    status = measurement.get("status")
    return status if isinstance(status, Mapping) else {}
