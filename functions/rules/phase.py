"""A TrainJob's phase as the event `dev.crefn.workload.phase` (SPEC §3, §4.2), for `phase` and `resync`.

The owning Job is the TrainJob's controller ownerReference of kind `Job` in the CRE group (the kind
alone is ambiguous with batch/v1), or else the `<cre group>/job` label. `decide` is the `phase`
function's decision on what `functions.handlers.phase` read: the pure adapter's phase
(`functions.rules.adapter`) of a TrainJob with an owning Job; a TrainJob gone is `Failed`/deleted for
the Job whose `workloadRef` names it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from events.emitted import JobRef, WorkloadPhaseData, WorkloadRef
from events.envelope import Envelope, ObjectReference, Outbound, first_error, to_outbound
from events.objects import CreJob, TrainJob
from events.types import FIRST_PHASE_ANNOTATION, JOB_KIND, EventType, Phase, job_label
from functions.errors import PermanentError
from functions.plan import Plan, nothing
from functions.rules.adapter import PhaseResult, WrongKind, check_trainjob, decide_phase, deleted_phase
from functions.rules.attempts import workload_ref_of
from functions.settings import Settings

FUNCTION = "phase"


@dataclass(frozen=True)
class Skipped:
    """Nothing to send, said by the read (a pod whose attempt's TrainJob is gone, say)."""

    why: str


@dataclass(frozen=True)
class Seen:
    """A TrainJob: the event's object (Resource mode) or read fresh; `deleted` for a delete event, `added` for
    the add event of a TrainJob whose creator decides its first phase (`created_by_functions`)."""

    cause: Envelope
    trainjob: TrainJob
    deleted: bool = False
    added: bool = False


@dataclass(frozen=True)
class Gone:
    """Reference mode, the TrainJob gone on the read, and the Job whose `workloadRef` names it (None: none)."""

    cause: Envelope
    ref: ObjectReference
    owner: CreJob | None


Observed = Skipped | Seen | Gone


def parse_trainjob(obj: dict[str, Any]) -> TrainJob:
    try:
        check_trainjob(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        return TrainJob.model_validate(obj)
    except WrongKind as e:
        raise PermanentError(str(e)) from None
    except ValidationError as e:
        raise PermanentError(f"invalid TrainJob: {first_error(e)}") from None


def find_owner(trainjob: TrainJob, cre_group: str) -> str | None:
    """The name of the CRE Job that owns a TrainJob."""
    owner = trainjob.controller_owner()
    if owner and owner.kind == JOB_KIND and owner.api_version.split("/")[0] == cre_group:
        return owner.name
    return trainjob.metadata.labels.get(job_label(cre_group)) or None


def phase_event(job: str, workload: WorkloadRef, result: PhaseResult, now: datetime, function: str,
                cause: Envelope | None, failed_before: bool | None = None, created: bool | None = None) -> Outbound:
    data = WorkloadPhaseData(job=JobRef(name=job, namespace=workload.namespace), workload=workload,
                             phase=result.phase, reason=result.reason, message=result.message, observed_at=now,
                             failed_before=failed_before, created=created)
    return to_outbound(EventType.WORKLOAD_PHASE, function, workload.namespace, job, data, cause,
                       workloadphase=result.phase.value)


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    if isinstance(observed, Skipped):
        return nothing(observed.why)
    if isinstance(observed, Gone):
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
    creator`, `functions.rules.launch.FirstPhase`); CRE's TrainJobs, or one made by hand, do not."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return isinstance(annotations, dict) and annotations.get(FIRST_PHASE_ANNOTATION) == "creator"


def just_created(observed: Seen) -> bool | None:
    """True for the add of a TrainJob with no condition yet (`created` in `workload.phase`); None otherwise."""
    return True if observed.added and not observed.trainjob.status.conditions else None

