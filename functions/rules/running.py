"""The one decision for a Running workload, in CRE's order: scheduling-blocked, then stalled, then
running. Pure; used by `status` for every Running phase, whether the phase came from a TrainJob
change, a pod change, a GoodputMeasurement change or the resync tick, so no write clobbers another.

Scheduling-blocked (CRE's ADR-083, `checkSchedulingBlocked`): on the first sight of a blocked pod
`status.schedulingBlockedSince` is set, in the same write as `InProgress`/`WorkloadRunning`/`Workload
TrainJob/<n> is running` (CRE's words on that sight), and the clocks pause (`workloadStartTime` is not
started; the timeout's elapsed time is frozen at the marker). Once `spec.schedulingStallGraceSeconds`
(default 300) have passed since the marker (CRE: `time.Since(marker) >= grace`), the Job says
`InProgress`/`WorkloadSchedulingBlocked`/`Workload pods are unschedulable` (`: <the scheduler's
message>` when a blocked pod has one, `functions.rules.pods`); within it the condition is left as it
is. When no pod is blocked any more, one write moves
`workloadStartTime` forward by the paused time (the runtime consumed before the block is kept), sets
`schedulingResumedTime`, clears the marker and says `WorkloadRunning`. Never terminal, never a restart.
Stalled (`functions.rules.stall`, only with `spec.stallMultiplier` and the Job's GoodputMeasurement):
nothing is written — not even the first `workloadStartTime` — and the decision says so (`status`
replies `dev.crefn.workload.stalled`, `restart` decides). The stall is judged with the clocks as this
decision would leave them: the workload's start is the persisted one, or now on the first sight of it
running; a recovery from a block resumes now.
Otherwise: `InProgress`/`WorkloadRunning`, and `workloadStartTime` the first time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from events.emitted import ConditionSummary
from events.objects import Pod
from events.types import Reason
from functions.rules.conditions import condition, rfc3339
from functions.rules.jobs import JobState
from functions.rules.measurements import GoodputMeasurement
from functions.rules.pods import blocked_pods, unschedulable_message
from functions.rules.stall import Stall, decide_stall

DEFAULT_SCHEDULING_GRACE = timedelta(seconds=300)


@dataclass(frozen=True)
class Running:
    """What a Running workload's Job should say: the condition (None: keep the one it has) and the other
    status fields to write."""

    condition: ConditionSummary | None
    fields: dict[str, Any] = field(default_factory=dict)
    stall: Stall | None = None
    """Stalled: nothing to write (the condition is None and there are no fields)."""


def running_condition(name: str) -> ConditionSummary:
    return condition("InProgress", Reason.WORKLOAD_RUNNING, f"Workload TrainJob/{name} is running")


def scheduling_grace(state: JobState) -> timedelta:
    seconds = state.job.spec.scheduling_stall_grace_seconds
    return timedelta(seconds=seconds) if seconds else DEFAULT_SCHEDULING_GRACE


def decide_running(state: JobState, pods: Sequence[Pod], name: str, now: datetime,
                   goodput: GoodputMeasurement | None = None) -> Running:
    status = state.job.status
    since = status.scheduling_blocked_since
    if blocked := blocked_pods(pods):
        if since is None:
            return Running(running_condition(name), {"schedulingBlockedSince": rfc3339(now)})
        if now - since >= scheduling_grace(state):
            return Running(condition("InProgress", Reason.WORKLOAD_SCHEDULING_BLOCKED, unschedulable_message(blocked)))
        return Running(None)
    fields: dict[str, Any] = {}
    start, resumed = status.workload_start_time, status.scheduling_resumed_time
    if since is not None:
        resumed = now
        fields.update({"schedulingBlockedSince": None, "schedulingResumedTime": rfc3339(now)})
        if start is not None:
            start = start + (now - max(since, start))
            fields["workloadStartTime"] = rfc3339(start)
    if start is None:
        start = now
        fields["workloadStartTime"] = rfc3339(now)
    if stall := decide_stall(state.job, goodput, start, resumed, now):
        return Running(None, stall=stall)
    return Running(running_condition(name), fields)
