"""A GoodputMeasurement's samples as CRE's controller takes them, on status rebuilt each time (the producer keeps
nothing between samples): the first step's resume time to the nanosecond, a restart's interruption and the next
run's reschedule and resume, checkpoints and non-warmup time counted once across overlapping windows, the
terminal freeze of a succeeded and of a failed Job, and CRE's state-recovery case."""

from __future__ import annotations

from typing import Any

from functions.domain.goodput_logs import Checkpoint, Step, Window
from functions.domain.goodput_sample import failed, interrupt, merge, restarted, succeeded
from functions.domain.goodput_state import recover, written
from functions.domain.gotime import RFC3339_NANO, parse


def at(text: str) -> int:
    return parse(RFC3339_NANO, text)


def step(n: int, when: str, timing: float = 1.0, tflops: float = 0.0) -> Step:
    return Step(global_step=n, timestamp=at(when), step_timing=timing, tflops=tflops)


def window(*steps: Step, start: str = "", checkpoint: Checkpoint | None = None, last_log: str = "") -> Window:
    return Window(steps=list(steps), first_step=steps[0] if steps else None, last_step=steps[-1] if steps else None,
                  checkpoints=[checkpoint] if checkpoint else [], application_start=at(start) if start else None,
                  last_log_timestamp=at(last_log) if last_log else (steps[-1].timestamp if steps else None))


def sampled(status: dict[str, Any], seen: Window, now: str, warmup_steps: int = 0,
            log_interval: int = 0) -> dict[str, Any]:
    state = recover(status)
    merge(state, seen, warmup_steps, log_interval, at(now))
    return written(state)


def test_the_first_step_counts_the_startup_as_resume_time_to_the_nanosecond() -> None:
    status = sampled({}, window(step(100, "2026-01-22T18:00:05.123456789Z", 1.234, 36.27),
                                start="2026-01-22T18:00:00Z"), "2026-01-22T18:01:00Z")
    assert status["resumeTimeSec"] == "5.123457"
    assert (status["trainingTimeSec"], status["result"]) == ("54.876543", "0.906637")
    assert (status["startTime"], status["applicationStartTime"], status["applicationStopTime"]) == (
        "2026-01-22T18:00:05Z", "2026-01-22T18:00:00Z", "2026-01-22T18:01:00Z")
    assert (status["currentStep"], status["highestStep"], status["warmupBaseStep"]) == (100, 100, 100)
    assert (status["lastStepTimestamp"], status["avgStepTimeSec"], status["avgTFLOPSPerGPU"]) == (
        "2026-01-22T18:00:05Z", "1.234000", "36.270000")
    assert status["pendingInterruption"] is None and status["interruptionCount"] == 0


def test_a_sample_before_any_step_starts_the_clock_and_counts_nothing() -> None:
    status = sampled({}, window(start="2026-01-22T18:00:00Z", last_log="2026-01-22T18:00:30Z"), "2026-01-22T18:00:40Z")
    assert (status["startTime"], status["applicationStartTime"], status["result"]) == (
        "2026-01-22T18:00:40Z", "2026-01-22T18:00:00Z", None)
    assert status["warmupBaseStep"] is None and status["trainingTimeSec"] == "0.000000"


def running(**more: Any) -> dict[str, Any]:
    """A measurement of a Job training since 18:00:00, step 200 at 18:20:00, a checkpoint of step 150 at 18:15:00."""
    return {"startTime": "2026-01-22T18:00:00Z", "currentStep": 200, "highestStep": 200, "warmupBaseStep": 1,
            "lastCheckpointStep": 150, "lastCheckpointTime": "2026-01-22T18:15:00Z",
            "applicationStopTime": "2026-01-22T18:20:30Z", "lastStepTimestamp": "2026-01-22T18:20:00Z",
            "avgStepTimeSec": "6.000000", "lastNonWarmupStep": 200, **more}


def test_a_restart_is_an_interruption_counted_once_and_held_until_the_next_run_steps() -> None:
    state = recover(running())
    assert restarted(state, workload=True, restart_count=1) and not restarted(state, workload=True, restart_count=0)
    assert restarted(state, workload=False, restart_count=0)
    interrupt(state, state.application_stop or 0, "WorkloadRestarted")
    status = written(state)
    assert status["pendingInterruption"] == {
        "tInterrupt": "2026-01-22T18:20:30Z", "tCheckpoint": "2026-01-22T18:15:00Z", "checkpointStep": 150,
        "lastStep": 200, "tCh": "330.000000", "reason": "WorkloadRestarted"}
    assert (status["lostWorkTimeSec"], status["interruptionCount"]) == ("330.000000", 1)
    assert status["lastStepTimestamp"] is None and status["avgStepTimeSec"] is None
    again = recover(status)
    assert not restarted(again, workload=True, restart_count=1)  # pending: the same restart is not counted twice

    resumed = sampled(status, window(step(151, "2026-01-22T18:25:10Z", 5.0), start="2026-01-22T18:24:00Z"),
                      "2026-01-22T18:26:00Z")
    assert (resumed["rescheduleTimeSec"], resumed["resumeTimeSec"]) == ("210.000000", "70.000000")
    assert resumed["pendingInterruption"] is None and resumed["warmupBaseStep"] == 151
    assert (resumed["trainingTimeSec"], resumed["lostWorkTimeSec"]) == ("1560.000000", "330.000000")
    assert resumed["result"] == "0.703704"  # (1560 - 330 - 70 - 210) / (1560 - 210)
    assert sampled(resumed, window(step(152, "2026-01-22T18:25:15Z", 5.0)), "2026-01-22T18:27:00Z")[
        "rescheduleTimeSec"] == "210.000000"


def test_a_checkpoint_and_non_warmup_steps_count_once_across_overlapping_windows() -> None:
    saved = Checkpoint(step=250, timestamp=at("2026-01-22T18:25:00Z"), path="/ckpt", save_duration=12.0)
    first = window(step(230, "2026-01-22T18:23:00Z", 6.0), step(240, "2026-01-22T18:24:00Z", 6.0),
                   step(250, "2026-01-22T18:25:00Z", 6.0), checkpoint=saved)
    once = sampled(running(), first, "2026-01-22T18:25:30Z", log_interval=10)
    assert (once["checkpointSaveTimeSec"], once["nonWarmupTimeSec"]) == ("12.000000", "180.000000")
    assert (once["lastCheckpointStep"], once["lastCheckpointTime"], once["lastNonWarmupStep"]) == (
        250, "2026-01-22T18:25:00Z", 250)
    overlap = window(step(250, "2026-01-22T18:25:00Z", 6.0), step(260, "2026-01-22T18:26:00Z", 6.0), checkpoint=saved)
    twice = sampled(once, overlap, "2026-01-22T18:26:30Z", log_interval=10)
    assert (twice["checkpointSaveTimeSec"], twice["nonWarmupTimeSec"]) == ("12.000000", "240.000000")


def test_warmup_steps_from_the_persisted_base_are_not_counted_as_training() -> None:
    status = sampled({}, window(step(1, "2026-01-22T18:00:10Z", 40.0), step(2, "2026-01-22T18:00:12Z", 2.0),
                                step(3, "2026-01-22T18:00:14Z", 2.0), start="2026-01-22T18:00:00Z"),
                     "2026-01-22T18:00:20Z", warmup_steps=2, log_interval=1)
    assert (status["warmupTimeSec"], status["nonWarmupTimeSec"], status["avgStepTimeSec"]) == (
        "40.000000", "2.000000", "2.000000")
    later = sampled(status, window(step(4, "2026-01-22T18:00:16Z", 2.0)), "2026-01-22T18:00:30Z", warmup_steps=2,
                    log_interval=1)
    assert later["nonWarmupTimeSec"] == "4.000000" and later["warmupBaseStep"] == 1


def test_the_freeze_of_a_succeeded_job() -> None:
    state = recover(running(lostWorkTimeSec="100.000000"))
    assert succeeded(state, at("2026-01-22T19:00:00Z")) == ("JobSucceeded", "Referenced Job completed successfully")
    assert (written(state)["trainingTimeSec"], written(state)["result"]) == ("3600.000000", "0.972222")
    assert succeeded(recover({}), at("2026-01-22T19:00:00Z")) == (
        "NoDataCollected", "Job succeeded but no goodput was computed; check spec.logProfileRef")


def test_the_freeze_of_a_failed_job_counts_its_failure_as_an_interruption() -> None:
    state = recover(running(warmupTimeSec="40.000000", nonWarmupTimeSec="1000.000000"))
    assert failed(state, at("2026-01-22T18:30:00Z"), None) == ("JobFailed", "Referenced Job failed")
    status = written(state)
    assert (status["lostWorkTimeSec"], status["interruptionCount"], status["trainingTimeSec"]) == (
        "330.000000", 1, "1230.000000")
    assert status["pendingInterruption"]["reason"] == "JobFailed"
    assert (status["priorWarmupTimeSec"], status["priorNonWarmupTimeSec"]) == ("40.000000", "1000.000000")
    assert status["applicationStartTime"] is None
    capped = recover({"startTime": "2026-01-22T18:00:00Z", "warmupBaseStep": 1})
    failed(capped, at("2026-01-22T18:30:00Z"), at("2026-01-22T18:45:00Z"))
    assert written(capped)["trainingTimeSec"] == "1800.000000"  # the termination is capped at the anchor


def test_cre_s_state_recovery_case() -> None:
    state = recover({"startTime": "2026-01-22T10:00:00Z", "currentStep": 180, "highestStep": 180,
                     "lastCheckpointStep": 150, "checkpointSaveTimeSec": "12.000000", "lastNonWarmupStep": 180,
                     "warmupBaseStep": 10})
    assert (state.started, state.current_step, state.last_checkpoint_step, state.counted_checkpoint_step) == (
        True, 180, 150, 150)
    assert (state.last_non_warmup_step, state.warmup_base_step, state.pending, state.figures.saving) == (
        180, 10, None, 12.0)


def test_an_interruption_adds_to_the_counts_and_the_window_read_with_it_gives_the_run_s_start() -> None:
    state = recover(running(interruptionCount=2, lostWorkTimeSec="30.000000"))
    interrupt(state, at("2026-01-22T18:20:30Z"), "WorkloadRestarted")
    assert (state.interruptions, state.figures.lost_work) == (3, 360.0)
    seen = window(start="2026-01-22T18:24:00Z", last_log="2026-01-22T18:24:30Z")
    merge(state, seen, 0, 0, at("2026-01-22T18:25:00Z"))
    assert written(state)["applicationStartTime"] == "2026-01-22T18:24:00Z"
    assert not restarted(recover({}), workload=False, restart_count=5)  # never trained: nothing to interrupt


def interrupted(checkpoint_step: int) -> dict[str, Any]:
    """Interrupted at 18:20:30 with figures from earlier runs."""
    return {"startTime": "2026-01-22T18:00:00Z", "currentStep": 200, "highestStep": 200, "lastCheckpointStep": 150,
            "lastCheckpointTime": "2026-01-22T18:15:00Z", "interruptionCount": 1, "lostWorkTimeSec": "330.000000",
            "rescheduleTimeSec": "100.000000", "resumeTimeSec": "50.000000", "warmupTimeSec": "45.000000",
            "nonWarmupTimeSec": "900.000000", "priorWarmupTimeSec": "40.000000",
            "priorNonWarmupTimeSec": "800.000000", "lastNonWarmupStep": 200, "warmupBaseStep": 1,
            "pendingInterruption": {"tInterrupt": "2026-01-22T18:20:30Z", "tCheckpoint": "2026-01-22T18:15:00Z",
                                    "checkpointStep": checkpoint_step, "lastStep": 200, "tCh": "330.000000",
                                    "reason": "WorkloadRestarted"}}


def test_the_next_run_from_a_checkpoint_adds_its_reschedule_and_resume_and_restarts_warmup() -> None:
    """CRE's step 10: tScheduled the window's start (else the state's, else the first step's), the times added to
    the earlier ones, the prior figures kept (a checkpoint was restored), warmup the prior's plus the first step's."""
    status = sampled(interrupted(150), window(step(151, "2026-01-22T18:50:00Z", 0.5), start="2026-01-22T18:40:00Z"),
                     "2026-01-22T18:51:00Z", warmup_steps=1, log_interval=1)
    assert (status["rescheduleTimeSec"], status["resumeTimeSec"]) == ("1270.000000", "650.000000")
    assert (status["warmupTimeSec"], status["nonWarmupTimeSec"], status["warmupBaseStep"]) == (
        "40.500000", "800.000000", 151)
    untimed = sampled(interrupted(150), window(step(151, "2026-01-22T18:25:10Z", 0.0), start="2026-01-22T18:24:00Z"),
                      "2026-01-22T18:26:00Z", warmup_steps=1, log_interval=1)
    assert untimed["warmupTimeSec"] == "45.000000"  # no timing: warmup left as it was


def test_the_next_run_from_scratch_clears_the_prior_figures() -> None:
    """No checkpoint restored (checkpointStep 0): the prior warmup and non-warmup times are dropped, step 1 counts
    from a watermark of 0; a start logged before the interruption reschedules nothing; no warmup steps: warmup
    untouched."""
    status = sampled(interrupted(0), window(step(1, "2026-01-22T18:20:00.5Z", 2.0), start="2026-01-22T18:20:00Z"),
                     "2026-01-22T18:26:00Z", warmup_steps=0, log_interval=1)
    assert (status["rescheduleTimeSec"], status["resumeTimeSec"]) == ("100.000000", "50.500000")
    assert (status["warmupTimeSec"], status["nonWarmupTimeSec"], status["lastNonWarmupStep"]) == (
        "45.000000", "2.000000", 1)
    warmed = sampled(interrupted(0), window(step(1, "2026-01-22T18:20:00.5Z", 0.5), start="2026-01-22T18:20:00Z"),
                     "2026-01-22T18:26:00Z", warmup_steps=1, log_interval=1)
    assert warmed["warmupTimeSec"] == "0.500000"  # the cleared prior plus the first step's timing
    seen_before = {**interrupted(150), "applicationStartTime": "2026-01-22T18:30:00Z"}
    again = sampled(seen_before, window(step(151, "2026-01-22T18:50:00Z", 0.5), start="2026-01-22T18:40:00Z"),
                    "2026-01-22T18:51:00Z", warmup_steps=1, log_interval=1)
    assert again["rescheduleTimeSec"] == "1270.000000"  # tScheduled: the window's start before the state's


def test_the_freeze_at_the_start_keeps_the_result_and_a_zero_result_is_no_data() -> None:
    state = recover({"startTime": "2026-01-22T19:00:00Z", "warmupBaseStep": 1, "result": "0.500000"})
    assert succeeded(state, at("2026-01-22T19:00:00Z"))[0] == "JobSucceeded" and written(state)["result"] == "0.500000"
    assert succeeded(recover({"result": "0.000000"}), at("2026-01-22T19:00:00Z"))[0] == "NoDataCollected"


def test_a_failure_adds_to_the_counts_and_holds_the_last_checkpoint() -> None:
    state = recover(running(interruptionCount=2, lostWorkTimeSec="30.000000"))
    failed(state, at("2026-01-22T18:30:00Z"), None)
    status = written(state)
    assert (status["lostWorkTimeSec"], status["interruptionCount"]) == ("360.000000", 3)
    assert status["pendingInterruption"]["tCheckpoint"] == "2026-01-22T18:15:00Z"


FULL = {"trainingTimeSec": "1.000000", "lostWorkTimeSec": "2.000000", "rescheduleTimeSec": "3.000000",
        "resumeTimeSec": "4.000000", "checkpointSaveTimeSec": "5.000000", "warmupTimeSec": "6.000000",
        "nonWarmupTimeSec": "7.000000", "priorWarmupTimeSec": "8.000000", "priorNonWarmupTimeSec": "9.000000",
        "result": "0.500000", "currentStep": 11, "highestStep": 12, "lastCheckpointStep": 13, "interruptionCount": 14,
        "lastNonWarmupStep": 15, "warmupBaseStep": 16, "logInterval": 17, "startTime": "2026-01-22T18:00:01Z",
        "applicationStartTime": "2026-01-22T18:00:02Z", "applicationStopTime": "2026-01-22T18:00:03Z",
        "lastCheckpointTime": "2026-01-22T18:00:04Z", "lastStepTimestamp": "2026-01-22T18:00:05Z",
        "avgStepTimeSec": "1.500000", "avgTFLOPSPerGPU": "2.500000",
        "pendingInterruption": {"tInterrupt": "2026-01-22T18:00:06Z", "tCheckpoint": "2026-01-22T18:00:07Z",
                                "checkpointStep": 18, "lastStep": 19, "tCh": "3.500000", "reason": "JobFailed"}}


def test_the_status_read_back_is_the_status_written() -> None:
    """Every field CRE's `buildCumulativeFromStatus` reads comes back as `writeStatusFromCumulative` wrote it; a
    status without them reads as zeros and nothing (CRE's controller starting)."""
    assert written(recover(FULL)) == FULL
    empty = written(recover({}))
    assert {k: v for k, v in empty.items() if v not in (None, 0, "0.000000")} == {}
    assert (empty["currentStep"], empty["highestStep"], empty["lastNonWarmupStep"], empty["logInterval"]) == (
        0, 0, 0, 0)
    held = recover({"pendingInterruption": {"tInterrupt": "2026-01-22T18:00:06Z",
                                            "tCheckpoint": "2026-01-22T18:00:07Z"}})
    assert written(held)["lastCheckpointTime"] == "2026-01-22T18:00:07Z"  # the interruption's, when none other
    assert written(held)["pendingInterruption"] == {"tInterrupt": "2026-01-22T18:00:06Z",
                                                    "tCheckpoint": "2026-01-22T18:00:07Z", "checkpointStep": 0,
                                                    "lastStep": 0, "tCh": "0.000000", "reason": ""}
    assert recover({"lastCheckpointStep": 13}).counted_checkpoint_step == 13
    assert recover({}).counted_checkpoint_step == 0


def test_a_run_s_first_step_after_a_reset() -> None:
    """Not started (no warmupBaseStep: CRE's Job controller reset it): the startup adds to the resume time so far;
    with warmup steps the first step's timing is the warmup time; without, warmup is left as it was."""
    reset = {"startTime": "2026-01-22T18:00:00Z", "resumeTimeSec": "10.000000", "warmupTimeSec": "5.000000"}
    first = window(step(1, "2026-01-22T18:16:40.5Z", 0.5), start="2026-01-22T18:00:00Z")
    status = sampled(reset, first, "2026-01-22T18:20:00Z", warmup_steps=1)
    assert (status["resumeTimeSec"], status["warmupTimeSec"], status["warmupBaseStep"]) == (
        "1010.500000", "0.500000", 1)
    quick = window(step(1, "2026-01-22T18:00:00.5Z", 0.5), start="2026-01-22T18:00:00Z")
    unwarmed = sampled(reset, quick, "2026-01-22T18:01:00Z", warmup_steps=0)
    assert (unwarmed["resumeTimeSec"], unwarmed["warmupTimeSec"]) == ("10.500000", "5.000000")
    untimed = sampled(reset, window(step(1, "2026-01-22T18:00:00.5Z", 0.0)), "2026-01-22T18:01:00Z", warmup_steps=1)
    assert untimed["warmupTimeSec"] == "5.000000"


def test_scenario_b_a_started_run_without_resume_time_counts_its_startup() -> None:
    """CRE's step 11: started, no resume time, no interruption pending: startTime - applicationStartTime."""
    started = {"startTime": "2026-01-22T18:16:40Z", "applicationStartTime": "2026-01-22T18:00:00Z",
               "warmupBaseStep": 1, "resumeTimeSec": "0.000000"}
    status = sampled(started, window(step(2, "2026-01-22T18:17:00Z", 1.0)), "2026-01-22T18:20:00Z")
    assert status["resumeTimeSec"] == "1000.000000"
    at_once = {**started, "startTime": "2026-01-22T18:00:00Z"}
    assert sampled(at_once, window(step(2, "2026-01-22T18:17:00Z", 1.0)), "2026-01-22T18:20:00Z")[
        "resumeTimeSec"] == "0.000000"
    unknown = {"startTime": "2026-01-22T18:00:01Z", "warmupBaseStep": 1}
    later = sampled(unknown, window(step(2, "2026-01-22T18:00:05Z", 1.0), start="2026-01-22T18:00:00Z"),
                    "2026-01-22T18:01:00Z")
    assert later["applicationStartTime"] is None  # a started run's start is not taken from a later window


def test_averages_and_save_time_of_a_window() -> None:
    """avgStepTimeSec and avgTFLOPSPerGPU written only when positive (below 1 included); a checkpoint's save time
    below 1 s added to the total; warmup from the persisted base."""
    status = {"startTime": "2026-01-22T18:00:00Z", "warmupBaseStep": 100, "avgStepTimeSec": "6.000000",
              "avgTFLOPSPerGPU": "7.000000", "checkpointSaveTimeSec": "12.000000", "lastCheckpointStep": 50}
    saved = Checkpoint(step=100, timestamp=at("2026-01-22T18:10:00Z"), save_duration=0.5)
    quick = sampled(status, window(step(100, "2026-01-22T18:10:00Z", 0.5, 0.5), checkpoint=saved),
                    "2026-01-22T18:11:00Z")
    assert (quick["avgStepTimeSec"], quick["avgTFLOPSPerGPU"], quick["checkpointSaveTimeSec"]) == (
        "0.500000", "0.500000", "12.500000")
    none = sampled(status, window(step(101, "2026-01-22T18:10:00Z", 0.0)), "2026-01-22T18:11:00Z")
    assert (none["avgStepTimeSec"], none["avgTFLOPSPerGPU"]) == ("6.000000", "7.000000")
    two = window(step(100, "2026-01-22T18:10:00Z", 4.0), step(101, "2026-01-22T18:10:02Z", 2.0))
    assert sampled(status, two, "2026-01-22T18:11:00Z", warmup_steps=1)["avgStepTimeSec"] == "2.000000"
    below = window(step(99, "2026-01-22T18:10:00Z", 4.0), step(100, "2026-01-22T18:10:02Z", 2.0))
    assert sampled(status, below, "2026-01-22T18:11:00Z")["avgStepTimeSec"] == "3.000000"
