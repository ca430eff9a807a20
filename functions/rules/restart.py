"""Checkpoint restart or failure (SPEC §5 `restart`, §6.3).

A failure of the Job's current attempt — the workload failed or was deleted, or it stalled
(`functions.rules.stall`) — is restarted when the Job has `spec.checkpoint`, restarts left (`restartCount <
maxRestarts`) and, when required, checkpoint evidence (a GoodputMeasurement of the Job with
`lastCheckpointStep > 0`). Otherwise the Job is `Failed`/`WorkloadFailed` (a stall:
`Failed`/`WorkloadStalled`), its nodes attributed (`functions.rules.verdicts`) and its failure log captured
(`functions.rules.pods`). `decide(observed, settings, now)` is the `restart` function's whole decision;
`goodputs_wanted`, `capture_wanted` and `runtime_wanted` tell its read which reads can change it. A restart
is four steps, each safe to repeat: grace annotation (none when the grace is 0), status write (the commit
point, `restart_write`), TrainJob delete, GoodputMeasurement reset; with no grace, then the next attempt
(`Relaunch`). The steps, redeliveries and stalls decided again: docs/functions.md#restart-step-by-step
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from events.emitted import ConditionSummary, JobRestartedData, WorkloadPhaseData, WorkloadRef, WorkloadStalledData
from events.envelope import Envelope, to_outbound
from events.objects import TrainJob
from events.types import EventType, Phase, Reason
from functions.plan import Delete, Effect, Plan, Written, nothing
from functions.resources import TRAINJOBS
from functions.rules import grace
from functions.rules.adapter import decide_phase
from functions.rules.attempts import is_current, is_recorded, workload_name
from functions.rules.conditions import changes_condition, condition, decide_conditions
from functions.rules.jobs import JobState, as_written, condition_changed, why_not_current, why_not_ours
from functions.rules.launch import LaunchObserved, decide_launch, owned_by, patched_jobs, why_not_launch
from functions.rules.measurements import GoodputMeasurement, is_reset, reset_goodput
from functions.rules.pods import Capture, failure_info, failure_log_field
from functions.rules.redelivery import Announced, restate, restating
from functions.rules.running import decide_running
from functions.rules.verdicts import ConditionWrite, condition_write, failed_nodes
from functions.settings import Settings

FUNCTION = "restart"


@dataclass(frozen=True)
class Observed:
    """What the `restart` function read fresh for one event."""

    cause: Envelope
    data: WorkloadPhaseData | WorkloadStalledData
    state: JobState | None = None
    trainjob: dict[str, Any] | None = None
    """The attempt's TrainJob (None: gone, or its name now held by another attempt, `held_by`)."""
    held_by: dict[str, Any] | None = None
    """The TrainJob holding the name when it is not the event's attempt's (another attempt label, or none):
    that attempt was not seen deleted."""
    evidence: bool | None = None
    """Checkpoint evidence, read only when it can change the decision."""
    capture: Capture | None = None
    """The attempt's pods and failed container (its log tail only for a failure to record)."""
    goodput: GoodputMeasurement | None = None
    """The Job's GoodputMeasurement: the stall re-check's input, and what a restart resets."""
    runtime_jobs: tuple[str, ...] | None = None
    """The training runtime's replicatedJobs, read for a relaunch when the failed attempt's TrainJob does
    not name them (`runtime_wanted`)."""
    announced: Announced | None = None
    """The transition Event of the Job's verdict, read when the event may be the one that decided it, delivered
    again (`restate_wanted`)."""


@dataclass(frozen=True)
class Failure:
    """The failure as freshly observed: the TrainJob's name, whether it was deleted, its message."""

    name: str
    deleted: bool
    message: str


@dataclass(frozen=True)
class RestartDecision:
    restart: bool
    why: str


def decide_restart(state: JobState, evidence: bool | None, require_evidence: bool) -> RestartDecision:
    """Whether a failure of the Job's current attempt may be restarted (SPEC §6.3)."""
    checkpoint = state.job.spec.checkpoint
    count = state.job.status.restart_count
    if checkpoint is None:
        return RestartDecision(False, "no checkpoint configured")
    if count >= checkpoint.max_restarts:
        return RestartDecision(False, f"restarts exhausted ({count}/{checkpoint.max_restarts})")
    if require_evidence and not evidence:
        return RestartDecision(False, "no checkpoint evidence (GoodputMeasurement lastCheckpointStep > 0)")
    return RestartDecision(True, f"restart {count + 1}/{checkpoint.max_restarts}")


def observe_failure(name: str, uid: str, trainjob: dict[str, Any] | None) -> Failure | None:
    """The failure on a fresh read (the attempt's TrainJob, None when it is gone), or None when the
    TrainJob exists and has not failed (a stale or forged event)."""
    if trainjob is None:
        return Failure(name, deleted=True, message="")
    if uid and trainjob["metadata"].get("uid") != uid:
        return None
    result = decide_phase(TrainJob.model_validate(trainjob))
    if result.phase is not Phase.FAILED:
        return None
    return Failure(name, deleted=False, message=result.message)


def failed_message(failure: Failure) -> str:
    subject = f"Workload TrainJob/{failure.name}"
    if failure.deleted:
        return f"{subject} was deleted"
    return f"{subject} failed: {failure.message}" if failure.message else f"{subject} has failed"


def still_running(uid: str, trainjob: dict[str, Any] | None) -> bool:
    """Whether the attempt's TrainJob (None: gone) exists, is the one the event named (its uid, when the
    event carries it) and is Running on a fresh read: what a stall is decided about."""
    if trainjob is None or (uid and trainjob["metadata"].get("uid") != uid):
        return False
    return decide_phase(TrainJob.model_validate(trainjob)).phase is Phase.RUNNING


def failed_write(state: JobState, failure: Failure, now: datetime, group: str, function: str,
                 capture: Capture | None = None, cause: str = "") -> tuple[ConditionWrite, ConditionSummary] | None:
    """The write that fails the Job, with its nodes attributed and its failure log; None when it is so
    already."""
    return verdict_write(state, Reason.WORKLOAD_FAILED, failed_message(failure), now, group, function, capture,
                         cause)


def verdict_write(state: JobState, reason: str, message: str, now: datetime, group: str, function: str,
                  capture: Capture | None = None, cause: str = "") -> tuple[ConditionWrite, ConditionSummary] | None:
    """`Failed`/`reason`/`message` (CRE's `setJobFailed`): the Job's nodes attributed and its failure log
    recorded; None when the Job says so already. `cause`: the deciding event's id, recorded on its Event."""
    new = condition("Failed", reason, message)
    if decide_conditions(state.conditions, state.job.metadata.generation, new, now) is None:
        return None
    write = condition_write(state, new, now, group, function,
                            {**failed_nodes(state, group, message, capture.pods if capture else ()),
                             **failure_log_field(state, capture)}, cause)
    return None if write is None else (write, new)


def restart_write(state: JobState, now: datetime, group: str, function: str) -> ConditionWrite:
    """The commit point of a restart."""
    assert state.job.spec.checkpoint is not None
    n, limit = state.job.status.restart_count + 1, state.job.spec.checkpoint.max_restarts
    message = f"Restarting workload from checkpoint (restart {n}/{limit})"
    new = condition("InProgress", Reason.WORKLOAD_RESTARTING, message)
    write = condition_write(state, new, now, group, function,
                            {"restartCount": n, "workloadRef": None, "workloadStartTime": None,
                             "schedulingBlockedSince": None, "schedulingResumedTime": None})
    assert write is not None
    return write


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


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    data, state = observed.data, observed.state
    if isinstance(data, WorkloadPhaseData) and not is_failure(data):
        return nothing(f"phase {data.phase.value} is handled by the status function")
    if reported_before(data):
        return nothing(f"TrainJob {data.workload.name} was deleted after it failed: its failure was decided then")
    if why := why_not_ours(state, data.job, settings):
        return nothing(why)
    assert state is not None
    if why := why_not_its_workload(state, data.workload, observed.trainjob):
        return nothing(why)
    if is_recorded(state.job, data.workload):
        return Plan(finish_restart(observed, state, now, settings),
                    reason=f"{state.where}: restart of attempt {data.workload.attempt} already recorded",
                    then=relaunch(observed, state, now, settings, committing=False))
    if observed.announced is not None and (verdict := verdict_of(observed)) is not None:
        return restate(state, verdict, observed.announced.event, now, FUNCTION, observed.cause, data.workload)
    if why := why_not_current(state, data.workload):
        return nothing(why)
    if isinstance(data, WorkloadStalledData):
        return decide_stalled(observed, data, state, settings, now)
    if observed.held_by is not None:
        return nothing(f"stale: TrainJob {data.workload.name} is not attempt {data.workload.attempt} on a fresh "
                       "read")
    failure = observe_failure(data.workload.name, data.workload.uid, observed.trainjob)
    if failure is None:
        return nothing(f"stale: TrainJob {data.workload.name} has not failed on a fresh read")
    if not decide_restart(state, observed.evidence, settings.require_checkpoint_evidence).restart:
        return fail(observed, state, failed_write(state, failure, now, settings.cre_group, FUNCTION,
                                                  observed.capture, observed.cause.id))
    return restart(observed, state, now, settings)


def verdict_of(observed: Observed) -> ConditionSummary | None:
    """The verdict the event would write on the Job as read: `Failed`/`WorkloadStalled` with the stall's message
    (re-deciding the stall would need the pods, and only a Job that shows exactly it is restated), or
    `Failed`/`WorkloadFailed` for the failure on the fresh TrainJob read; None when the TrainJob has not failed."""
    data = observed.data
    if isinstance(data, WorkloadStalledData):
        return condition("Failed", Reason.WORKLOAD_STALLED, data.message)
    failure = None if observed.held_by is not None else observe_failure(data.workload.name, data.workload.uid,
                                                                         observed.trainjob)
    return None if failure is None else condition("Failed", Reason.WORKLOAD_FAILED, failed_message(failure))


def restate_wanted(observed: Observed, now: datetime) -> str:
    """The transition Event to read for a terminal Job when the event may be the one that decided its verdict,
    delivered again (`functions.rules.redelivery.restating`); "" otherwise."""
    state, data = observed.state, observed.data
    if state is None or not state.terminal or is_recorded(state.job, data.workload) or not is_failure(data) \
            or not is_current(state.job, data.workload):
        return ""
    observed_at = data.observed_at if isinstance(data, WorkloadPhaseData) else None
    return restating(state, verdict_of(observed), observed_at, now)


def decide_stalled(observed: Observed, data: WorkloadStalledData, state: JobState, settings: Settings,
                   now: datetime) -> Plan:
    """A stall, decided again on the fresh reads: restarted like a failure, else `Failed`/`WorkloadStalled`."""
    if not still_running(data.workload.uid, observed.trainjob) or observed.capture is None:
        return nothing(f"stale: TrainJob {data.workload.name} is not running on a fresh read")
    stall = decide_running(state, observed.capture.pods, data.workload.name, now, observed.goodput).stall
    if stall is None:
        return nothing(f"{state.where}: TrainJob {data.workload.name} is not stalled on a fresh read")
    if not decide_restart(state, observed.evidence, settings.require_checkpoint_evidence).restart:
        return fail(observed, state, verdict_write(state, Reason.WORKLOAD_STALLED, stall.message, now,
                                                   settings.cre_group, FUNCTION, observed.capture, observed.cause.id))
    return restart(observed, state, now, settings)


def fail(observed: Observed, state: JobState, decided: tuple[ConditionWrite, ConditionSummary] | None) -> Plan:
    """The Failed write (None: recorded already) and its `job.condition.changed`."""
    if decided is None:
        return nothing(f"{state.where}: failure already recorded")
    write, new = decided
    if not changes_condition(state.true_condition, new):
        return Plan(write.effects, reason=f"{state.where}: failure already recorded")
    return Plan(write.effects, reply=condition_changed(state, write.status, new, FUNCTION, observed.cause,
                                                       observed.data.workload))


def restart(observed: Observed, state: JobState, now: datetime, settings: Settings) -> Plan:
    """Steps 1 to 4 of a restart, and `job.restarted`."""
    commit = restart_write(state, now, settings.cre_group, FUNCTION)
    grace_length = grace.length(state, settings.restart_grace_seconds)
    grace_end = now + grace_length
    assert state.job.spec.checkpoint is not None
    restarted = JobRestartedData(job=state.ref, attempt=state.job.status.restart_count + 1,
                                 max_restarts=state.job.spec.checkpoint.max_restarts,
                                 previous_workload=observed.data.workload, not_before=grace_end,
                                 failure=failure_info(observed.capture))
    locked = (grace.annotate(state, grace_end, settings.cre_group, state.job.metadata.resource_version),) \
        if grace_length else ()
    reset = (reset_goodput(observed.goodput, settings.cre_group, now),) if observed.goodput else ()
    return Plan((*locked, *commit.effects, *delete_failed(observed), *reset),
                reply=to_outbound(EventType.JOB_RESTARTED, FUNCTION, state.ref.namespace, state.ref.name, restarted,
                                  observed.cause), then=relaunch(observed, state, now, settings))


def finish_restart(observed: Observed, state: JobState, now: datetime, settings: Settings) -> tuple[Effect, ...]:
    """The steps of a restart already committed left undone (a redelivery after a crash between steps): the
    grace annotation, the TrainJob delete, and the GoodputMeasurement reset while the next attempt has not
    started and the measurement still shows step state (`reset_pending`, `is_reset`)."""
    effects: list[Effect] = []
    grace_length = grace.length(state, settings.restart_grace_seconds)
    if (grace_length and observed.data.workload.attempt == state.job.status.restart_count - 1
            and not grace.recorded(state, observed.trainjob)):
        effects.append(grace.annotate(state, now + grace_length, settings.cre_group))
    gm = observed.goodput
    reset = (reset_goodput(gm, settings.cre_group, now),) \
        if gm is not None and reset_pending(observed.data, state) and not is_reset(gm) else ()
    return (*effects, *delete_failed(observed), *reset)


def delete_failed(observed: Observed) -> tuple[Effect, ...]:
    """Delete the failed attempt's TrainJob, never a newer one with the same name (uid precondition)."""
    trainjob = observed.trainjob
    if trainjob is None or trainjob["metadata"].get("deletionTimestamp"):
        return ()
    workload = observed.data.workload
    meta = trainjob["metadata"]
    return (Delete(TRAINJOBS, meta["namespace"], workload.name, meta["uid"]),)


def relaunches(state: JobState, trainjob: dict[str, Any] | None, settings: Settings, now: datetime) -> bool:
    """Whether the restart launches the next attempt itself: no grace to wait (`functions.rules.grace.none_to_wait`:
    none configured, none recorded under another setting that is not over), not observing, and no finalizer
    holding the failed attempt's TrainJob, whose name the next one takes (background deletion frees it at
    once otherwise). `launch` answers the restart's commit unread only when the Job carries no grace at all
    (`functions.rules.launch.restart_launches`); else it reads the Job once any grace is over and launches
    what `restart` left."""
    held = bool(trainjob and (trainjob.get("metadata") or {}).get("finalizers"))
    return not settings.observe and grace.none_to_wait(state, now, settings.restart_grace_seconds) and not held


def relaunch(observed: Observed, state: JobState, now: datetime, settings: Settings,
             committing: bool = True) -> Relaunch | None:
    """The next attempt launched by the restart (`relaunches`): after its commit (which clears `workloadRef`),
    or after a restart recorded before whose next attempt has no workload yet."""
    if not relaunches(state, observed.trainjob, settings, now) or (
            not committing and state.job.status.workload_ref is not None):
        return None
    jobs = observed.runtime_jobs or own_patch_jobs(observed.trainjob, state)
    return Relaunch(state, settings, now, observed.cause, jobs)


def own_patch_jobs(trainjob: dict[str, Any] | None, state: JobState) -> tuple[str, ...] | None:
    """The replicatedJobs the failed attempt's own runtime patch names, when that attempt ran the training
    runtime the Job names now; None otherwise (none, or the Job's `runtimeRef` edited since: the runtime is
    read, as `launch` reads it)."""
    def runtime(ref: Any) -> tuple[str, str]:
        ref = ref if isinstance(ref, dict) else {}
        return str(ref.get("name") or ""), "TrainingRuntime" if ref.get("kind") == "TrainingRuntime" else "Cluster"

    ran = ((trainjob or {}).get("spec") or {}).get("runtimeRef")
    if runtime(ran) != runtime((state.job.spec.workload.train_job or {}).get("runtimeRef")):
        return None
    return patched_jobs(trainjob)


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


@dataclass(frozen=True)
class Relaunch:
    """The next attempt, launched by the restart itself (`relaunches`) once its plan is done, decided as
    `launch` decides it (`functions.rules.launch.decide_launch`: the TrainJob created, `workloadRef` and
    `WorkloadCreated` written, then its first phase) on the Job as the restart's commit left it (as read,
    for a restart recorded before). The name is taken to be free (the plan deleted the failed attempt's
    TrainJob, or found it gone); the TrainJob's replicatedJobs are those the failed attempt's own runtime
    patch names (`own_patch_jobs`), else the training runtime's, read. Its `workload.created` is sent. A
    create that fails (refused, the name taken) is reported in the answer, and the resync tick launches (or
    adopts) for the Job, which has no workload."""

    state: JobState
    settings: Settings
    now: datetime
    cause: Envelope | None
    runtime_jobs: tuple[str, ...] | None

    def follow(self, created: Mapping[str, Any] | None, written: Written) -> Plan:
        ref = self.state.ref
        state = as_written(written, self.settings.cre_group, ref.namespace, ref.name) or self.state
        if why := why_not_launch(state, self.settings):
            return nothing(f"next attempt: {why}")
        return decide_launch(LaunchObserved(state, None, runtime_jobs=self.runtime_jobs), self.settings, self.now,
                             FUNCTION, self.cause)
