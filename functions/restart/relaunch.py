"""The next attempt `restart` launches itself once its plan is done (`Relaunch`), when no grace is to be
waited and no finalizer holds the failed TrainJob's name (`relaunches`), with the replicatedJobs the failed
attempt's own runtime patch names (`own_patch_jobs`). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from events.envelope import Envelope
from functions.domain import grace
from functions.domain.jobs import JobState, as_written
from functions.domain.launching import LaunchObserved, decide_launch, why_not_launch
from functions.domain.trainjobs import patched_jobs
from functions.runtime.plan import Plan, Written, nothing
from functions.runtime.settings import Settings


def relaunches(state: JobState, trainjob: dict[str, Any] | None, settings: Settings, now: datetime) -> bool:
    """Whether the restart launches the next attempt itself: no grace to wait (`functions.domain.grace.none_to_wait`:
    none configured, none recorded under another setting that is not over), not observing, and no finalizer
    holding the failed attempt's TrainJob, whose name the next one takes (background deletion frees it at
    once otherwise). `launch` answers the restart's commit unread only when the Job carries no grace at all
    (`functions.launch.wants.restart_launches`); else it reads the Job once any grace is over and launches
    what `restart` left."""
    held = bool(trainjob and (trainjob.get("metadata") or {}).get("finalizers"))
    return not settings.observe and grace.none_to_wait(state, now, settings.restart_grace_seconds) and not held


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


@dataclass(frozen=True)
class Relaunch:
    """The next attempt, launched by the restart itself (`relaunches`) once its plan is done, decided as
    `launch` decides it (`functions.domain.launching.decide_launch`: the TrainJob created, `workloadRef` and
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
    function: str

    def follow(self, created: Mapping[str, Any] | None, written: Written) -> Plan:
        ref = self.state.ref
        state = as_written(written, self.settings.cre_group, ref.namespace, ref.name) or self.state
        if why := why_not_launch(state, self.settings):
            return nothing(f"next attempt: {why}")
        return decide_launch(LaunchObserved(state, None, runtime_jobs=self.runtime_jobs), self.settings, self.now,
                             self.function, self.cause)
