"""The Job condition a workload phase calls for and its status write, for `status`, `resync` and the first phase a
launch decides (SPEC §3, §5). Pure.

- The condition of a phase (`condition_for`) and its status write (`decide_status`): Pending →
  `InProgress`/`WorkloadPending`; Running → the running path (`functions.domain.running`); Succeeded →
  `Succeeded`/`WorkloadCompleted`; Failed is `restart`'s.
- `in_step`: the Job already shows the phase (what the resync tick skips).

The phase itself, and its event, are `functions.domain.phases` (what `phase` loads, without the running path).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from events.emitted import ConditionSummary, WorkloadRef
from events.objects import Pod
from events.types import Phase, Reason
from functions.domain.adapter import PhaseResult
from functions.domain.attempts import is_current
from functions.domain.condition_writes import ConditionWrite, condition_write
from functions.domain.conditions import condition
from functions.domain.jobs import JobState, write_status
from functions.domain.measurement_objects import GoodputMeasurement
from functions.domain.running import decide_running, running_condition
from functions.domain.stall import Stall
from functions.runtime.errors import PermanentError


def condition_for(phase: Phase, name: str, message: str) -> ConditionSummary:
    subject = f"Workload TrainJob/{name}"
    if phase is Phase.PENDING:
        text = f"{subject} is pending: {message}" if message else f"{subject} is pending"
        return condition("InProgress", Reason.WORKLOAD_PENDING, text)
    if phase is Phase.RUNNING:
        return running_condition(name)
    if phase is Phase.SUCCEEDED:
        text = f"{subject} completed: {message}" if message else f"{subject} completed successfully"
        return condition("Succeeded", Reason.WORKLOAD_COMPLETED, text)
    raise PermanentError("phase Failed is handled by the restart function")


def decide_status(state: JobState, phase: Phase, name: str, message: str, now: datetime, group: str,
                  function: str, pods: Sequence[Pod] = (), goodput: GoodputMeasurement | None = None,
                  cause: str = "", cadence: timedelta = timedelta(0),
                  ) -> tuple[ConditionWrite, ConditionSummary | None] | Stall | None:
    """The write for a phase of the current attempt (with the attempt's pods and the Job's
    GoodputMeasurement for a Running one) and the True exclusive condition after it; the stall of a
    stalled workload (nothing to write); None when nothing would change. `cause`: the deciding event's id,
    recorded on the Event of a verdict."""
    if phase is not Phase.RUNNING:
        new = condition_for(phase, name, message)
        write = condition_write(state, new, now, group, function, cause=cause)
        return None if write is None else (write, new)
    running = decide_running(state, pods, name, now, goodput, cadence)
    if running.stall is not None:
        return running.stall
    if running.condition is not None:
        write = condition_write(state, running.condition, now, group, function, running.fields)
        return None if write is None else (write, running.condition)
    if not running.fields:
        return None
    return ConditionWrite(running.fields, (write_status(state, running.fields, group),)), state.true_condition


def in_step(state: JobState, workload: WorkloadRef, result: PhaseResult) -> bool:
    """Whether the Job's status already shows its current TrainJob's phase (nothing to re-drive): the
    condition `status` would write is the True one, and a running workload has its start time. A
    failed or succeeded TrainJob of a non-terminal Job, or a TrainJob of another attempt, is never in
    step: its event must go to the function that decides."""
    if not is_current(state.job, workload) or result.phase in (Phase.FAILED, Phase.SUCCEEDED):
        return False
    if result.phase is Phase.RUNNING and (state.job.status.workload_start_time is None
                                          or state.job.status.scheduling_blocked_since is not None
                                          or state.job.spec.stall_multiplier is not None):
        return False  # re-driven each tick: a block's grace and a stall's bound run out with nothing changing
    return state.true_condition == condition_for(result.phase, workload.name, result.message)
