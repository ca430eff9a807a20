"""Attempts (SPEC §5, §6.3, §6.4): a Job's TrainJob is `<job>-workload` in every attempt, and its
`crefn.dev/attempt` label (the Job's `restartCount` when it was created) tells attempts apart.

An event or an object belongs to the Job's current attempt when it names the TrainJob of the Job's
`workloadRef` and carries the attempt number `restartCount`; anything older is stale and never acts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from events.emitted import WorkloadRef
from events.objects import CreJob, TrainJob
from events.types import ATTEMPT_LABEL, TRAINJOB_API_VERSION, TRAINJOB_KIND
from functions.domain.naming import truncate
from functions.runtime.resources import TRAINJOBS

if TYPE_CHECKING:
    from functions.runtime.effects import Effect

WORKLOAD_NAME_LIMIT = 44
"""CRE's `naming.MaxWorkloadNameLen`: room for JobSet's pod name suffixes."""


def workload_name(job_name: str) -> str:
    """`<job>-workload`, truncated to 44 characters as CRE names it (`functions.domain.naming.truncate`)."""
    return truncate(f"{job_name}-workload", WORKLOAD_NAME_LIMIT)


def attempt_of(labels: Mapping[str, str]) -> int | None:
    """The attempt number an object's labels carry, if any."""
    value = labels.get(ATTEMPT_LABEL, "")
    return int(value) if value.isdigit() else None


def attempt_label(attempt: int) -> dict[str, str]:
    return {ATTEMPT_LABEL: str(attempt)}


def of_attempt(obj: Mapping[str, Any] | None, attempt: int | None) -> bool:
    """Whether an object (raw) exists and carries this attempt's label."""
    labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
    return obj is not None and attempt is not None and attempt_of(labels) == attempt


def controlled_by(obj: Mapping[str, Any], uid: str) -> bool:
    """Whether an object (raw) has the object of that uid as its controller (its controlling ownerReference)."""
    owners = [o for o in (obj.get("metadata") or {}).get("ownerReferences") or [] if o.get("controller")]
    return bool(uid) and any(o.get("uid") == uid for o in owners)


def delete_attempt(trainjob: Mapping[str, Any] | None, job_uid: str) -> tuple[Effect, ...]:
    """The attempt's TrainJob deleted with its uid as the precondition, unless it is gone, going already or not
    controlled by the Job of `job_uid` (never another's, whatever `workloadRef` names)."""
    from functions.runtime.effects import Delete  # `phase`, which deletes nothing, never makes the effects

    if trainjob is None or trainjob["metadata"].get("deletionTimestamp") or not controlled_by(trainjob, job_uid):
        return ()
    meta = trainjob["metadata"]
    return (Delete(TRAINJOBS, meta["namespace"], meta["name"], meta["uid"]),)


def is_current(job: CreJob, workload: WorkloadRef) -> bool:
    """The workload is the Job's current attempt: its TrainJob by name, with the attempt `restartCount`."""
    ref = job.status.workload_ref
    return ref is not None and ref.name == workload.name and workload.attempt == job.status.restart_count


def is_recorded(job: CreJob, workload: WorkloadRef) -> bool:
    """The workload's attempt is older than the Job's: its restart has been recorded already."""
    return workload.attempt is not None and workload.attempt < job.status.restart_count


def workload_ref_of(trainjob: TrainJob) -> WorkloadRef:
    return WorkloadRef(api_version=TRAINJOB_API_VERSION, kind=TRAINJOB_KIND, name=trainjob.metadata.name,
                       namespace=trainjob.metadata.namespace, uid=trainjob.metadata.uid,
                       resource_version=trainjob.metadata.resource_version,
                       attempt=attempt_of(trainjob.metadata.labels))


def current_workload_ref(job: CreJob, name: str = "") -> WorkloadRef:
    """The Job's current attempt as a reference (its `workloadRef`, or `name` when it has none)."""
    ref = job.status.workload_ref
    return WorkloadRef(api_version=(ref.api_version if ref else "") or TRAINJOB_API_VERSION,
                       kind=(ref.kind if ref else "") or TRAINJOB_KIND, name=ref.name if ref else name,
                       namespace=(ref.namespace if ref else "") or job.metadata.namespace,
                       attempt=job.status.restart_count)


def stale(workload: WorkloadRef, namespace: str, job: str) -> str:
    return (f"stale: TrainJob {workload.name} attempt {workload.attempt} is not the current attempt of "
            f"Job {namespace}/{job}")
