"""CRE's goodput arithmetic (`pkg/goodput` calculator, the controller's `compute*` helpers, `pkg/numstr`): the
ratio `(t_w - t_ch - t_rm - t_re - t_save) / (t_w - t_re)` (0 when the denominator is not positive, or the
numerator negative), lost work per interruption, a window's average step time and TFLOPS, its non-warmup time
past a watermark, and the status's numbers as Go writes them (`%f`: six decimals). Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from functions.domain.goodput_logs import Step
from functions.domain.logprofile import go_float


def goodput(training: float, lost_work: float, reschedule: float, resume: float, saving: float) -> float:
    """`CalculateGoodput(t_w, t_ch, t_re, t_rm, t_save)`."""
    denominator = training - reschedule
    if denominator <= 0:
        return 0.0
    numerator = training - (resume + lost_work) - reschedule - saving
    return 0.0 if numerator < 0 else numerator / denominator


def lost_work(interrupted: int, last_checkpoint: int | None) -> float:
    """`t_ch` of an interruption: the seconds from the last checkpoint to it, 0 when no checkpoint time is known."""
    return 0.0 if not last_checkpoint else (interrupted - last_checkpoint) / 1e9


def average_step_time(steps: Sequence[Step]) -> float:
    """The mean positive step timing of the window's non-warmup steps, else the mean of their time per step
    between consecutive lines; 0 when neither is known."""
    counted = [s for s in steps if not s.warmup]
    timings = [s.step_timing for s in counted if s.step_timing > 0]
    if timings:
        return sum(timings) / len(timings)
    gaps = [(b.timestamp - a.timestamp) / 1e9 / max(b.global_step - a.global_step, 1)
            for a, b in pairwise(counted)]
    return sum(gaps) / len(gaps) if gaps else 0.0


def average_tflops(steps: Sequence[Step]) -> float:
    """The mean positive TFLOPS of the window's steps, warmup included."""
    values = [s.tflops for s in steps if s.tflops > 0]
    return sum(values) / len(values) if values else 0.0


def non_warmup_time(steps: Sequence[Step], log_interval: int, watermark: int) -> tuple[float, int]:
    """The window's non-warmup seconds past the watermark (each step's timing times the steps it stands for: the
    gap to the window's step before it, or the log interval for the first or a gap below 1), and the new
    watermark."""
    added, previous, highest = 0.0, 0, watermark
    for step in steps:
        delta = step.global_step - previous
        if previous == 0 or delta < 1:
            delta = max(log_interval, 1)
        if not step.warmup and step.global_step > watermark:
            added += step.step_timing * delta
        previous = step.global_step
        highest = max(highest, step.global_step)
    return added, highest


def go_f6(value: float) -> str:
    """`strconv.FormatFloat(v, 'f', 6, 64)`: what CRE writes in a goodput status field."""
    return f"{value:.6f}"


def go_f2(value: float) -> str:
    """`strconv.FormatFloat(v, 'f', 2, 64)`: a bandwidth figure."""
    return f"{value:.2f}"


def status_number(text: object) -> float:
    """A status number string as CRE reads it back (`numstr.Parse`: trimmed `ParseFloat`, 0 on error)."""
    return go_float(str(text)) if text else 0.0
