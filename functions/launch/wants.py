"""What steers `launch`'s read, decided on the event's copy of the Job before any read: a Job `restart`
relaunches itself (`restart_launches`), and a restart grace the copy shows not over (`grace_on_copy`, a wait
answered unread). Pure."""

from __future__ import annotations

from datetime import datetime

from events.types import Reason
from functions.domain import grace
from functions.domain.jobs import JobState
from functions.runtime.effects import Wait
from functions.runtime.settings import Settings


def restart_launches(state: JobState, settings: Settings) -> bool:
    """Whether the Job, as an event shows it, is being restarted with no grace (none configured, and none
    recorded on it at all) and no workload yet: `restart` launches its next attempt itself
    (`functions.restart.relaunch.Relaunch`), so `launch` answers the event unread. A forged one only skips work;
    a relaunch that failed is the resync tick's (a Job without a workload), and so is one `restart` leaves
    (a TrainJob held by a finalizer). A Job carrying a grace annotation, even one that is over, is read:
    `restart` does not relaunch while a grace recorded under another setting runs, and a `restart` still
    on a grace writes one (`functions.domain.grace.none_to_wait`), so only the Job as it is says who launches."""
    true = state.true_condition
    return (not settings.observe and true is not None and true.reason == Reason.WORKLOAD_RESTARTING
            and state.job.status.workload_ref is None and not state.terminal
            and not grace.length(state, settings.restart_grace_seconds) and grace.end(state) is None)


def grace_on_copy(seen: JobState, settings: Settings, now: datetime) -> Wait | None:
    """The wait for a restart grace the event's Job shows recorded and not over (`functions.domain.grace.wait`,
    with its end): answered without a read, retried by Knative until it is over. A wait changes nothing: a
    forged or stale one only holds back this delivery; the Job's later updates (its grace edited, say) come
    as events of their own, and the resync tick launches what is left. A wait with no known end (a restart
    recorded whose grace is not written yet) is not answered on the copy, which would never change: the Job
    is read. None in observe mode, or when there is none."""
    waiting = None if settings.observe else grace.wait(seen, now, settings.restart_grace_seconds)
    return waiting if waiting is not None and waiting.retry_after is not None else None
