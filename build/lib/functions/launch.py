"""The `launch` function: Job add/update (and resync) → create or adopt the Job's TrainJob (SPEC §5).

parse (Resource-mode Job event) → read the Job and its TrainJob fresh (the payload may be stale) →
decide (pure `decide_launch`) → apply (create / delete stale / write conditions) → answer.
A Job is launched when it is managed, not terminal and has no `workloadRef`. The TrainJob is
`<job>-workload` and keeps that name across restarts; its `crefn.dev/attempt` label tells attempts
apart. In observe mode nothing is created or written and nothing is emitted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from events.emitted import ConditionSummary, WorkloadCreatedData, WorkloadRef
from events.envelope import Envelope, ResourceChange, parse_apiserver_event, to_outbound
from events.types import (
    ATTEMPT_LABEL,
    MANAGED_BY_LABEL,
    MANAGED_BY_VALUE,
    MANAGED_LABEL,
    RESTART_NOT_BEFORE_ANNOTATION,
    TRAINJOB_API_VERSION,
    TRAINJOB_KIND,
    ApiServerType,
    EventType,
    job_label,
)
from functions.conditions import decide_conditions
from functions.context import Context
from functions.errors import PermanentError, TemporaryError
from functions.gateway import TRAINJOBS
from functions.jobs import (
    JobState,
    StatusChange,
    apply_status,
    condition_changed_event,
    is_managed,
    parse_job,
    read_job,
    workload_name,
)
from functions.outcome import NoReply, Outcome

FUNCTION = "launch"
ACCEPTS = frozenset({ApiServerType.RESOURCE_ADD.value, ApiServerType.RESOURCE_UPDATE.value,
                     ApiServerType.RESOURCE_DELETE.value})
"""Event types this function handles (the Triggers in knative/ may route only these)."""
RESTARTING_REASON = "WorkloadRestarting"


@dataclass(frozen=True)
class LaunchPlan:
    action: Literal["create", "adopt", "delete-stale", "wait", "fail", "nothing"]
    reason: str
    body: dict[str, Any] | None = None
    uid: str = ""


def build_trainjob(state: JobState, name: str, cre_group: str) -> dict[str, Any]:
    job = state.job
    spec = dict(job.spec.workload.train_job or {})
    labels = dict(job.spec.workload_metadata.labels)
    labels.update({
        MANAGED_BY_LABEL: MANAGED_BY_VALUE,
        job_label(cre_group): job.metadata.name,
        ATTEMPT_LABEL: str(job.status.restart_count),
    })
    if job.metadata.labels.get(MANAGED_LABEL) == "true":
        labels[MANAGED_LABEL] = "true"
    return {
        "apiVersion": TRAINJOB_API_VERSION,
        "kind": TRAINJOB_KIND,
        "metadata": {
            "name": name,
            "namespace": job.metadata.namespace,
            "labels": labels,
            "ownerReferences": [{
                "apiVersion": job.api_version, "kind": job.kind, "name": job.metadata.name,
                "uid": job.metadata.uid, "controller": True, "blockOwnerDeletion": True,
            }],
        },
        "spec": spec,
    }


def not_before(state: JobState) -> datetime | None:
    value = state.job.metadata.annotations.get(RESTART_NOT_BEFORE_ANNOTATION)
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def decide_launch(state: JobState, existing: dict[str, Any] | None, now: datetime, cre_group: str) -> LaunchPlan:
    """Pure: what launch should do for a managed, non-terminal Job without a workloadRef."""
    job = state.job
    name = workload_name(job.metadata.name)
    grace_end = not_before(state)
    true_cond = state.true_condition
    if grace_end and now < grace_end:
        return LaunchPlan("wait", f"restart grace not over: next TrainJob not before {grace_end.isoformat()}")
    if grace_end is None and true_cond and true_cond.reason == RESTARTING_REASON:
        return LaunchPlan("wait", "restart recorded, its grace period not yet written")
    if not job.spec.workload.train_job:
        return LaunchPlan("fail", "Job spec.workload has no trainJob")
    if existing is None:
        return LaunchPlan("create", f"Workload TrainJob/{name} created and is starting",
                          body=build_trainjob(state, name, cre_group))
    meta = existing.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return LaunchPlan("wait", f"TrainJob {name} is still terminating")
    owners = [o for o in meta.get("ownerReferences") or [] if o.get("controller")]
    owned = any(o.get("uid") == job.metadata.uid for o in owners)
    if not owned:
        return LaunchPlan("fail", f"TrainJob {name} already exists and is not owned by Job {job.metadata.name}")
    if (meta.get("labels") or {}).get(ATTEMPT_LABEL) == str(job.status.restart_count):
        return LaunchPlan("adopt", f"Workload TrainJob/{name} adopted")
    return LaunchPlan("delete-stale", f"TrainJob {name} belongs to an earlier attempt; deleting it",
                      uid=str(meta.get("uid", "")))


def handle(env: Envelope, ctx: Context) -> Outcome:
    change = parse_apiserver_event(env)
    if not isinstance(change, ResourceChange):
        raise PermanentError("launch takes ApiServerSource Resource-mode events")
    seen = parse_job(change.object, ctx.settings.cre_group)
    if change.verb == "delete":
        return NoReply(f"Job {seen.ref.namespace}/{seen.ref.name} was deleted")
    state = read_job(ctx, seen.ref.namespace, seen.ref.name)
    if state is None:
        return NoReply(f"Job {seen.ref.namespace}/{seen.ref.name} is gone")
    return launch(state, env, ctx)


def launch(state: JobState, cause: Envelope | None, ctx: Context) -> Outcome:
    """Launch one Job (also called by resync)."""
    where = f"Job {state.ref.namespace}/{state.ref.name}"
    if not is_managed(state, ctx):
        return NoReply(f"{where} is not managed")
    if state.terminal:
        return NoReply(f"{where} is terminal")
    if state.job.status.workload_ref is not None:
        return NoReply(f"{where} already has its workload")
    name = workload_name(state.job.metadata.name)
    existing = ctx.gateway.get(TRAINJOBS, state.ref.namespace, name)
    plan = decide_launch(state, existing, ctx.clock(), ctx.settings.cre_group)
    if ctx.settings.observe:
        return NoReply(f"observe mode: {plan.action}: {plan.reason}")
    if plan.action == "wait":
        raise TemporaryError(plan.reason, 503)
    if plan.action == "delete-stale":
        ctx.gateway.delete(TRAINJOBS, state.ref.namespace, name, uid=plan.uid)
        raise TemporaryError(plan.reason, 503)
    if plan.action == "fail":
        return fail(state, plan.reason, cause, ctx)
    created = ctx.gateway.create(TRAINJOBS, state.ref.namespace, plan.body) if plan.body else existing
    assert created is not None
    return record_workload(state, created, plan, cause, ctx)


def record_workload(state: JobState, trainjob: dict[str, Any], plan: LaunchPlan, cause: Envelope | None,
                    ctx: Context) -> Outcome:
    meta = trainjob["metadata"]
    ref = {"apiVersion": TRAINJOB_API_VERSION, "kind": TRAINJOB_KIND, "name": meta["name"],
           "namespace": state.ref.namespace}
    reason = "WorkloadCreated" if plan.action == "create" else "WorkloadAdopted"

    def decide(current: JobState) -> StatusChange | None:
        if current.job.status.workload_ref is not None:
            return None
        conditions = decide_conditions(current.conditions, current.job.metadata.generation, "InProgress",
                                       reason, plan.reason, ctx.clock())
        status: dict[str, Any] = {"workloadRef": ref}
        if conditions is not None:
            status["conditions"] = conditions
        return StatusChange(status, ConditionSummary(type="InProgress", reason=reason, message=plan.reason))

    apply_status(ctx, state, decide)
    attempt = state.job.status.restart_count
    data = WorkloadCreatedData(
        job=state.ref,
        workload=WorkloadRef(api_version=TRAINJOB_API_VERSION, kind=TRAINJOB_KIND, name=meta["name"],
                             namespace=state.ref.namespace, uid=meta.get("uid", ""),
                             resource_version=meta.get("resourceVersion", ""), attempt=attempt),
        attempt=attempt,
        adopted=plan.action == "adopt",
    )
    return to_outbound(EventType.WORKLOAD_CREATED, FUNCTION, state.ref.namespace, state.ref.name, data, cause)


def fail(state: JobState, message: str, cause: Envelope | None, ctx: Context) -> Outcome:
    def decide(current: JobState) -> StatusChange | None:
        conditions = decide_conditions(current.conditions, current.job.metadata.generation, "Failed",
                                       "WorkloadCreationError", message, ctx.clock())
        if conditions is None:
            return None
        return StatusChange({"conditions": conditions},
                            ConditionSummary(type="Failed", reason="WorkloadCreationError", message=message))

    write = apply_status(ctx, state, decide)
    if not write.condition_changed:
        return NoReply(f"Job {state.ref.namespace}/{state.ref.name}: {message} (already recorded)")
    return condition_changed_event(write, FUNCTION, cause)

