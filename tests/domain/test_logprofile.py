"""A LogProfile compiled for the goodput parser: CRE's shipped profile's fields, the units of its timings, and a
capture's numbers read as Go's `Atoi` and `ParseFloat` read them (0 when they fail)."""

from __future__ import annotations

import math

import pytest

from functions.domain.logprofile import go_float, go_int, goodput_profile, parse_float, parse_int
from tests.support.logprofiles import megatron_training, nemo_4_training


def test_the_shipped_megatron_profile() -> None:
    found = goodput_profile(megatron_training())
    assert (found.name, found.layout, found.warmup_steps, found.log_interval, found.multi, found.container) == (
        "megatron-training", "2006-01-02 15:04:05.999999", 10, 10, True, "")
    assert list(found.patterns) == ["trainingStep", "checkpointSave", "checkpointDone", "checkpointRestore",
                                    "applicationStart"]
    step = found.patterns["trainingStep"]
    assert step.seconds({"elapsedTime": "34356.5"}, "elapsedTime") == 34.3565
    assert step.seconds({}, "stepTiming") == 0.0
    nemo = goodput_profile(nemo_4_training()).patterns["trainingStep"]
    assert nemo.seconds({"stepTiming": "1.5"}, "stepTiming") == 1.5


@pytest.mark.parametrize(("text", "number"), [
    (" 42 ", 42), ("+7", 7), ("-3", -3), ("4.0", 0), ("", 0), ("1e3", 0), ("٤", 0), ("9223372036854775807", 2**63 - 1),
    ("9223372036854775808", 0)])
def test_an_integer_capture(text: str, number: int) -> None:
    assert go_int(text) == number
    assert parse_int(text) == (number if number or text.strip() in ("0",) else None)


@pytest.mark.parametrize(("text", "number"), [
    (" 2.345 ", 2.345), ("1.218472E+01", 12.18472), ("1.145e+03", 1145.0), ("-0.5", -0.5), ("1_000", 0.0),
    ("", 0.0), ("abc", 0.0), ("1e400", 0.0), ("inf", float("inf"))])
def test_a_float_capture(text: str, number: float) -> None:
    assert go_float(text) == number


def test_a_float_that_fails_is_none() -> None:
    assert (parse_float("1e400"), parse_float("x"), parse_float("0")) == (None, None, 0.0)


@pytest.mark.parametrize(("text", "number"), [
    ("9223372036854775807", 2**63 - 1), ("-9223372036854775808", -(2**63)), ("9223372036854775808", None),
    ("-9223372036854775809", None), ("X5", None), (None, None),
])
def test_atoi_s_64_bit_range(text: str | None, number: int | None) -> None:
    assert parse_int(text) == number


def test_a_profile_s_fields_and_their_absence() -> None:
    raw = {"metadata": {"name": "p"}, "spec": {
        "timestamp": {"layout": "2006"}, "containerName": "trainer", "warmupSteps": 3, "logInterval": 5,
        "workerStrategy": {"type": "Multi", "replicatedJobName": "node"},
        "patterns": {"trainingStep": {"regex": r"step (?P<stepTiming>\d+)", "units": {"stepTiming": "ms"}}}}}
    compiled = goodput_profile(raw)
    assert (compiled.name, compiled.layout, compiled.container, compiled.warmup_steps, compiled.log_interval,
            compiled.multi, compiled.replicated_job) == ("p", "2006", "trainer", 3, 5, True, "node")
    assert compiled.patterns["trainingStep"].seconds({"stepTiming": "1500"}, "stepTiming") == 1.5
    bare = goodput_profile({"metadata": {"name": "q"}, "spec": {"timestamp": {"layout": "2006"}, "patterns": {}}})
    assert (bare.container, bare.warmup_steps, bare.log_interval, bare.multi, bare.replicated_job) == (
        "", 0, 0, False, "")


def test_parse_float_s_infinities_only_when_spelled() -> None:
    assert (parse_float("+Infinity"), parse_float("-inf"), parse_float("1e400")) == (math.inf, -math.inf, None)
