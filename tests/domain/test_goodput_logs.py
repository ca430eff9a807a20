"""CRE's goodput parser's golden cases (`pkg/goodput/testdata/parse-logs/<case>`), its inputs rebuilt from CRE's
account of them, through the profiles CRE ships: steps, warmup, log interval, checkpoints of one line and of two,
restores; times kept to the nanosecond."""

from __future__ import annotations

from typing import Any

import pytest

from functions.domain.goodput_logs import Checkpoint, Step, Window, merged, parse_window
from functions.domain.gotime import RFC3339_NANO, parse, rfc3339
from functions.domain.logprofile import ProfileError, goodput_profile
from tests.support.logprofiles import MEGATRON_STEP, megatron_training, nemo_4_training, profile

NEMO_100 = ("2026-01-22T18:00:05.123456789Z Training epoch 0, iteration 100/17279 | lr: 0.0001 | global_step: 100 | "
            "consumed_samples: 12800 | reduced_train_loss: 2.345 | train_step_timing in s: 1.234 | "
            "TFLOPS_per_GPU: 36.27")
NEMO_101 = ("2026-01-22T18:00:06.500000000Z Training epoch 0, iteration 101/17279 | lr: 0.0001 | global_step: 101 | "
            "reduced_train_loss: 2.200 | train_step_timing in s: 1.100 | TFLOPS_per_GPU: 1.145e+03 | "
            "consumed_samples: 128")


def megatron(at: str, iteration: int, ms: str, tflops: str, loss: str) -> str:
    return (f" [{at}] iteration {iteration:>8}/  500000 | consumed samples: {iteration * 512:>10} | elapsed time per "
            f"iteration (ms): {ms} | throughput per GPU (TFLOP/s/GPU): {tflops} | learning rate: 3.000000E-04 | global "
            f"batch size:   512 | lm loss: {loss} | loss scale: 1.0 | grad norm: 1.234 |")


def nemo(at: str, step: int, timing: str) -> str:
    return (f"{at} Training epoch 0, iteration {step}/17279 | global_step: {step} | reduced_train_loss: 2.1 | "
            f"train_step_timing in s: {timing}")


def test_n4_training_steps_from_the_kubelets_times_to_the_nanosecond() -> None:
    window = parse_window(goodput_profile(nemo_4_training()), [NEMO_100, NEMO_101])
    assert window.first_step == Step(global_step=100, iteration=100, epoch=0, loss=2.345, step_timing=1.234,
                                     tflops=36.27, timestamp=1769104805123456789)
    assert rfc3339(window.first_step.timestamp) == "2026-01-22T18:00:05.123456789Z"
    last = window.last_step
    assert last is not None
    assert (last.global_step, last.loss, last.step_timing, last.tflops, rfc3339(last.timestamp)) == (
        101, 2.2, 1.1, 1145.0, "2026-01-22T18:00:06.5Z")
    assert window.last_log_timestamp is not None and rfc3339(window.last_log_timestamp) == "2026-01-22T18:00:06.5Z"
    assert len(window.steps) == 2 and not any(s.warmup for s in window.steps)


def test_n6_log_interval_10_drops_the_steps_between_and_reads_milliseconds() -> None:
    values = [(1, "60123.4", "300.1", "1.290000E+01"), (10, "49394.8", "371.8", "1.172175E+01"),
              (20, "34595.4", "372.0", "1.100000E+01"), (30, "35588.5", "372.2", "1.000000E+01"),
              (40, "34379.9", "372.4", "9.500000E+00"), (50, "34385.2", "372.6", "9.000000E+00"),
              (60, "34356.5", "372.8", "8.500000E+00")]
    lines = [megatron(f"2026-02-15 20:{20 + i}:55.067342", n, ms, tflops, loss)
             for i, (n, ms, tflops, loss) in enumerate(values)]
    window = parse_window(goodput_profile(megatron_training()), lines)
    first, last = window.first_step, window.last_step
    assert first is not None and last is not None
    assert (first.global_step, first.step_timing, first.tflops, first.loss) == (
        10, 49.394800000000004, 371.8, 11.72175)
    assert rfc3339(first.timestamp) == "2026-02-15T20:21:55.067342Z"
    assert (last.global_step, last.step_timing) == (60, 34.3565)
    assert [s.global_step for s in window.steps] == [10, 20, 30, 40, 50, 60]
    assert window.log_interval == 10 and window.last_log_timestamp is None


def test_warmup_steps_count_from_the_application_start() -> None:
    spec = nemo_4_training()
    spec["spec"]["patterns"]["applicationStart"] = {"regex": "Application initialized"}
    lines = ["2026-01-22T18:00:00Z Application initialized", nemo("2026-01-22T18:00:05Z", 0, "41.12"),
             nemo("2026-01-22T18:00:10Z", 1, "1.2"), nemo("2026-01-22T18:00:15Z", 2, "1.1")]
    window = parse_window(goodput_profile(spec), lines)
    assert window.application_start is not None and rfc3339(window.application_start) == "2026-01-22T18:00:00Z"
    assert [(s.global_step, s.warmup, s.step_timing) for s in window.steps] == [
        (0, True, 41.12), (1, False, 1.2), (2, False, 1.1)]
    assert window.last_log_timestamp is not None and rfc3339(window.last_log_timestamp) == "2026-01-22T18:00:15Z"


def test_without_a_start_or_a_restore_no_step_is_warmup() -> None:
    window = parse_window(goodput_profile(nemo_4_training()), [nemo("2026-01-22T18:00:05Z", 0, "41.12")])
    assert [s.warmup for s in window.steps] == [False]


def test_n4_checkpoint_of_one_line_its_done_line_only_fills_the_path() -> None:
    lines = ["2026-01-22T18:14:30.123Z [NeMo I 2026-01-22 18:14:30 nemo_logging:381] Global Checkpoint Save : Rank: 0 "
             ": Iteration: 149 : Save duration: 439.017s",
             "2026-01-22T18:14:41.123Z [NeMo I 2026-01-22 18:14:41 nemo_logging:381] Successfully saved checkpoint "
             "from iteration 149 to /path/to/checkpoint"]
    window = parse_window(goodput_profile(nemo_4_training()), lines)
    assert window.checkpoints == [Checkpoint(step=149, save_duration=439.017, path="/path/to/checkpoint",
                                             timestamp=1769105670123000000)]
    assert rfc3339(window.checkpoints[0].timestamp) == "2026-01-22T18:14:30.123Z"
    assert window.last_log_timestamp is not None and rfc3339(window.last_log_timestamp) == "2026-01-22T18:14:41.123Z"
    assert window.pending_save is None


def n6_profile() -> dict[str, Any]:
    return profile("n6", {"timestamp": {"layout": "2006-01-02 15:04:05.999999"}, "patterns": {
        "trainingStep": {"regex": MEGATRON_STEP, "units": {"elapsedTime": "ms"}},
        "checkpointSave": {"regex": r"\[(?P<timestamp>[\d-]+ [\d:.]+)\]\s+saving checkpoint at iteration\s+"
                                    r"(?P<step>\d+)\s+to\s+(?P<path>\S+)"},
        "checkpointDone": {"regex": r"\[(?P<timestamp>[\d-]+ [\d:.]+)\]\s+successfully saved checkpoint from "
                                    r"iteration\s+(?P<step>\d+)\s+to\s+(?P<path>\S+)"},
        "applicationStart": {"regex": r"\[before the start of training step\] datetime: "
                                      r"(?P<timestamp>[\d-]+ [\d:.]+)"}}})


def test_n6_full_sequence_a_save_and_its_done_line_make_one_checkpoint_timed_between_them() -> None:
    lines = ["2026-02-05T16:01:40.400000Z [before the start of training step] datetime: 2026-02-05 16:01:40.326255",
             megatron("2026-02-05 16:04:00.100000", 1, "132563.1", "120.5", "1.1E+01"),
             megatron("2026-02-05 16:04:05.100000", 2, "5000.0", "380.1", "1.0E+01"),
             "2026-02-05T17:07:36.400000Z [2026-02-05 17:07:36.379347] saving checkpoint at iteration 2 to /ckpt",
             "2026-02-05T17:13:37.900000Z [2026-02-05 17:13:37.825367] successfully saved checkpoint from iteration 2 "
             "to /ckpt",
             "2026-02-05T17:14:00Z some other line"]
    window = parse_window(goodput_profile(n6_profile()), lines)
    assert window.application_start is not None
    assert rfc3339(window.application_start) == "2026-02-05T16:01:40.326255Z"
    (checkpoint,) = window.checkpoints
    assert (checkpoint.step, checkpoint.path, checkpoint.save_duration, rfc3339(checkpoint.timestamp)) == (
        2, "/ckpt", 361.44602, "2026-02-05T17:13:37.825367Z")
    assert window.first_step is not None and window.first_step.step_timing == 132.56310000000002
    assert window.last_step is not None and window.last_step.step_timing == 5
    assert window.last_log_timestamp is not None and rfc3339(window.last_log_timestamp) == "2026-02-05T17:14:00Z"


def test_a_save_start_with_no_done_line_is_left_pending() -> None:
    window = parse_window(goodput_profile(megatron_training()), [
        "[2026-02-05 11:26:59] saving checkpoint at iteration 250 to /checkpoints"])
    assert window.checkpoints == []
    assert window.pending_save is not None
    assert (window.pending_save.step, window.pending_save.path, rfc3339(window.pending_save.timestamp)) == (
        250, "/checkpoints", "2026-02-05T11:26:59Z")


def test_megatron_s_async_save_is_timed_from_saving_to_scheduled() -> None:
    lines = ["[2026-02-05 11:26:59.000000] saving checkpoint at iteration 250 to /checkpoints",
             "[2026-02-05 11:27:01.250000] scheduled an async checkpoint save at iteration 250 to /checkpoints"]
    window = parse_window(goodput_profile(megatron_training()), lines)
    assert [(c.step, c.save_duration) for c in window.checkpoints] == [(250, 2.25)]


def test_warmup_steps_after_a_restore() -> None:
    lines = ["2026-01-22T18:00:00Z [NeMo I 2026-01-22 18:00:00 nemo_logging:10] Starting",
             "2026-01-22T18:00:01Z Restoring model weights from /checkpoints/step_100/model_weights",
             nemo("2026-01-22T18:00:05Z", 100, "9.5"), nemo("2026-01-22T18:00:10Z", 101, "1.2"),
             nemo("2026-01-22T18:00:15Z", 102, "1.1")]
    window = parse_window(goodput_profile(nemo_4_training()), lines)
    assert window.restore == Checkpoint(step=0, path="/checkpoints/step_100/model_weights",
                                        timestamp=1769104801000000000)
    assert [(s.global_step, s.warmup) for s in window.steps] == [(100, True), (101, False), (102, False)]


def test_only_the_last_100_steps_are_kept_the_first_still_known() -> None:
    lines = [nemo(f"2026-01-22T18:{i // 60:02d}:{i % 60:02d}Z", i, "1.0") for i in range(1, 131)]
    window = parse_window(goodput_profile(nemo_4_training()), lines)
    assert len(window.steps) == 100 and window.steps[0].global_step == 31
    assert window.first_step is not None and window.first_step.global_step == 1


def test_an_example_the_regex_does_not_match_is_cre_s_error() -> None:
    spec = profile("broken", {"timestamp": {"layout": "2006"}, "patterns": {
        "trainingStep": {"regex": "^WILL_NOT_MATCH$", "example": "this line does not match"}}})
    with pytest.raises(ProfileError) as refused:
        goodput_profile(spec)
    assert str(refused.value) == ("pattern trainingStep: example does not match regex\n  regex:   ^WILL_NOT_MATCH$\n"
                                  "  example: this line does not match")


def test_a_pattern_re2_refuses_is_an_invalid_regex() -> None:
    spec = profile("broken", {"timestamp": {"layout": "2006"}, "patterns": {
        "checkpointSave": {"regex": r"(?P<step>\d+) saved (?=now)"}}})
    with pytest.raises(ProfileError) as refused:
        goodput_profile(spec)
    assert str(refused.value).startswith("pattern checkpointSave: invalid regex: error parsing regexp: ")


def test_two_workers_windows_merge_as_cre_s_pending_save_propagated() -> None:
    """CRE's `read-multi-worker-logs/pending-save-propagated`: the run's life from worker-0 (its save of iteration
    250 at 11:26:59 waiting for its done line), the steps from the last worker (iteration 250, 1000.0 ms, 140.0
    TFLOPS), whose last line time is the window's."""
    def at(text: str) -> int:
        return parse(RFC3339_NANO, text)

    step = Step(global_step=250, timestamp=at("2026-02-05T11:26:00Z"), iteration=250, step_timing=1.0, tflops=140.0)
    saved = Checkpoint(200, at("2026-02-05T11:20:00Z"), "/checkpoints", 12.5)
    pending = Checkpoint(250, at("2026-02-05T11:26:59Z"), "/checkpoints")
    restore = Checkpoint(100, at("2026-02-05T11:00:30Z"), "/checkpoints/step_100")
    worker0 = Window(checkpoints=[saved], application_start=at("2026-02-05T11:00:00Z"), restore=restore,
                     pending_save=pending, last_log_timestamp=at("2026-02-05T11:26:59Z"), log_interval=10)
    last = Window(steps=[step], first_step=step, last_step=step, last_log_timestamp=at("2026-02-05T11:26:01Z"),
                  log_interval=10)
    assert merged(worker0, last) == Window(
        steps=[step], first_step=step, last_step=step, checkpoints=[saved],
        application_start=at("2026-02-05T11:00:00Z"), restore=restore, pending_save=pending,
        last_log_timestamp=at("2026-02-05T11:26:01Z"), log_interval=0)
    silent = Window(steps=[step], first_step=step, last_step=step)  # the last worker logged no line with a time
    assert merged(worker0, silent).last_log_timestamp == at("2026-02-05T11:26:59Z")


def test_checkpoint_lines_each_part_from_the_line_else_the_save_it_ends() -> None:
    """A done line after a whole save only fills a missing path; else its step, path and duration are its own,
    or the pending save's (its duration then the time between them), or none; a time from the kubelet's prefix,
    else 0."""
    optional = r"(?: step=(?P<step>\d+))?(?: path=(?P<path>\S+))?(?: took=(?P<saveDuration>[\d.]+))?"
    lines = ["2026-02-05T10:00:00Z save step=100 path=/a took=12.5", "2026-02-05T10:00:05Z done step=100 path=/b",
             "2026-02-05T10:00:09Z done step=101", "2026-02-05T10:01:00Z save step=200 path=/c",
             "2026-02-05T10:01:30Z done", "2026-02-05T10:02:00Z done step=300 took=1500", "done step=400",
             "2026-02-05T10:03:00Z done", "save step=500 path=/d"]
    window = parse_window(goodput_profile(profile("checkpoints", {
        "timestamp": {"layout": "2006-01-02T15:04:05Z"},
        "patterns": {"checkpointSave": {"regex": "save" + optional},
                     "checkpointDone": {"regex": "done" + optional, "units": {"saveDuration": "ms"}}}})), lines)

    def at(text: str) -> int:
        return parse(RFC3339_NANO, text)

    assert window.checkpoints == [Checkpoint(100, at("2026-02-05T10:00:00Z"), "/a", 12.5),
                                  Checkpoint(101, at("2026-02-05T10:00:09Z"), "", 0.0),
                                  Checkpoint(200, at("2026-02-05T10:01:30Z"), "/c", 30.0),
                                  Checkpoint(300, at("2026-02-05T10:02:00Z"), "", 1.5), Checkpoint(400, 0, "", 0.0),
                                  Checkpoint(0, at("2026-02-05T10:03:00Z"), "", 0.0)]
    assert window.pending_save == Checkpoint(500, 0, "/d", 0.0)


def test_each_capture_of_a_step_and_the_run_s_events() -> None:
    """The typed captures of a step; a warmupStep line flags its step; a step with no time at all is at 0; only the
    first application start counts; the first restore, its step and path filled by checkpointLoaded."""
    lines = ["2026-01-22T18:00:00Z app up", "2026-01-22T18:00:01Z app up",
             "2026-01-22T18:00:02Z restore from /ckpt/a", "2026-01-22T18:00:03Z restore from /ckpt/b",
             "2026-01-22T18:00:04Z loaded step 150 from /ckpt/c",
             "2026-01-22T18:00:05Z epoch 2 iteration 4 global 0 loss 1.5 tflops 0.5 timing 2",
             "epoch 3 iteration 5 global 6 loss 2.5 tflops 3.5 timing 1 WARMUP"]
    window = parse_window(goodput_profile(profile("captures", {
        "timestamp": {"layout": "2006-01-02T15:04:05Z"}, "logInterval": 2,
        "patterns": {
            "trainingStep": {"regex": r"epoch (?P<epoch>\d+) iteration (?P<iteration>\d+) global (?P<globalStep>\d+) "
                                      r"loss (?P<loss>[\d.]+) tflops (?P<tflops>[\d.]+) timing (?P<stepTiming>\d+)"},
            "warmupStep": {"regex": "WARMUP"}, "applicationStart": {"regex": "app up"},
            "checkpointRestore": {"regex": r"restore from (?P<path>\S+)"},
            "checkpointLoaded": {"regex": r"loaded step (?P<step>\d+) from (?P<path>\S+)"}}})), lines)

    def at(text: str) -> int:
        return parse(RFC3339_NANO, text)

    assert window.steps == [
        Step(global_step=4, timestamp=at("2026-01-22T18:00:05Z"), iteration=4, epoch=2, step_timing=2.0, loss=1.5,
             tflops=0.5),
        Step(global_step=6, timestamp=0, iteration=5, epoch=3, step_timing=1.0, loss=2.5, tflops=3.5, warmup=True)]
    assert window.application_start == at("2026-01-22T18:00:00Z")
    assert window.restore == Checkpoint(150, at("2026-01-22T18:00:02Z"), "/ckpt/c")
    odd = parse_window(goodput_profile(profile("odd", {
        "timestamp": {"layout": "2006"}, "logInterval": 2,
        "patterns": {"trainingStep": {"regex": r"global (?P<globalStep>\d+)"}}})), ["global 3", "global 4"])
    assert [s.global_step for s in odd.steps] == [4]  # a log interval of 2 drops the odd steps
    loaded = parse_window(goodput_profile(profile("loaded", {
        "timestamp": {"layout": "2006"},
        "patterns": {"checkpointLoaded": {"regex": r"loaded(?: step (?P<step>\d+))?(?: from (?P<path>\S+))?"},
                     "checkpointRestore": {"regex": r"restore(?: from (?P<path>\S+))?"}}})),
        ["2026-01-22T18:00:04Z loaded", "restore"])
    assert loaded.restore == Checkpoint(0, at("2026-01-22T18:00:04Z"), "")
    events = goodput_profile(profile("events", {
        "timestamp": {"layout": "2006"}, "warmupSteps": 0,
        "patterns": {"checkpointLoaded": {"regex": r"loaded(?: step (?P<step>\d+))?"},
                     "checkpointRestore": {"regex": r"restore(?: step (?P<step>\d+))?(?: from (?P<path>\S+))?"},
                     "applicationStart": {"regex": "app up"},
                     "trainingStep": {"regex": r"global (?P<globalStep>\d+)"}}}))
    assert parse_window(events, ["restore"]).restore == Checkpoint(0, 0, "")
    assert parse_window(events, ["restore step 7"]).restore == Checkpoint(7, 0, "")
    assert parse_window(events, ["loaded step 3"]).restore == Checkpoint(3, 0, "")
    steps = parse_window(events, ["2026-01-22T18:00:00Z app up", "global 10", "global 5"]).steps
    assert [s.warmup for s in steps] == [False, False]  # no warmup steps: none, even below the first
