"""`phase`: TrainJob, workload pod and GoodputMeasurement events → `dev.crefn.workload.phase` (SPEC §3, §5).

read: Resource mode takes the object from the event (no API call); Reference mode GETs it, and a
TrainJob that no longer exists is a delete, attributed through the Job whose `status.workloadRef`
names it (the object, and with it its ownerReferences, is gone). A pod of a Job's attempt (labels
`<cre group>/job` and `crefn.dev/attempt`) changed: its attempt's TrainJob is read fresh and its phase
re-sent, so `status` re-decides the running path with the pods as they are now (a pod became
unschedulable, or was placed). A GoodputMeasurement of the CRE group changed (Resource mode, the
`crefn-goodput` source): the TrainJob of the Job its `spec.jobRef` names (else its `<cre group>/job`
label) is read fresh and its phase re-sent, so `status` re-decides the stall with the measurement as
it is now; `status` acts only on the Job's current attempt. decide: the pure adapter; a TrainJob with
no owning CRE Job is not ours (202), nor a pod of an attempt whose TrainJob is gone or newer, nor a
measurement whose Job has no TrainJob.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from events.emitted import WorkloadRef
from events.envelope import Envelope, ObjectReference, ReferenceChange, ResourceChange, parse_apiserver_event
from events.objects import CreJob, TrainJob
from events.types import CRE_VERSION, JOB_KIND, TRAINJOB_KIND, ApiServerType, job_label
from functions.apply import run
from functions.context import Context
from functions.errors import PermanentError
from functions.plan import Outcome, Plan, nothing
from functions.resources import PODS, TRAINJOBS, cre_goodput, cre_jobs
from functions.rules.adapter import WrongKind, check_trainjob, decide_phase, deleted_phase
from functions.rules.attempts import attempt_of, of_attempt, workload_name, workload_ref_of
from functions.rules.phase import find_owner, parse_trainjob, phase_event
from functions.settings import Settings

FUNCTION = "phase"
ACCEPTS = frozenset(t.value for t in ApiServerType if t is not ApiServerType.PING)


@dataclass(frozen=True)
class Observed:
    cause: Envelope
    trainjob: TrainJob | None
    """None: Reference mode, and the TrainJob is gone."""
    deleted: bool
    gone: ObjectReference | None = None
    owner_of_gone: CreJob | None = None
    why: str = ""
    """Why there is nothing to send (a pod whose attempt's TrainJob is gone)."""


def read(env: Envelope, ctx: Context) -> Observed:
    change = parse_apiserver_event(env)
    if isinstance(change, ReferenceChange) and change.ref.kind == "Pod" and change.ref.apiVersion == "v1":
        pod = ctx.gateway.get(PODS, change.ref.namespace, change.ref.name)
        return read_for_pod(env, ctx, pod, f"pod {change.ref.namespace}/{change.ref.name} is gone")
    if isinstance(change, ResourceChange) and change.object.get("kind") == "Pod":
        return read_for_pod(env, ctx, change.object, "")
    group = ctx.settings.cre_group
    if isinstance(change, ResourceChange) and change.object.get("kind") == cre_goodput(group).kind \
            and change.object.get("apiVersion") == f"{group}/{CRE_VERSION}":
        return read_for_goodput(env, ctx, change.object)
    if not isinstance(change, ReferenceChange):
        return Observed(env, parse_trainjob(change.object), change.verb == "delete")
    ref = change.ref
    try:
        check_trainjob(ref.apiVersion, ref.kind)
    except WrongKind as e:
        raise PermanentError(str(e)) from None
    obj = ctx.gateway.get(TRAINJOBS, ref.namespace, ref.name)
    if obj is not None:
        return Observed(env, parse_trainjob(obj), False)
    for raw in ctx.gateway.list_all(cre_jobs(ctx.settings.cre_group), ref.namespace):
        job = CreJob.model_validate(raw)
        wref = job.status.workload_ref
        if wref and wref.kind == TRAINJOB_KIND and wref.name == ref.name:
            return Observed(env, None, True, ref, job)
    return Observed(env, None, True, ref)


def read_for_pod(env: Envelope, ctx: Context, pod: dict[str, Any] | None, gone: str) -> Observed:
    """A workload pod's change: its attempt's TrainJob, read fresh (None and why, when there is none)."""
    if pod is None:
        return Observed(env, None, False, why=gone)
    meta = pod.get("metadata") or {}
    labels, namespace = meta.get("labels") or {}, str(meta.get("namespace", ""))
    job, attempt = labels.get(job_label(ctx.settings.cre_group)), attempt_of(labels)
    where = f"pod {namespace}/{meta.get('name')}"
    if not job or attempt is None:
        return Observed(env, None, False, why=f"{where} carries no Job and attempt labels")
    trainjob = ctx.gateway.get(TRAINJOBS, namespace, workload_name(job))
    if trainjob is None or not of_attempt(trainjob, attempt):
        return Observed(env, None, False, why=f"{where}: the TrainJob of attempt {attempt} of Job {job} is gone")
    return Observed(env, parse_trainjob(trainjob), False)


def read_for_goodput(env: Envelope, ctx: Context, gm: dict[str, Any]) -> Observed:
    """A GoodputMeasurement's change: the TrainJob of its Job, read fresh (None and why, when there is none)."""
    meta = gm.get("metadata") or {}
    ref = (gm.get("spec") or {}).get("jobRef") or {}
    namespace, where = str(meta.get("namespace", "")), f"GoodputMeasurement {meta.get('namespace')}/{meta.get('name')}"
    job = ref.get("name") if ref.get("kind", JOB_KIND) == JOB_KIND else None
    job = job or (meta.get("labels") or {}).get(job_label(ctx.settings.cre_group))
    if not job:
        return Observed(env, None, False, why=f"{where} names no Job")
    trainjob = ctx.gateway.get(TRAINJOBS, namespace, workload_name(str(job)))
    if trainjob is None:
        return Observed(env, None, False, why=f"{where}: Job {job} has no TrainJob")
    return Observed(env, parse_trainjob(trainjob), False)


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    if observed.why:
        return nothing(observed.why)
    if observed.trainjob is None:
        ref, job = observed.gone, observed.owner_of_gone
        assert ref is not None
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
    result = deleted_phase(trainjob.metadata.name) if observed.deleted else decide_phase(trainjob)
    return Plan(reply=phase_event(owner, workload_ref_of(trainjob), result, now, FUNCTION, observed.cause))


def handle(env: Envelope, ctx: Context) -> Outcome:
    return run(ctx, lambda: read(env, ctx), decide)
