"""A window of a training pod's log parsed as CRE's goodput parser parses it (`ProfileParser.ParseLogs`), line by
line: the kubelet's timestamp prefix (the window's last), the application's start (the first, arming warmup), the
training steps (the last 100 kept, the first and the last, `logInterval` and warmup applied), the checkpoints
(one line with its save duration, or a save start and its done line), the first restore; a save start with no
done line is left pending. Times are nanoseconds (`functions.domain.gotime`). Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from functions.domain.gotime import Unparsed, kubelet_time, parse
from functions.domain.logprofile import Profile, go_float, go_int

KEPT_STEPS = 100


@dataclass(frozen=True)
class Step:
    global_step: int
    timestamp: int
    iteration: int = 0
    epoch: int = 0
    step_timing: float = 0.0
    loss: float = 0.0
    tflops: float = 0.0
    warmup: bool = False


@dataclass(frozen=True)
class Checkpoint:
    step: int
    timestamp: int
    path: str = ""
    save_duration: float = 0.0


@dataclass
class Window:
    """What one window of the log says (CRE's ParseResult)."""

    steps: list[Step] = field(default_factory=list)
    first_step: Step | None = None
    last_step: Step | None = None
    checkpoints: list[Checkpoint] = field(default_factory=list)
    application_start: int | None = None
    restore: Checkpoint | None = None
    pending_save: Checkpoint | None = None
    last_log_timestamp: int | None = None
    log_interval: int = 0

    @property
    def last_checkpoint(self) -> Checkpoint | None:
        return self.checkpoints[-1] if self.checkpoints else None


@dataclass
class Reading:
    """The parser's state across the window's lines."""

    window: Window
    warmup_base: int | None = None
    armed: bool = False
    full_save: bool = False
    """The last checkpoint came whole from a save line (it had its duration): a done line only fills its path."""


def event_time(profile: Profile, captured: Mapping[str, str], prefix: int | None) -> int | None:
    """The captured `timestamp` read with the profile's layout, else the kubelet's prefix."""
    if text := captured.get("timestamp"):
        try:
            return parse(profile.layout, text)
        except Unparsed:
            pass
    return prefix


def parse_window(profile: Profile, lines: Iterable[str]) -> Window:
    reading = Reading(Window(log_interval=profile.log_interval))
    for line in lines:
        prefix, _ = kubelet_time(line)
        if prefix is not None:
            reading.window.last_log_timestamp = prefix
        read_line(profile, reading, line, prefix)
    return reading.window


def read_line(profile: Profile, reading: Reading, line: str, prefix: int | None) -> None:
    patterns, window = profile.patterns, reading.window
    if (start := patterns.get("applicationStart")) and (found := start.pattern.search(line)) is not None:
        when = event_time(profile, found, prefix)
        if window.application_start is None and when:
            window.application_start = when
            reading.warmup_base, reading.armed = None, True
    if (steps := patterns.get("trainingStep")) and (found := steps.pattern.search(line)) is not None:
        training_step(profile, reading, found, prefix, line)
        return
    if (done := patterns.get("checkpointDone")) and (found := done.pattern.search(line)) is not None:
        checkpoint_done(profile, reading, found, prefix)
        return
    if (save := patterns.get("checkpointSave")) and (found := save.pattern.search(line)) is not None:
        checkpoint_save(profile, reading, found, prefix)
        return
    if (restore := patterns.get("checkpointRestore")) and (found := restore.pattern.search(line)) is not None:
        if window.restore is None:
            window.restore = Checkpoint(go_int(found.get("step")), event_time(profile, found, prefix) or 0,
                                        found.get("path", "").strip())
        reading.warmup_base, reading.armed = None, True
        return
    if (loaded := patterns.get("checkpointLoaded")) and (found := loaded.pattern.search(line)) is not None:
        before = window.restore or Checkpoint(0, event_time(profile, found, prefix) or 0)
        window.restore = replace(before, step=go_int(found.get("step")) or before.step,
                                 path=found.get("path", "").strip() or before.path)


def training_step(profile: Profile, reading: Reading, found: Mapping[str, str], prefix: int | None,
                  line: str) -> None:
    pattern, window = profile.patterns["trainingStep"], reading.window
    timing = pattern.seconds(found, "stepTiming") or pattern.seconds(found, "elapsedTime")
    iteration = go_int(found.get("iteration"))
    global_step = go_int(found.get("globalStep")) or iteration
    if profile.log_interval > 1 and global_step % profile.log_interval != 0:
        return
    warmup = bool((marker := profile.patterns.get("warmupStep")) and marker.pattern.search(line) is not None)
    if profile.warmup_steps > 0 and reading.armed:
        if reading.warmup_base is None:
            reading.warmup_base = global_step
        warmup = warmup or global_step - reading.warmup_base < profile.warmup_steps
    step = Step(global_step=global_step, timestamp=event_time(profile, found, prefix) or 0, iteration=iteration,
                epoch=go_int(found.get("epoch")), step_timing=timing, loss=go_float(found.get("loss")),
                tflops=go_float(found.get("tflops")), warmup=warmup)
    window.steps = [*window.steps, step][-KEPT_STEPS:]
    window.first_step = window.first_step or step
    window.last_step = step


def checkpoint_save(profile: Profile, reading: Reading, found: Mapping[str, str], prefix: int | None) -> None:
    window = reading.window
    pattern = profile.patterns["checkpointSave"]
    save = Checkpoint(go_int(found.get("step")), event_time(profile, found, prefix) or 0,
                      found.get("path", "").strip(), pattern.seconds(found, "saveDuration"))
    if "saveDuration" in found:
        window.checkpoints.append(save)
        window.pending_save, reading.full_save = None, True
    else:
        window.pending_save, reading.full_save = save, False


def checkpoint_done(profile: Profile, reading: Reading, found: Mapping[str, str], prefix: int | None) -> None:
    window = reading.window
    path = found.get("path", "").strip()
    last = window.last_checkpoint
    if reading.full_save and last is not None and window.pending_save is None:
        if not last.path and path:
            window.checkpoints[-1] = replace(last, path=path)
        reading.full_save = False
        return
    when = event_time(profile, found, prefix) or 0
    pending = window.pending_save
    duration = profile.patterns["checkpointDone"].seconds(found, "saveDuration")
    if "saveDuration" not in found:
        duration = (when - pending.timestamp) / 1e9 if pending is not None and pending.timestamp else 0.0
    step = go_int(found.get("step")) or (pending.step if pending else 0)
    window.checkpoints.append(Checkpoint(step, when, path or (pending.path if pending else ""), duration))
    window.pending_save, reading.full_save = None, False


def merged(first: Window, last: Window) -> Window:
    """Two workers' windows as CRE's `ReadMultiWorkerLogs` merges them: the run's life (start, restore,
    checkpoints, a pending save) from worker-0, the steps from the last worker, whose last line time is the
    window's (else worker-0's); no log interval (CRE's merged result does not carry it)."""
    return Window(steps=last.steps, first_step=last.first_step, last_step=last.last_step,
                  checkpoints=first.checkpoints, application_start=first.application_start, restore=first.restore,
                  pending_save=first.pending_save,
                  last_log_timestamp=last.last_log_timestamp or first.last_log_timestamp)
