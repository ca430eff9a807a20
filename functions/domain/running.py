"""The one decision for a Running workload, in CRE's order: scheduling-blocked, then stalled, then
running. Pure; used by `status` for every Running phase, whether the phase came from a TrainJob
change, a pod change, a GoodputMeasurement change or the resync tick, so no write clobbers another.

Scheduling-blocked (CRE's ADR-083, `checkSchedulingBlocked`): the clocks pause at the marker
`status.schedulingBlockedSince`, and past `spec.schedulingStallGraceSeconds` (default 300) the Job says
`InProgress`/`WorkloadSchedulingBlocked`; never terminal, never a restart. Stalled
(`functions.domain.stall`): nothing is written and the decision says so (`status` replies
`dev.crefn.workload.stalled`, `restart` decides). Otherwise: `InProgress`/`WorkloadRunning`, and
`workloadStartTime` the first time. The writes and clocks of each case:
docs/functions.md#the-running-decision
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from events.emitted import ConditionSummary
from events.objects import Pod
from events.types import Reason
from functions.domain.conditions import condition, rfc3339
from functions.domain.jobs import JobState
from functions.domain.measurement_objects import GoodputMeasurement
from functions.domain.pods import blocked_pods, scheduling_grace, unschedulable_message
from functions.domain.stall import Stall, decide_stall


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


def decide_running(state: JobState, pods: Sequence[Pod], name: str, now: datetime,
                   goodput: GoodputMeasurement | None = None, cadence: timedelta = timedelta(0)) -> Running:
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
        if start is not None:  # CRE's resumeFromSchedulingBlock: shifted later by the blocked time, never earlier
            start = start + max(now - max(since, start), timedelta(0))
            fields["workloadStartTime"] = rfc3339(start)
    if start is None:
        start = now
        fields["workloadStartTime"] = rfc3339(now)
    if stall := decide_stall(state.job, goodput, start, resumed, now, cadence):
        return Running(None, stall=stall)
    return Running(running_condition(name), fields)
