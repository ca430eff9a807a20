"""`phase`: TrainJob, workload pod and GoodputMeasurement events → `dev.crefn.workload.phase` (SPEC §3, §5).

read: Resource mode takes the object from the event (no API call); Reference mode GETs it, and a
TrainJob that no longer exists is a delete, attributed through the Job whose `status.workloadRef`
names it (the object, and with it its ownerReferences, is gone). A pod of a Job's attempt (labels
`<cre group>/job` and `crefn.dev/attempt`) changed: its attempt's TrainJob is read fresh and its phase
re-sent, so `status` re-decides the running path with the pods as they are now (a pod became
unschedulable, or was placed). A GoodputMeasurement of the CRE group changed (Resource mode, the
`crefn-goodput` source): the TrainJob of the Job its `spec.jobRef` names (else its `<cre group>/job`
label) is read fresh and its phase re-sent, so `status` re-decides the stall with the measurement as
it is now; `status` acts only on the Job's current attempt. A pod of an attempt whose TrainJob is gone
or newer, or a measurement whose Job has no TrainJob: 202. decide: `functions.phase.decide.decide`.
"""

from __future__ import annotations

from typing import Any

from events.envelope import Envelope, ReferenceChange, ResourceChange, parse_apiserver_event
from events.types import CRE_VERSION, JOB_KIND, ApiServerType, job_label
from functions.domain.adapter import WrongKind, check_trainjob
from functions.domain.attempts import attempt_of, of_attempt, workload_name
from functions.domain.jobs import Skipped
from functions.domain.phases import parse_trainjob
from functions.phase.decide import Observed, Seen, TrainJobGone, created_by_functions, decide
from functions.runtime.apply import run
from functions.runtime.context import Context
from functions.runtime.errors import PermanentError
from functions.runtime.plan import Outcome
from functions.runtime.reads import read_job_of_workload, read_pod, read_trainjob
from functions.runtime.resources import cre_goodput

ACCEPTS = frozenset(t.value for t in ApiServerType if t is not ApiServerType.PING)


def read(env: Envelope, ctx: Context) -> Observed:
    change = parse_apiserver_event(env)
    if isinstance(change, ReferenceChange) and change.ref.kind == "Pod" and change.ref.apiVersion == "v1":
        pod = read_pod(ctx, change.ref.namespace, change.ref.name)
        return read_for_pod(env, ctx, pod, f"pod {change.ref.namespace}/{change.ref.name} is gone")
    if isinstance(change, ResourceChange) and change.object.get("kind") == "Pod":
        return read_for_pod(env, ctx, change.object, "")
    group = ctx.settings.cre_group
    if isinstance(change, ResourceChange) and change.object.get("kind") == cre_goodput(group).kind \
            and change.object.get("apiVersion") == f"{group}/{CRE_VERSION}":
        return read_for_goodput(env, ctx, change.object)
    if not isinstance(change, ReferenceChange):
        return Seen(env, parse_trainjob(change.object), change.verb == "delete",
                    change.verb == "add" and created_by_functions(change.object))
    ref = change.ref
    try:
        check_trainjob(ref.apiVersion, ref.kind)
    except WrongKind as e:
        raise PermanentError(str(e)) from None
    obj = read_trainjob(ctx, ref.namespace, ref.name)
    if obj is not None:
        return Seen(env, parse_trainjob(obj), added=change.verb == "add" and created_by_functions(obj))
    return TrainJobGone(env, ref, read_job_of_workload(ctx, ref.namespace, ref.name))


def read_for_pod(env: Envelope, ctx: Context, pod: dict[str, Any] | None, gone: str) -> Observed:
    """A workload pod's change: its attempt's TrainJob, read fresh (None and why, when there is none)."""
    if pod is None:
        return Skipped(gone)
    meta = pod.get("metadata") or {}
    labels, namespace = meta.get("labels") or {}, str(meta.get("namespace", ""))
    job, attempt = labels.get(job_label(ctx.settings.cre_group)), attempt_of(labels)
    where = f"pod {namespace}/{meta.get('name')}"
    if not job or attempt is None:
        return Skipped(f"{where} carries no Job and attempt labels")
    trainjob = read_trainjob(ctx, namespace, workload_name(job))
    if trainjob is None or not of_attempt(trainjob, attempt):
        return Skipped(f"{where}: the TrainJob of attempt {attempt} of Job {job} is gone")
    return Seen(env, parse_trainjob(trainjob))


def read_for_goodput(env: Envelope, ctx: Context, gm: dict[str, Any]) -> Observed:
    """A GoodputMeasurement's change: the TrainJob of its Job, read fresh (None and why, when there is none)."""
    meta = gm.get("metadata") or {}
    ref = (gm.get("spec") or {}).get("jobRef") or {}
    namespace, where = str(meta.get("namespace", "")), f"GoodputMeasurement {meta.get('namespace')}/{meta.get('name')}"
    job = ref.get("name") if ref.get("kind", JOB_KIND) == JOB_KIND else None
    job = job or (meta.get("labels") or {}).get(job_label(ctx.settings.cre_group))
    if not job:
        return Skipped(f"{where} names no Job")
    trainjob = read_trainjob(ctx, namespace, workload_name(str(job)))
    if trainjob is None:
        return Skipped(f"{where}: Job {job} has no TrainJob")
    return Seen(env, parse_trainjob(trainjob))


def handle(env: Envelope, ctx: Context) -> Outcome:
    return run(ctx, lambda: read(env, ctx), decide)
