"""A succeeded Job's thresholds (`functions.domain.thresholds`), as truth tables: CRE's order, values,
timeout and messages (the CEL golden cases are CRE's `pkg/threshold/testdata`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from functions.domain.cel import CelOutcome, outcomes
from functions.domain.thresholds import (
    Verdict,
    Waiting,
    decide_validation,
    evaluate,
    measured_values,
    measurement_timeout,
    succeeded_at,
    to_evaluate,
)

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
FIVE = timedelta(minutes=5)
VALID = "[busBandwidthGBps, algBandwidthGBps, goodputRatio, avgTFLOPsPerGPU, avgStepTimeSec]"


def verdict(thresholds: dict[str, str], measured: dict[str, float], waited: timedelta | None = timedelta(0),
            timeout: timedelta = FIVE) -> Verdict | Waiting:
    """The verdict, the thresholds evaluated in this process (`functions.runtime.celbudget` runs the same code)."""
    evaluated = {key: next(outcomes("value", expression, [value]))
                 for key, expression, value in to_evaluate(thresholds, measured)}
    return decide_validation(thresholds, measured, None if waited is None else NOW - waited, timeout, NOW, evaluated)


@pytest.mark.parametrize(("thresholds", "measured", "expected"), [
    ({"zzzNotAKey": "value > 1", "aaaNotAKey": "value > 1", "goodputRatio": "value > 0.5"}, {},
     (True, "UnknownThresholdKey", f"unknown threshold key(s) [aaaNotAKey, zzzNotAKey]; valid keys: {VALID}")),
    ({"busBandwidth": "value >= 400"}, {"busBandwidthGBps": 350.0},
     (True, "UnknownThresholdKey", f"unknown threshold key(s) [busBandwidth]; valid keys: {VALID}")),
    ({"busBandwidthGBps": "value >= 400"}, {"busBandwidthGBps": 350.0},
     (True, "ThresholdViolated", 'Threshold "busBandwidthGBps" violated: measured 350.0000, expression: value >= 400')),
    ({"goodputRatio": "value >= 0.9", "avgStepTimeSec": "value <= 3.0"}, {"goodputRatio": 0.5, "avgStepTimeSec": 5.0},
     (True, "ThresholdViolated", 'Threshold "avgStepTimeSec" violated: measured 5.0000, expression: value <= 3.0')),
    ({"busBandwidthGBps": "value + 1.0"}, {"busBandwidthGBps": 100.0},
     (True, "InvalidThresholdExpression", 'Threshold "busBandwidthGBps": compile threshold expression "value + 1.0": '
                                          "expression must return bool, got double")),
    ({"goodputRatio": "(value * 2.0 >= 1.0) ? 1.0 : 2.0"}, {"goodputRatio": 0.5},
     (True, "InvalidThresholdExpression", 'Threshold "goodputRatio": compile threshold expression '
                                          '"(value * 2.0 >= 1.0) ? 1.0 : 2.0": '
                                          'expression must return bool, got double')),
    ({"goodputRatio": "value * 2.0 >= 1 ? 1.0 : 2.0"}, {"goodputRatio": 0.5},
     (True, "InvalidThresholdExpression", 'Threshold "goodputRatio": compile threshold expression '
                                          '"value * 2.0 >= 1 ? 1.0 : 2.0": expression must return bool, got double')),
    ({"busBandwidthGBps": "value >= 400", "algBandwidthGBps": "value +"},
     {"busBandwidthGBps": 350.0, "algBandwidthGBps": 300.0},
     (True, "InvalidThresholdExpression", 'Threshold "algBandwidthGBps": compile threshold expression "value +": '
                                          "compile: ERROR: <input>:1:8: Syntax error: ...")),
    ({"avgTFLOPsPerGPU": 'value > double("x")'}, {"avgTFLOPsPerGPU": 400.0},
     (True, "InvalidThresholdExpression", 'Threshold "avgTFLOPsPerGPU": evaluate threshold expression '
                                          '"value > double(\\"x\\")" with value=400.000000: ...')),
    ({"busBandwidthGBps": "value >= 900", "goodputRatio": "value >= 0.85", "avgStepTimeSec": "value < 2.5"},
     {"busBandwidthGBps": 950.0, "goodputRatio": 0.92, "avgStepTimeSec": 2.0, "algBandwidthGBps": 1.0},
     (False, "ThresholdsMet", "All performance thresholds satisfied")),
    ({"busBandwidthGBps": "value >= 900" + " " * 2036}, {"busBandwidthGBps": 950.0},
     (False, "ThresholdsMet", "All performance thresholds satisfied")),
    ({"busBandwidthGBps": "value >= 900" + " " * 2037, "algBandwidthGBps": "value >= 1"},
     {"busBandwidthGBps": 950.0, "algBandwidthGBps": 2.0},
     (True, "InvalidThresholdExpression", 'Threshold "busBandwidthGBps": compile threshold expression '
                                          "(2049 characters): spec.thresholds.busBandwidthGBps should be at most "
                                          "2048 chars long")),
], ids=["unknown-keys-sorted", "unknown-key-wins-over-values", "single-violation", "violations-sorted-by-key",
        "non-bool", "non-bool-unchecked", "non-bool-computed-double-against-an-int",
        "invalid-sorted-before-violation", "evaluation-error", "all-pass", "2048-characters", "2049-characters"])
def test_verdicts(thresholds: dict[str, str], measured: dict[str, float], expected: tuple[bool, str, str]) -> None:
    got = verdict(thresholds, measured)
    assert isinstance(got, Verdict)
    assert (got.failed, got.reason) == expected[:2]
    message = expected[2]  # ending "...": what follows is the CEL library's own text
    assert got.message.startswith(message.removesuffix("...")) if message.endswith("...") else got.message == message


@pytest.mark.parametrize(("expression", "measured", "met"), [
    ("value > 900", 950.0, True), ("value > 900", 900.0, False), ("value >= 900", 900.0, True),
    ("value >= 900", 899.9, False), ("value < 3.0", 2.5, True), ("value < 3.0", 3.0, False),
    ("value <= 3.0", 3.0, True), ("value <= 3.0", 3.5, False), ("value >= 900 && value <= 1200", 1000.0, True),
    ("value >= 900 && value <= 1200", 800.0, False), ("value >= 900 && value <= 1200", 1300.0, False),
    ("value >= 0.85", 0.92, True), ("value >= 0.85", 0.80, False),
], ids=["gt-pass", "gt-exact-fail", "gte-exact", "gte-fail", "lt-pass", "lt-exact-fail", "lte-pass", "lte-fail",
        "range-pass", "range-fail-low", "range-fail-high", "ratio-pass", "ratio-fail"])
def test_cre_evaluate_cases(expression: str, measured: float, met: bool) -> None:
    got = verdict({"busBandwidthGBps": expression}, {"busBandwidthGBps": measured})
    assert isinstance(got, Verdict) and got.failed is not met
    assert got.reason == ("ThresholdsMet" if met else "ThresholdViolated")


def test_an_expression_interrupted_past_its_budget_is_invalid() -> None:
    """The outcome `functions.runtime.celbudget` gives an evaluation it stopped: the threshold is invalid."""
    interrupted = CelOutcome(failure="interrupted", error="operation interrupted: took longer than 1s")
    assert evaluate("goodputRatio", "value >= 0.9", 0.95, interrupted) == Verdict(
        True, "InvalidThresholdExpression", 'Threshold "goodputRatio": evaluate threshold expression "value >= 0.9" '
                                            "with value=0.950000: operation interrupted: took longer than 1s")


@pytest.mark.parametrize(("thresholds", "measured", "evaluated"), [
    ({"goodputRatio": "value > 0.5", "busBandwidthGBps": "value > 1"}, {"goodputRatio": 0.6, "busBandwidthGBps": 2.0},
     (("busBandwidthGBps", "value > 1", 2.0), ("goodputRatio", "value > 0.5", 0.6))),
    ({"goodputRatio": "value > 0.5", "busBandwidthGBps": "value > 1"}, {"goodputRatio": 0.6}, ()),
    ({"goodputRatio": "value > 0.5", "busBandwidth": "value > 1"}, {"goodputRatio": 0.6, "busBandwidth": 2.0}, ()),
], ids=["all-by-key", "none-while-one-is-missing", "none-with-an-unknown-key"])
def test_what_is_evaluated(thresholds: dict[str, str], measured: dict[str, float],
                           evaluated: tuple[tuple[str, str, float], ...]) -> None:
    assert to_evaluate(thresholds, measured) == evaluated


@pytest.mark.parametrize(("waited", "timeout", "expected"), [
    (timedelta(minutes=4), FIVE, ("wait", "waiting for measurement data for keys: [avgStepTimeSec goodputRatio] "
                                          "(1m0s of 5m0s left)")),
    (FIVE, FIVE, ("wait", "waiting for measurement data for keys: [avgStepTimeSec goodputRatio] (0s of 5m0s left)")),
    (FIVE + timedelta(seconds=1), FIVE,
     ("MeasurementTimeout", "Measurement data not available within 5m0s for keys: [avgStepTimeSec goodputRatio]")),
    (timedelta(minutes=2), timedelta(seconds=90),
     ("MeasurementTimeout", "Measurement data not available within 1m30s for keys: [avgStepTimeSec goodputRatio]")),
    (timedelta(minutes=61), timedelta(hours=1),
     ("MeasurementTimeout", "Measurement data not available within 1h0m0s for keys: [avgStepTimeSec goodputRatio]")),
    (None, FIVE,
     ("MeasurementTimeout", "Measurement data not available within 5m0s for keys: [avgStepTimeSec goodputRatio]")),
], ids=["within", "at-the-timeout-still-waits", "past-the-timeout", "spec-90s", "spec-1h", "no-success-time"])
def test_missing_measurements(waited: timedelta | None, timeout: timedelta, expected: tuple[str, str]) -> None:
    got = verdict({"goodputRatio": "value > 0.5", "avgStepTimeSec": "value < 3", "busBandwidthGBps": "value > 1"},
                  {"busBandwidthGBps": 2.0}, waited, timeout)
    if expected[0] == "wait":
        assert isinstance(got, Waiting) and got.missing == ("avgStepTimeSec", "goodputRatio")
    else:
        assert isinstance(got, Verdict) and (got.failed, got.reason) == (True, expected[0])
    assert got.message == expected[1]


def gm(job: str = "llm", complete: str = "True", **status: str) -> dict[str, Any]:
    return {"spec": {"jobRef": {"kind": "Job", "name": job}},
            "status": {"conditions": [{"type": "Complete", "status": complete}], **status}}


def bm(job: str = "llm", complete: str = "True", results: list[dict[str, Any]] | None = None,
       reason: str = "JobSucceeded", uid: str | None = None) -> dict[str, Any]:
    """`uid`: its `nvcre.nvidia.com/job-uid` annotation (none when None)."""
    annotations = {} if uid is None else {"nvcre.nvidia.com/job-uid": uid}
    return {"metadata": {"annotations": annotations}, "spec": {"jobRef": {"name": job}, "testType": "all_reduce"},
            "status": {"conditions": [{"type": "Complete", "status": complete, "reason": reason}],
                       "results": results or []}}


RESULTS = [{"sizeBytes": 1024, "busBW": "12.5", "algBW": "6.4", "samples": 3},
           {"sizeBytes": 8589934592, "busBW": "389.21", "algBW": "205.7", "samples": 3},
           {"sizeBytes": 4294967296, "busBW": "380.0", "algBW": "210.25", "samples": 3}]


@pytest.mark.parametrize(("goodput", "bandwidth", "expected"), [
    ([], [], {}),
    ([], [bm(results=RESULTS)], {"busBandwidthGBps": 389.21, "algBandwidthGBps": 210.25}),
    ([], [bm(complete="False", results=RESULTS)], {}),
    ([], [bm(results=[])], {}),
    ([], [bm(job="other", results=RESULTS)], {}),
    ([], [bm(job="other", results=[{"busBW": "1", "algBW": "1"}]), bm(results=RESULTS)],
     {"busBandwidthGBps": 389.21, "algBandwidthGBps": 210.25}),
    ([], [bm(complete="Unknown", results=[{"busBW": "1", "algBW": "1"}]), bm(results=RESULTS)], {}),
    ([], [bm(results=RESULTS, reason="LogsUnavailable")], {}),
    ([], [bm(results=RESULTS, reason="JobFailed")], {}),
    ([], [bm(results=[{"busBW": "n/a", "sizeBytes": 1}])], {"busBandwidthGBps": 0.0, "algBandwidthGBps": 0.0}),
    ([gm(result="0.93", avgTFLOPSPerGPU="412.5", avgStepTimeSec="2.41")], [],
     {"goodputRatio": 0.93, "avgTFLOPsPerGPU": 412.5, "avgStepTimeSec": 2.41}),
    ([gm(complete="False", result="0.93")], [], {}),
    ([gm(result="0", avgTFLOPSPerGPU="", avgStepTimeSec="-1")], [], {}),
    ([gm(job="other", result="0.5"), gm(result="0.93")], [], {"goodputRatio": 0.93}),
    ([gm(complete="False", result="0.5"), gm(result="0.93")], [], {}),
    ([], [bm(results=RESULTS, uid="job-uid")], {"busBandwidthGBps": 389.21, "algBandwidthGBps": 210.25}),
    ([], [bm(results=RESULTS, uid="earlier-uid")], {}),
    ([], [bm(results=[{"busBW": "1", "algBW": "1"}], uid="earlier-uid"), bm(results=RESULTS, uid="job-uid")],
     {"busBandwidthGBps": 389.21, "algBandwidthGBps": 210.25}),
], ids=["none", "bandwidth-max-of-results", "bandwidth-not-complete", "bandwidth-no-results", "bandwidth-other-job",
        "first-bandwidth-of-the-job", "the-first-decides-not-the-first-complete", "completed-without-final-results",
        "completed-for-a-failed-job", "bandwidth-unreadable-is-0", "goodput", "goodput-not-complete",
        "goodput-only-above-0", "goodput-of-this-job", "the-first-goodput-decides", "bandwidth-of-this-job-uid",
        "bandwidth-of-an-earlier-job-counts-for-nothing", "the-earlier-jobs-bandwidth-is-passed-over"])
def test_measured_values(goodput: list[dict[str, Any]], bandwidth: list[dict[str, Any]],
                         expected: dict[str, float]) -> None:
    assert measured_values("llm", "job-uid", goodput, bandwidth, "nvcre.nvidia.com") == expected


@pytest.mark.parametrize(("bandwidth_reason", "expected"), [
    ("JobSucceeded", {"avgStepTimeSec": 1.25, "avgTFLOPsPerGPU": 512.5, "goodputRatio": 0.88,
                      "busBandwidthGBps": 980.1, "algBandwidthGBps": 450.2}),
    ("LogsUnavailable", {"avgStepTimeSec": 1.25, "avgTFLOPsPerGPU": 512.5, "goodputRatio": 0.88}),
    ("", {"avgStepTimeSec": 1.25, "avgTFLOPsPerGPU": 512.5, "goodputRatio": 0.88}),
], ids=["complete-measurement-provides-goodput-keys", "bandwidth-without-final-results-skipped",
        "provisional-bandwidth-skipped"])
def test_cres_collect_job_measured_values_cases(bandwidth_reason: str, expected: dict[str, float]) -> None:
    """CRE's `pkg/controller/testdata/collect-job-measured-values/<id>` (input and expected verbatim): a
    BandwidthMeasurement counts only with `Complete=True`/`JobSucceeded` and results (`bandwidthFinal`)."""
    goodput = gm(result="0.88", avgTFLOPSPerGPU="512.5", avgStepTimeSec="1.25")
    bandwidth = {"spec": {"jobRef": {"name": "llm"}},
                 "status": {"results": [{"sizeBytes": 1 << 30, "busBW": "980.1", "algBW": "450.2", "samples": 1}]}}
    if bandwidth_reason:
        bandwidth["status"]["conditions"] = [{"type": "Complete", "status": "True", "reason": bandwidth_reason}]
    assert measured_values("llm", "job-uid", [goodput], [bandwidth], "nvcre.nvidia.com") == expected


@pytest.mark.parametrize(("value", "expected"), [
    (None, FIVE), ("", FIVE), ("90s", timedelta(seconds=90)), ("1h", timedelta(hours=1)), ("0s", FIVE),
    ("-1m", FIVE), ("soon", FIVE),
], ids=["unset", "empty", "90s", "1h", "zero", "negative", "not-a-duration"])
def test_measurement_timeout(value: str | None, expected: timedelta) -> None:
    assert measurement_timeout(value) == expected


@pytest.mark.parametrize(("conditions", "expected"), [
    ([{"type": "Succeeded", "status": "True", "lastTransitionTime": "2026-11-30T10:00:00Z"}],
     datetime(2026, 11, 30, 10, 0, tzinfo=UTC)),
    ([{"type": "Succeeded", "status": "False", "lastTransitionTime": "2026-11-30T10:00:00Z"}], None),
    ([{"type": "Succeeded", "status": "True"}], None),
    ([{"type": "Succeeded", "status": "True", "lastTransitionTime": "yesterday"}], None),
], ids=["true", "false", "no-time", "unreadable-time"])
def test_succeeded_at(conditions: list[dict[str, Any]], expected: datetime | None) -> None:
    assert succeeded_at(conditions) == expected




