"""What steers `restart`'s read, asked once each by the read and again by the decision: whether the event is
this function's (`is_failure`, `reported_before`), whether it names the Job's own TrainJob
(`why_not_its_workload`), and which reads can change the decision (`trainjob_wanted`, `goodputs_wanted`,
`capture_wanted`, `runtime_wanted`, `restate_wanted`). Pure."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from events.emitted import WorkloadPhaseData, WorkloadRef, WorkloadStalledData
from events.types import Phase, Reason
from functions.domain.attempts import is_current, is_recorded, workload_name
from functions.domain.checkpoint import decide_restart
from functions.domain.jobs import JobState, why_not_current
from functions.domain.redelivery import restating
from functions.domain.trainjobs import owned_by
from functions.restart.observed import Observed, still_running, verdict_of
from functions.restart.relaunch import own_patch_jobs, relaunches
from functions.runtime.settings import Settings


def why_not_its_workload(state: JobState, workload: WorkloadRef, trainjob: dict[str, Any] | None) -> str:
    """Why the event's workload is not the Job's own TrainJob ("" when it is): another namespace than the Job's,
    another name than `<job>-workload`, or a TrainJob the Job does not control. An event naming another's
    TrainJob (forged, or of another Job of the same name) changes nothing: nothing of it is read or deleted."""
    where = f"TrainJob {workload.namespace}/{workload.name}"
    if workload.namespace not in ("", state.ref.namespace) or workload.name != workload_name(state.ref.name):
        return f"{where} is not the workload of {state.where}"
    if trainjob is not None and not owned_by(trainjob, state):
        return f"{where} is not controlled by {state.where}"
    return ""


def is_failure(data: WorkloadPhaseData | WorkloadStalledData) -> bool:
    """Whether the event is this function's: a stall, or the phase `Failed` (the rest is `status`'s)."""
    return not isinstance(data, WorkloadPhaseData) or data.phase is Phase.FAILED


def deleted(data: WorkloadPhaseData | WorkloadStalledData) -> WorkloadPhaseData | None:
    """The event's data when it is about its TrainJob's delete (`Failed`/`WorkloadDeleted`), else None: the
    narrowing is in the type returned (a `TypeGuard` is lost when the function is wrapped, as `make mutation`
    wraps it)."""
    return data if isinstance(data, WorkloadPhaseData) and data.reason == Reason.WORKLOAD_DELETED else None


def is_delete(data: WorkloadPhaseData | WorkloadStalledData) -> bool:
    """Whether the event is about its TrainJob's delete (`Failed`/`WorkloadDeleted`)."""
    return deleted(data) is not None


def reported_before(data: WorkloadPhaseData | WorkloadStalledData) -> bool:
    """Whether the event is the delete of a TrainJob that had failed before, as `phase` saw its last state: its
    failure was decided when it failed (the restart's own delete comes back so). Nothing is read for it; a
    forged one only skips work, and a failure whose event was lost comes back from the resync tick."""
    delete = deleted(data)
    return delete is not None and bool(delete.failed_before)


def trainjob_wanted(data: WorkloadPhaseData | WorkloadStalledData, state: JobState) -> bool:
    """Whether the attempt's TrainJob can change the decision: not for the delete of an attempt whose restart
    is recorded — that delete is the restart's own last step, and what a forged one would leave undone
    (an earlier attempt's TrainJob) `launch` or the resync tick deletes when it finds it."""
    return not (is_delete(data) and is_recorded(state.job, data.workload))


def reset_pending(data: WorkloadPhaseData | WorkloadStalledData, state: JobState) -> bool:
    """Whether the event is about the attempt whose restart the Job records last, the Job is not terminal and
    the next attempt has not started (no `workloadStartTime`): that restart's last step, the GoodputMeasurement
    reset, may be undone (a crash after its commit), and the next attempt's stall check would measure from the
    failed one's steps. A terminal Job's measurement is its record: never reset for an old attempt's event."""
    status = state.job.status
    return data.workload.attempt == status.restart_count - 1 and status.workload_start_time is None \
        and not state.terminal


def goodputs_wanted(observed: Observed, settings: Settings) -> tuple[bool, bool]:
    """Whether the Job's GoodputMeasurements can change the decision (a stall's re-check, a restart's
    reset, its checkpoint evidence), and whether as checkpoint evidence. For a restart recorded whose reset
    may be undone (`reset_pending`), read for every event but a TrainJob delete: the restart's own delete comes
    back so, with no crash, and is not to cost a read (a redelivered stall always reads it)."""
    state, data = observed.state, observed.data
    assert state is not None
    could_restart = decide_restart(state, evidence=True, require_evidence=True).restart
    stalled = isinstance(data, WorkloadStalledData)
    unfinished = is_recorded(state.job, data.workload) and reset_pending(data, state) and not is_delete(data)
    return stalled or could_restart or unfinished, settings.require_checkpoint_evidence and could_restart


def capture_wanted(observed: Observed, settings: Settings) -> tuple[bool, bool]:
    """Whether the attempt's pods can change the decision (a failure of the current attempt, or a stall
    of one still running), and whether the failed container's log tail is to be recorded with them."""
    data, state = observed.data, observed.state
    assert state is not None
    if is_recorded(state.job, data.workload) or why_not_current(state, data.workload) or (
            isinstance(data, WorkloadStalledData) and not still_running(data.workload.uid, observed.trainjob)):
        return False, False
    fails = not decide_restart(state, observed.evidence, settings.require_checkpoint_evidence).restart
    return True, fails and state.job.status.failure_log is None


def restate_wanted(observed: Observed, now: datetime) -> str:
    """The transition Event to read for a terminal Job when the event may be the one that decided its verdict,
    delivered again (`functions.domain.redelivery.restating`); "" otherwise."""
    state, data = observed.state, observed.data
    if state is None or not state.terminal or is_recorded(state.job, data.workload) or not is_failure(data) \
            or not is_current(state.job, data.workload):
        return ""
    observed_at = data.observed_at if isinstance(data, WorkloadPhaseData) else None
    return restating(state, verdict_of(observed), observed_at, now)


def runtime_wanted(observed: Observed, settings: Settings, now: datetime) -> bool:
    """Whether the training runtime is to be read: the restart relaunches (a restart to make, or one recorded
    whose next attempt has no workload yet) and the failed attempt's TrainJob does not name its replicatedJobs
    (gone, or not created by the functions)."""
    state = observed.state
    assert state is not None
    if not relaunches(state, observed.trainjob, settings, now) or own_patch_jobs(observed.trainjob, state) is not None:
        return False
    if is_recorded(state.job, observed.data.workload):
        return state.job.status.workload_ref is None
    return decide_restart(state, observed.evidence, settings.require_checkpoint_evidence).restart
