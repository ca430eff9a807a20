"""A GoodputMeasurement's status produced as CRE's GoodputMeasurement controller produces it (the `measure`
function's decision). Pure.

`decide(observed, settings, now)`, on what `functions.measure.read` read for one measurement of a managed Job:
frozen once `Complete` is True; a Job `InProgress` samples (`functions.domain.goodput_sample`: a restart
recorded, the log window merged), `Measuring` True/`JobRunning`; an unusable LogProfile sets `Measuring`
False/`LogProfileNotFound` with a Warning Event; a Job that `Succeeded` or `Failed` is frozen: its final window
(capped at the terminal condition's time), then `Complete` and `Measuring` False with CRE's reason and message and
`completionTime`. Every write is a status merge patch locked on the measurement's resourceVersion: a duplicate,
late or concurrent tick re-reads and decides again, so nothing is counted twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from functions.domain.conditions import decide_independent
from functions.domain.goodput_logs import Window
from functions.domain.goodput_sample import RESTARTED, failed, interrupt, merge, restarted, succeeded
from functions.domain.goodput_state import State, recover, stamp, written
from functions.domain.gotime import NS
from functions.domain.jobs import JobState, Skipped
from functions.domain.kubeevents import digest_name, event_about
from functions.domain.logprofile import Profile
from functions.runtime.effects import KubeEvent, WriteStatus
from functions.runtime.plan import Plan, nothing
from functions.runtime.resources import cre_goodput
from functions.runtime.settings import Settings

FUNCTION = "measure"
RUNNING = "Referenced Job is running, measurement in progress"
COMPLETED = "Measurement completed"


@dataclass(frozen=True)
class Sample:
    """One measurement and what its sample is made of, as read."""

    measurement: Mapping[str, Any]
    job: JobState
    verdict: str
    """The Job's True exclusive condition: `InProgress`, `Succeeded`, `Failed` ("" for none)."""
    anchor: int | None = None
    """When the Job's `Succeeded` (else `Failed`) became True (ns), for a terminal Job."""
    profile: Profile | None = None
    profile_error: str = ""
    window: Window | None = None
    """The log window read (None: nothing to read: no workload, no pod, worker-0 not running)."""
    terminated: int | None = None
    """When worker-0's container terminated (ns), for a failed Job."""


Observed = Skipped | Sample


def ns_of(now: datetime) -> int:
    return int(now.timestamp()) * NS + now.microsecond * 1000


def condition(found: Sequence[Mapping[str, Any]], type_: str, true: bool, reason: str, message: str, now: datetime,
              generation: int) -> list[dict[str, Any]]:
    """The conditions with `type_` set True or False (its lastTransitionTime kept unless its status flips), the
    others kept: `functions.domain.conditions.decide_independent`, the whole list when nothing changes."""
    current = [dict(c) for c in found]
    return decide_independent(current, generation, type_, true, reason, message, now) or current


def is_complete(measurement: Mapping[str, Any]) -> bool:
    """Frozen: the measurement's `Complete` is True; nothing is written on it again (ADR-072)."""
    return any(c.get("type") == "Complete" and c.get("status") == "True"
               for c in (measurement.get("status") or {}).get("conditions") or ())


def warning(measurement: Mapping[str, Any], reason: str, message: str, now: datetime) -> KubeEvent:
    """A Warning Event regarding the measurement, named for it, the reason and the minute: a tick delivered again
    records none twice."""
    meta = measurement["metadata"]
    regarding = {"apiVersion": measurement["apiVersion"], "kind": measurement["kind"], "name": meta["name"],
                 "namespace": meta["namespace"], "uid": meta["uid"]}
    name = digest_name(meta["name"], meta["uid"], reason, str(now.replace(second=0, microsecond=0)))
    return event_about(regarding, name, reason, message, True, now, FUNCTION)


def write(observed: Sample, status: Mapping[str, Any], group: str) -> WriteStatus:
    meta = observed.measurement["metadata"]
    return WriteStatus(cre_goodput(group), meta["namespace"], meta["name"], meta["resourceVersion"],
                       status)


def capped(window: Window, anchor: int) -> Window:
    """The final window without what was logged after the anchor (CRE's `capParseResultAtAnchor`)."""
    steps = [s for s in window.steps if s.timestamp <= anchor]
    last_log = min(window.last_log_timestamp, anchor) if window.last_log_timestamp is not None else None
    return replace(window, steps=steps, first_step=steps[0] if steps else None, last_step=steps[-1] if steps else None,
                   checkpoints=[c for c in window.checkpoints if c.timestamp <= anchor], last_log_timestamp=last_log)


def final_sample(state: State, observed: Sample, anchor: int) -> None:
    """The best-effort last window of a terminal Job merged at the anchor, never moving progress back."""
    profile, window = observed.profile, observed.window
    if profile is None or window is None:
        return
    persisted = State(**{**state.__dict__})
    merge(state, capped(window, anchor), profile.warmup_steps, profile.log_interval, anchor)
    state.current_step = max(state.current_step, persisted.current_step)
    state.highest_step = max(state.highest_step, persisted.highest_step)
    last = window.last_step
    if persisted.last_step_timestamp is not None and (last is None or last.timestamp <= persisted.last_step_timestamp):
        state.last_step_timestamp = persisted.last_step_timestamp
        state.avg_step_time, state.avg_tflops = persisted.avg_step_time, persisted.avg_tflops


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    if isinstance(observed, Skipped):
        return nothing(observed.why)
    measurement = observed.measurement
    meta, status = measurement["metadata"], measurement.get("status") or {}
    where = f"GoodputMeasurement {meta['namespace']}/{meta['name']}"
    found = list(status.get("conditions") or ())
    generation = meta["generation"]
    if is_complete(measurement):
        return nothing(f"{where} is complete")
    state = recover(status)
    group = settings.cre_group
    if observed.verdict in ("Succeeded", "Failed"):
        anchor = observed.anchor if observed.anchor is not None else ns_of(now)
        final_sample(state, observed, anchor)
        reason, message = (succeeded(state, anchor) if observed.verdict == "Succeeded"
                           else failed(state, anchor, observed.terminated))
        conditions = condition(found, "Complete", True, reason, message, now, generation)
        conditions = condition(conditions, "Measuring", False, reason, COMPLETED, now, generation)
        done = {**written(state), "completionTime": stamp(anchor), "conditions": conditions}
        return Plan((write(observed, done, group),), reason=f"{where}: {reason}")
    if observed.verdict != "InProgress":
        return nothing(f"{where}: its Job is not running")
    if observed.profile is None:
        ref = measurement["spec"]["logProfileRef"]
        text = f'LogProfile "{ref}" could not be resolved: {observed.profile_error}'
        conditions = condition(found, "Measuring", False, "LogProfileNotFound", text, now, generation)
        return Plan((write(observed, {"conditions": conditions}, group),
                     warning(measurement, "LogProfileNotFound", text, now)), reason=f"{where}: {text}")
    at = ns_of(now)
    workload = observed.job.job.status.workload_ref is not None
    if restarted(state, workload, observed.job.job.status.restart_count):
        interrupt(state, state.application_stop or at, RESTARTED)
        if not workload:
            return Plan((write(observed, written(state), group),), reason=f"{where}: its Job restarted")
    if observed.window is None:
        return nothing(f"{where}: no running worker to read")
    merge(state, observed.window, observed.profile.warmup_steps, observed.profile.log_interval, at)
    conditions = condition(found, "Measuring", True, "JobRunning", RUNNING, now, generation)
    return Plan((write(observed, {**written(state), "conditions": conditions}, group),),
                reason=f"{where}: sampled, step {state.current_step}")

