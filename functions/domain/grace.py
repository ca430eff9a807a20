"""The restart grace: how long the next attempt waits after a restart, and where that is recorded.

`restart` writes the annotation `crefn.dev/restart-not-before` (now + the grace) on the Job just before
its commit, locked on the read resourceVersion (`annotate`); `launch` (and `resync`, through the same
rule) waits until that time (`wait`), knowing for how long (the 503's `Retry-After`); a restart
recorded without the annotation (by an earlier release, which wrote it after the commit) waits too,
with no known end. A redelivered restart writes the annotation again only when the Job lacks this
restart's (`recorded`). A grace of 0 is written nowhere: the restart is one Job write fewer, and the next
attempt does not wait. The grace is CRE's: twice `spec.goodputMeasurement.sampleInterval` when it is
set (a Go duration), else `CREFN_RESTART_GRACE_SECONDS` (default 30 s). `alerting` names its end.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from events.types import RESTART_NOT_BEFORE_ANNOTATION, Reason
from functions.domain.conditions import parse_rfc3339, rfc3339
from functions.domain.jobs import JobState
from functions.runtime.durations import parse_go_duration
from functions.runtime.effects import Annotate, Wait, wait_until
from functions.runtime.resources import cre_jobs

ANNOTATION = RESTART_NOT_BEFORE_ANNOTATION


def length(state: JobState, default_seconds: int) -> timedelta:
    """The grace a restart of this Job gives: twice the goodput sample interval, else the setting."""
    gm = state.job.spec.goodput_measurement
    if gm is not None and gm.sample_interval:
        try:
            return 2 * parse_go_duration(gm.sample_interval)
        except ValueError:
            pass  # the real CRD takes any string: an unreadable interval falls back to the setting
    return timedelta(seconds=default_seconds)


def end(state: JobState) -> datetime | None:
    """When the grace recorded on the Job ends (None: none recorded, or unreadable)."""
    return parse_rfc3339(state.job.metadata.annotations.get(ANNOTATION, ""))


def none_to_wait(state: JobState, now: datetime, default_seconds: int) -> bool:
    """Whether a restart of the Job leaves nothing to wait for: no grace configured (`length`) and none
    recorded that is not over (one written under another setting is still kept)."""
    ends = end(state)
    return not length(state, default_seconds) and (ends is None or ends <= now)


def recorded(state: JobState, trainjob: dict[str, Any] | None) -> bool:
    """Whether the Job's grace is this restart's: present, and later than the creation of the failed
    attempt's TrainJob (`trainjob`; None: gone or replaced). An earlier restart's grace was over before
    that TrainJob could be created, so it never counts for this one."""
    ends = end(state)
    if ends is None:
        return False
    created = parse_rfc3339(str(((trainjob or {}).get("metadata") or {}).get("creationTimestamp") or ""))
    return created is None or ends > created


def wait(state: JobState, now: datetime, default_seconds: int) -> Wait | None:
    """The wait before the next attempt while the grace is not over; None when it is. A restart recorded
    without its annotation waits for it only when the Job's grace is not 0 (`length`: with none, `restart`
    writes no annotation)."""
    ends = end(state)
    if ends and now < ends:
        return wait_until(f"restart grace not over: next TrainJob not before {ends.isoformat()}", ends, now)
    true_cond = state.true_condition
    if (ends is None and true_cond and true_cond.reason == Reason.WORKLOAD_RESTARTING
            and length(state, default_seconds)):
        return Wait("restart recorded, its grace period not yet written")
    return None


def annotate(state: JobState, ends: datetime, group: str, locked_at: str = "") -> Annotate:
    """The annotation that records the grace's end on the Job (locked on `locked_at` when given)."""
    return Annotate(cre_jobs(group), state.ref.namespace, state.ref.name, {ANNOTATION: rfc3339(ends)}, locked_at)
