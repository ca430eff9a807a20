"""The `phase` function: TrainJob events → `dev.crefn.workload.phase` (SPEC §3, §5).

parse (ApiServerSource envelope) → read (Reference mode only: GET the TrainJob) → decide (the pure
adapter) → answer. Resource mode makes no API call. The owning Job is the TrainJob's controller
ownerReference of kind `Job` in the CRE group, or else the `<cre group>/job` label; a TrainJob
without one is not ours (202). A Reference-mode event for a TrainJob that no longer exists is a
delete; its owner is then found by listing the namespace's Jobs for the one whose
`status.workloadRef.name` names it (the object, and with it its ownerReferences, is gone).
"""

from __future__ import annotations

from pydantic import ValidationError

from events.emitted import JobRef, WorkloadPhaseData, WorkloadRef
from events.envelope import (
    Envelope,
    Outbound,
    ReferenceChange,
    ResourceChange,
    first_error,
    parse_apiserver_event,
    to_outbound,
)
from events.objects import CreJob, TrainJob
from events.types import (
    ATTEMPT_LABEL,
    JOB_KIND,
    TRAINJOB_API_VERSION,
    TRAINJOB_KIND,
    ApiServerType,
    EventType,
    job_label,
)
from functions.adapter import PhaseResult, WrongKind, check_trainjob, decide_phase, deleted_phase
from functions.context import Context
from functions.errors import PermanentError
from functions.gateway import TRAINJOBS, cre_jobs
from functions.outcome import NoReply, Outcome

FUNCTION = "phase"
ACCEPTS = frozenset(t.value for t in ApiServerType if t is not ApiServerType.PING)
"""Event types this function handles (the Triggers in knative/ may route only these)."""


def parse_trainjob(obj: dict[str, object]) -> TrainJob:
    try:
        check_trainjob(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        return TrainJob.model_validate(obj)
    except WrongKind as e:
        raise PermanentError(str(e)) from None
    except ValidationError as e:
        raise PermanentError(f"invalid TrainJob: {first_error(e)}") from None


def find_owner(trainjob: TrainJob, cre_group: str) -> str | None:
    """The name of the CRE Job that owns a TrainJob (apiVersion checked: `Job` alone is ambiguous)."""
    owner = trainjob.controller_owner()
    if owner and owner.kind == JOB_KIND and owner.api_version.split("/")[0] == cre_group:
        return owner.name
    return trainjob.metadata.labels.get(job_label(cre_group)) or None


def to_workload_ref(trainjob: TrainJob) -> WorkloadRef:
    attempt = trainjob.metadata.labels.get(ATTEMPT_LABEL, "")
    return WorkloadRef(
        api_version=TRAINJOB_API_VERSION,
        kind=TRAINJOB_KIND,
        name=trainjob.metadata.name,
        namespace=trainjob.metadata.namespace,
        uid=trainjob.metadata.uid,
        resource_version=trainjob.metadata.resource_version,
        attempt=int(attempt) if attempt.isdigit() else None,
    )


def handle(env: Envelope, ctx: Context) -> Outcome:
    change = parse_apiserver_event(env)
    group = ctx.settings.cre_group
    if isinstance(change, ResourceChange):
        trainjob = parse_trainjob(change.object)
        deleted = change.verb == "delete"
    else:
        current = read_trainjob(change, ctx)
        if current is None:
            return answer_gone(change, env, ctx)
        trainjob, deleted = current, False
    job = find_owner(trainjob, group)
    where = f"TrainJob {trainjob.metadata.namespace}/{trainjob.metadata.name}"
    if not job:
        return NoReply(f"{where} has no owning {group} Job")
    result = deleted_phase(trainjob.metadata.name) if deleted else decide_phase(trainjob)
    return to_phase_event(job, to_workload_ref(trainjob), result, env, ctx)


def read_trainjob(change: ReferenceChange, ctx: Context) -> TrainJob | None:
    try:
        check_trainjob(change.ref.apiVersion, change.ref.kind)
    except WrongKind as e:
        raise PermanentError(str(e)) from None
    obj = ctx.gateway.get(TRAINJOBS, change.ref.namespace, change.ref.name)
    return None if obj is None else parse_trainjob(obj)


def answer_gone(change: ReferenceChange, env: Envelope, ctx: Context) -> Outcome:
    """Reference mode, object gone: a delete, attributed through the Job that points at it."""
    ref = change.ref
    jobs = ctx.gateway.list_all(cre_jobs(ctx.settings.cre_group), ref.namespace)
    for raw in jobs:
        job = CreJob.model_validate(raw)
        wref = job.status.workload_ref
        if wref and wref.kind == TRAINJOB_KIND and wref.name == ref.name:
            workload = WorkloadRef(
                api_version=ref.apiVersion, kind=ref.kind, name=ref.name, namespace=ref.namespace,
                attempt=job.status.restart_count,
            )
            return to_phase_event(job.metadata.name, workload, deleted_phase(ref.name), env, ctx)
    return NoReply(f"TrainJob {ref.namespace}/{ref.name} is gone and no Job refers to it")


def to_phase_event(job: str, workload: WorkloadRef, result: PhaseResult, env: Envelope | None, ctx: Context,
                   function: str = FUNCTION) -> Outbound:
    data = WorkloadPhaseData(
        job=JobRef(name=job, namespace=workload.namespace),
        workload=workload,
        phase=result.phase,
        reason=result.reason,
        message=result.message,
        observed_at=ctx.clock(),
    )
    return to_outbound(
        EventType.WORKLOAD_PHASE, function, workload.namespace, job, data, env, workloadphase=result.phase.value
    )
