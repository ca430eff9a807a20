"""A TrainJob's phase as the event `dev.crefn.workload.phase` (SPEC §3, §4.2), for `phase` and `resync`.

The owning Job is the TrainJob's controller ownerReference of kind `Job` in the CRE group (the kind
alone is ambiguous with batch/v1), or else the `<cre group>/job` label. `decide` is the `phase`
function's decision on what `functions.phase.read` read: the pure adapter's phase
(`functions.domain.adapter`) of a TrainJob with an owning Job; a TrainJob gone is `Failed`/deleted for
the Job whose `workloadRef` names it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from events.emitted import WorkloadRef
from events.envelope import Envelope, ObjectReference
from events.objects import CreJob, TrainJob
from events.types import FIRST_PHASE_ANNOTATION, Phase
from functions.domain.adapter import decide_phase, deleted_phase
from functions.domain.attempts import workload_ref_of
from functions.domain.jobs import Skipped
from functions.domain.phases import find_owner, phase_event
from functions.runtime.plan import Plan, nothing
from functions.runtime.settings import Settings

FUNCTION = "phase"


@dataclass(frozen=True)
class Seen:
    """A TrainJob: the event's object (Resource mode) or read fresh; `deleted` for a delete event, `added` for
    the add event of a TrainJob whose creator decides its first phase (`created_by_functions`)."""

    cause: Envelope
    trainjob: TrainJob
    deleted: bool = False
    added: bool = False


@dataclass(frozen=True)
class TrainJobGone:
    """Reference mode, the TrainJob gone on the read, and the Job whose `workloadRef` names it (None: none)."""

    cause: Envelope
    ref: ObjectReference
    owner: CreJob | None


Observed = Skipped | Seen | TrainJobGone


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    if isinstance(observed, Skipped):
        return nothing(observed.why)
    if isinstance(observed, TrainJobGone):
        ref, job = observed.ref, observed.owner
        if job is None:
            return nothing(f"TrainJob {ref.namespace}/{ref.name} is gone and no Job refers to it")
        workload = WorkloadRef(api_version=ref.apiVersion, kind=ref.kind, name=ref.name, namespace=ref.namespace,
                               attempt=job.status.restart_count)
        return Plan(reply=phase_event(job.metadata.name, workload, deleted_phase(ref.name), now, FUNCTION,
                                      observed.cause))
    trainjob = observed.trainjob
    owner = find_owner(trainjob, settings.cre_group)
    if not owner:
        return nothing(f"TrainJob {trainjob.metadata.namespace}/{trainjob.metadata.name} has no owning "
                       f"{settings.cre_group} Job")
    if observed.deleted:  # its last state says whether its failure was reported before (`failed_before`)
        failed = decide_phase(trainjob).phase is Phase.FAILED
        return Plan(reply=phase_event(owner, workload_ref_of(trainjob), deleted_phase(trainjob.metadata.name), now,
                                      FUNCTION, observed.cause, failed_before=failed))
    return Plan(reply=phase_event(owner, workload_ref_of(trainjob), decide_phase(trainjob), now, FUNCTION,
                                  observed.cause, created=just_created(observed)))


def created_by_functions(obj: dict[str, Any]) -> bool:
    """Whether the TrainJob says the function that created it decides its first phase (`crefn.dev/first-phase:
    creator`, `functions.domain.launching.FirstPhase`); CRE's TrainJobs, or one made by hand, do not."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return isinstance(annotations, dict) and annotations.get(FIRST_PHASE_ANNOTATION) == "creator"


def just_created(observed: Seen) -> bool | None:
    """True for the add of a TrainJob with no condition yet (`created` in `workload.phase`); None otherwise."""
    return True if observed.added and not observed.trainjob.status.conditions else None

