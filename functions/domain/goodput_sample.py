"""One sample of a GoodputMeasurement as CRE's controller takes it (`handleRunning`, `mergeSampleWindow`,
`recordInterruptionFromRestart`, the terminal `handleSucceeded`/`handleFailed` of ADR-072's freeze), on the state
`functions.domain.goodput_state` rebuilt from the status and a window `functions.domain.goodput_logs` parsed:
the restart detected, steps and checkpoints taken, run boundaries (resume, reschedule and warmup times), the
badput figures and the ratio. `now` is the wall clock (nanoseconds), as CRE's. Pure.
"""

from __future__ import annotations

from dataclasses import replace

from functions.domain.goodput import (
    average_step_time,
    average_tflops,
    go_f6,
    goodput,
    lost_work,
    non_warmup_time,
    status_number,
)
from functions.domain.goodput_logs import Window
from functions.domain.goodput_state import Figures, Interruption, State

RESTARTED = "WorkloadRestarted"
JOB_FAILED = "JobFailed"


def interrupt(state: State, at: int, reason: str) -> None:
    """An interruption recorded (`recordInterruptionFromRestart`): its lost work counted once, held pending until
    the next run's first step; the run's step clocks cleared."""
    lost = lost_work(at, state.last_checkpoint_time)
    state.pending = Interruption(at, state.last_checkpoint_time, state.last_checkpoint_step, state.current_step, lost,
                                 reason)
    state.figures = replace(state.figures, lost_work=state.figures.lost_work + lost)
    state.interruptions += 1
    state.started, state.application_start = False, None
    state.last_step_timestamp, state.avg_step_time = None, ""


def restarted(state: State, workload: bool, restart_count: int) -> bool:
    """Whether the Job restarted since the measurement last saw it run (CRE's detections A and B)."""
    if not state.started or state.pending is not None:
        return False
    return not workload or restart_count > state.interruptions


def merge(state: State, window: Window, warmup_steps: int, log_interval: int, now: int) -> None:
    """The window merged into the state (CRE's steps 5 to 16)."""
    if window.last_log_timestamp is not None:
        state.application_stop = now
    if window.last_step is not None:
        state.current_step = window.last_step.global_step
        state.highest_step = max(state.highest_step, state.current_step)
    if (checkpoint := window.last_checkpoint) is not None:
        state.last_checkpoint_step, state.last_checkpoint_time = checkpoint.step, checkpoint.timestamp
    if not state.started and state.application_start is None:
        state.application_start = window.application_start
    first = window.first_step
    if first is not None and not state.started:
        state.started = True
        state.start_time = state.start_time or first.timestamp
        state.warmup_base_step = first.global_step
        if state.pending is None and state.application_start is not None:
            state.figures.resume += max(0.0, (first.timestamp - state.application_start) / 1e9)
        if warmup_steps > 0 and first.step_timing > 0:
            state.figures.warmup = state.figures.prior_warmup + first.step_timing
    if first is not None and state.pending is not None:
        complete_interruption(state, window, warmup_steps)
    figures = state.figures
    if (state.started and figures.resume == 0 and state.pending is None and state.application_start is not None
            and state.start_time is not None):
        figures.resume += max(0.0, (state.start_time - state.application_start) / 1e9)
    if checkpoint is not None and checkpoint.step > state.counted_checkpoint_step and checkpoint.save_duration > 0:
        figures.saving += checkpoint.save_duration
        state.counted_checkpoint_step = checkpoint.step
    state.log_interval = log_interval
    steps = [replace(s, warmup=s.warmup or (state.warmup_base_step is not None and warmup_steps > 0
                                           and s.global_step - state.warmup_base_step < warmup_steps))
             for s in window.steps]
    if steps and not steps[-1].warmup:
        state.last_step_timestamp = steps[-1].timestamp
    if (average := average_step_time(steps)) > 0:
        state.avg_step_time = go_f6(average)
    if (tflops := average_tflops(steps)) > 0:
        state.avg_tflops = go_f6(tflops)
    added, watermark = non_warmup_time(steps, log_interval, state.last_non_warmup_step)
    figures.non_warmup += added
    state.last_non_warmup_step = watermark  # past every step of the window, the last included
    if state.started and state.start_time is not None:
        figures.training = (now - state.start_time) / 1e9
        state.result = go_f6(ratio(figures))
    state.start_time = state.start_time or now


def complete_interruption(state: State, window: Window, warmup_steps: int) -> None:
    """The first step after an interruption: its reschedule and resume times counted, the run's warmup restarted."""
    pending, first, figures = state.pending, window.first_step, state.figures
    assert pending is not None and first is not None
    if pending.checkpoint_step == 0:
        figures.prior_warmup = figures.prior_non_warmup = 0.0
    scheduled = window.application_start or state.application_start or first.timestamp
    figures.reschedule += max(0.0, (scheduled - pending.interrupted) / 1e9)
    figures.resume += max(0.0, (first.timestamp - scheduled) / 1e9)
    state.pending = None
    state.warmup_base_step = first.global_step
    figures.non_warmup, state.last_non_warmup_step = figures.prior_non_warmup, 0
    if warmup_steps > 0 and first.step_timing > 0:
        figures.warmup = figures.prior_warmup + first.step_timing


def ratio(figures: Figures) -> float:
    return goodput(figures.training, figures.lost_work, figures.reschedule, figures.resume, figures.saving)


def succeeded(state: State, anchor: int) -> tuple[str, str]:
    """The freeze of a succeeded Job's measurement: the ratio at the anchor; (reason, message) of `Complete`."""
    if state.start_time is not None and anchor > state.start_time:
        state.figures.training = (anchor - state.start_time) / 1e9
        state.result = go_f6(ratio(state.figures))
    if not state.result or status_number(state.result) == 0:
        return "NoDataCollected", "Job succeeded but no goodput was computed; check spec.logProfileRef"
    return "JobSucceeded", "Referenced Job completed successfully"


def failed(state: State, anchor: int, terminated: int | None) -> tuple[str, str]:
    """The freeze of a failed Job's measurement: its failure an interruption, the ratio at the termination."""
    termination = min(state.application_stop or terminated or anchor, anchor)
    lost = lost_work(termination, state.last_checkpoint_time)
    state.figures.lost_work += lost
    state.interruptions += 1
    state.pending = Interruption(termination, state.last_checkpoint_time, state.last_checkpoint_step,
                                 state.current_step, lost, JOB_FAILED)
    if state.start_time is not None:
        state.figures.training = (termination - state.start_time) / 1e9
        state.result = go_f6(ratio(state.figures))
    state.figures.prior_warmup, state.figures.prior_non_warmup = state.figures.warmup, state.figures.non_warmup
    state.application_start = None
    return JOB_FAILED, "Referenced Job failed"
