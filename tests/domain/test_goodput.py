"""CRE's goodput calculator's golden cases (`pkg/goodput/testdata/calculate-goodput`) and its controller helpers'
(`compute-non-warmup-time`, `compute-avg-tflops`), with the status's numbers as Go prints them."""

from __future__ import annotations

import pytest

from functions.domain.goodput import (
    average_step_time,
    average_tflops,
    go_f2,
    go_f6,
    goodput,
    lost_work,
    non_warmup_time,
    status_number,
)
from functions.domain.goodput_logs import Step


@pytest.mark.parametrize(("figures", "ratio"), [
    ((14400, 900, 150, 70, 45), "0.928772"), ((3600, 0, 0, 0, 360), "0.900000"), ((100, 0, 100, 0, 0), "0.000000"),
    ((100, 80, 10, 20, 5), "0.000000"), ((0, 0, 0, 0, 0), "0.000000"), ((50, 0, 0, 0, 0), "1.000000"),
    ((10, 9.5, 0, 0, 0), "0.050000"), ((0.5, 0, 0, 0, 0), "1.000000"),
], ids=["one-interruption", "checkpoint-overhead", "all-rescheduling", "negative-numerator", "nothing", "no-badput",
        "numerator-below-1", "denominator-below-1"])
def test_the_goodput_ratio(figures: tuple[float, float, float, float, float], ratio: str) -> None:
    training, lost, reschedule, resume, saving = figures
    assert go_f6(goodput(training, lost, reschedule, resume, saving)) == ratio


def test_lost_work_is_0_without_a_checkpoint_time() -> None:
    assert lost_work(1_769_104_805_123_456_789, None) == 0.0
    assert lost_work(1_769_104_805_123_456_789, 1_769_104_800_000_000_000) == 5.123456789
    assert go_f6(lost_work(1_769_104_805_123_456_789, 1_769_104_800_000_000_000)) == "5.123457"


def step(n: int, timing: float = 0.0, tflops: float = 0.0, warmup: bool = False, at: float = 0) -> Step:
    return Step(global_step=n, timestamp=int(at * 1e9), step_timing=timing, tflops=tflops, warmup=warmup)


def test_non_warmup_time_with_a_log_interval_of_10() -> None:
    timings = (49.3948, 34.5954, 35.5885, 34.3799, 34.3852, 34.3565)
    steps = [step(10 * (i + 1), t) for i, t in enumerate(timings)]
    added, watermark = non_warmup_time(steps, 10, 0)
    assert (go_f6(added), watermark) == ("2227.003000", 60)
    assert non_warmup_time(steps, 10, 60) == (0.0, 60)  # past the watermark only
    assert go_f6(non_warmup_time(steps, 10, 40)[0]) == "687.417000"


def test_non_warmup_time_leaves_warmup_steps_out() -> None:
    steps = [step(1, 40.0, warmup=True), step(2, 1.5), step(3, 1.5)]
    assert non_warmup_time(steps, 1, 0) == (3.0, 3)


def test_average_tflops_counts_positive_values_warmup_included() -> None:
    assert average_tflops([step(1, tflops=400), step(2, tflops=0), step(3, tflops=600, warmup=True)]) == 500
    assert average_tflops([step(1)]) == 0.0


def test_average_step_time_over_non_warmup_steps_else_from_their_times() -> None:
    assert average_step_time([step(1, 40.0, warmup=True), step(2, 1.0), step(3, 2.0)]) == 1.5
    assert average_step_time([step(10, at=100), step(20, at=150), step(30, at=170)]) == 3.5
    assert average_step_time([step(1, warmup=True)]) == 0.0


def test_numbers_as_go_prints_and_reads_them() -> None:
    assert (go_f6(0), go_f6(1 / 3), go_f2(688.949), go_f2(2.175)) == ("0.000000", "0.333333", "688.95", "2.17")
    assert (status_number(" 12.000000 "), status_number(""), status_number("1.218472E+01"), status_number("x")) == (
        12.0, 0.0, 12.18472, 0.0)


def test_steps_one_apart_stand_for_one_step_each() -> None:
    """Δstep is the gap to the step before it (the log interval only for the first, or a gap below 1); the time
    per step between untimed consecutive lines is divided by a gap of 1; a TFLOPS below 1 still counts."""
    steps = [Step(global_step=10, timestamp=0, step_timing=2.0), Step(global_step=11, timestamp=0, step_timing=3.0)]
    assert non_warmup_time(steps, 10, 0) == (23.0, 11)
    untimed = [Step(global_step=10, timestamp=0), Step(global_step=11, timestamp=3_000_000_000, tflops=0.5)]
    assert (average_step_time(untimed), average_tflops(untimed)) == (3.0, 0.5)
