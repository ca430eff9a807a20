"""A Job's wall-clock bound (CRE's `timeoutPerJob`). Pure.

The bound is the Job's annotation `crefn.dev/timeout-per-job` (a Go duration, written by `workloadrun`),
else `CREFN_DEFAULT_TIMEOUT_PER_JOB`; neither means no bound (CRE's Job tier has none); an annotation that
is not a positive duration counts as CRE's default, 24h. Elapsed time as CRE's Workflow measures it: since
`workloadStartTime` once the workload was seen running, frozen at `schedulingBlockedSince` while the pods
are unschedulable; none while never seen running; since creation with no workload yet. One blocked
episode alone longer than the bound also times out. Strict `>`. The message is `failTimedOutJob`'s: `Job
exceeded timeoutPerJob while its pods were unschedulable` whenever `schedulingBlockedSince` is set when
time runs out, else `Job exceeded timeoutPerJob`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from events.types import TIMEOUT_ANNOTATION
from functions.domain.jobs import JobState
from functions.runtime.durations import positive_duration

CRE_DEFAULT_TIMEOUT = timedelta(hours=24)
TIMED_OUT = "Job exceeded timeoutPerJob"
TIMED_OUT_BLOCKED = "Job exceeded timeoutPerJob while its pods were unschedulable"


@dataclass(frozen=True)
class Deadline:
    elapsed: timedelta
    timeout: timedelta
    blocked: bool
    """The pods were scheduling-blocked (the marker set) when the time ran out."""

    @property
    def message(self) -> str:
        return TIMED_OUT_BLOCKED if self.blocked else TIMED_OUT


def timeout_of(state: JobState, default: timedelta | None) -> timedelta | None:
    value = state.job.metadata.annotations.get(TIMEOUT_ANNOTATION)
    return default if value is None else positive_duration(value, CRE_DEFAULT_TIMEOUT)


def elapsed(state: JobState, now: datetime) -> timedelta | None:
    """Time charged to the Job's bound; None while it is not counted (a workload never seen running)."""
    status = state.job.status
    if status.workload_start_time is not None:
        end = now if status.scheduling_blocked_since is None else min(now, status.scheduling_blocked_since)
        return max(end - status.workload_start_time, timedelta(0))
    if status.workload_ref is not None:
        return None
    created = state.job.metadata.creation_timestamp
    return None if created is None else now - created


def deadline(state: JobState, now: datetime, default: timedelta | None) -> Deadline | None:
    """The Job's run-out bound, or None while it has time left (or has no bound, or is terminal)."""
    timeout = timeout_of(state, default)
    if timeout is None or state.terminal:
        return None
    since = state.job.status.scheduling_blocked_since
    if since is not None and now - since > timeout:
        return Deadline(now - since, timeout, blocked=True)
    spent = elapsed(state, now)
    if spent is not None and spent > timeout:
        return Deadline(spent, timeout, blocked=since is not None)
    return None
