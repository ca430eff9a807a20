"""Finishing CRE's deletion of a Job (CRE's Job reconciler on a `deletionTimestamp`), for a Job that carries CRE's
finalizer `<cre group>/finalizer` once CRE's controller no longer runs. Pure.

As CRE does it: the Job's TrainJob is deleted (uid precondition, only one the Job controls); while a pod labelled
with the Job (`<group>/job`, any attempt) is not terminal (neither Succeeded nor Failed), and for at most five
minutes from the deletion timestamp, the Job is kept (a wait, answered 503 with `Retry-After`); then CRE's
finalizer, and only CRE's, is removed, locked on the version read, and the API server deletes the Job. The
functions add no finalizer of their own (docs/deviations.md). Observe mode: nothing. docs/functions.md#deletion
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from events.objects import Pod
from functions.domain.attempts import delete_attempt
from functions.domain.jobs import JobState, is_managed
from functions.runtime.effects import Finalizers, Wait, wait_until
from functions.runtime.plan import Plan, nothing
from functions.runtime.resources import cre_jobs
from functions.runtime.settings import Settings

POD_DRAIN_LIMIT = timedelta(minutes=5)
"""How long CRE keeps a deleted Job for its pods to end (`podDrainTimeout`), from the deletion timestamp."""
POD_RECHECK = 15
"""Seconds before the pods are looked at again (the 503's `Retry-After`), as CRE requeues its wait."""
TERMINAL_POD_PHASES = frozenset({"Succeeded", "Failed"})


def finalizer(cre_group: str) -> str:
    """CRE's finalizer on every Job it reconciles."""
    return f"{cre_group}/finalizer"


def finishes(state: JobState, settings: Settings) -> bool:
    """Whether the Job is one whose deletion the functions finish: managed, being deleted, with CRE's finalizer."""
    meta = state.job.metadata
    return (meta.deletion_timestamp is not None and finalizer(settings.cre_group) in meta.finalizers
            and is_managed(meta.labels, settings))


@dataclass(frozen=True)
class Deleting:
    """A Job being deleted that carries CRE's finalizer, read fresh: its TrainJob (the object of its workload's
    name, or None) and the pods labelled with it."""

    state: JobState
    trainjob: Mapping[str, Any] | None
    pods: Sequence[Pod]


def running_pods(pods: Sequence[Pod]) -> list[str]:
    """The pods that have not ended, by name."""
    return sorted(p.metadata.name for p in pods if p.status.phase not in TERMINAL_POD_PHASES)


def decide_deletion(observed: Deleting, settings: Settings, now: datetime) -> Plan:
    """The TrainJob deleted, then the wait for the pods, then CRE's finalizer removed."""
    state = observed.state
    meta = state.job.metadata
    if settings.observe:
        return nothing(f"observe mode: would finish the deletion of {state.where} (CRE's finalizer)")
    assert meta.deletion_timestamp is not None
    deleted = delete_attempt(observed.trainjob and dict(observed.trainjob), meta.uid)
    running = running_pods(observed.pods)
    bound = meta.deletion_timestamp + POD_DRAIN_LIMIT
    if running and now < bound:
        listed = ", ".join(running[:5]) + (f" and {len(running) - 5} more" if len(running) > 5 else "")
        waiting = wait_until(f"{state.where} is being deleted: its pods have not ended ({listed})", bound, now)
        return Plan((*deleted, Wait(waiting.reason, min(waiting.retry_after or POD_RECHECK, POD_RECHECK))))
    kept = [f for f in meta.finalizers if f != finalizer(settings.cre_group)]
    why = "its pods have ended" if not running else f"its pods did not end within {POD_DRAIN_LIMIT.seconds // 60} min"
    return Plan((*deleted, Finalizers(cre_jobs(settings.cre_group), meta.namespace, meta.name, tuple(kept),
                                      meta.resource_version)),
                reason=f"{state.where} is being deleted and {why}: CRE's finalizer removed")
