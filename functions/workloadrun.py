"""The `workloadrun` function (SPEC §5, §7): WorkloadRuns become TrainingRuntimes and Jobs, and the
Jobs' conditions are mirrored back onto their WorkloadRuns.

- WorkloadRun add/update → read it fresh → translate (pure, `functions.translate`) → create what is
  missing: config ConfigMap, checkpoint PVC, TrainingRuntime, then the Job (which `launch` picks up;
  it carries the WorkloadRun's `crefn.dev/managed` label). Idempotent: objects that exist and are
  owned by this WorkloadRun are left alone, so a redelivery creates nothing twice. The spec is
  immutable: nothing is updated. An invalid spec writes `Failed`/`InvalidSpec` naming the field and
  creates nothing; an object of the same name owned by someone else writes `Failed`/`ObjectConflict`.
- `dev.crefn.job.condition.changed` of a Job owned by a WorkloadRun → the WorkloadRun's exclusive
  `InProgress`/`Succeeded`/`Failed` follow the Job's True condition (type, reason, message); the other
  two are False with reason `Superseded`.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from events.envelope import Envelope, ResourceChange, first_error, parse_apiserver_event
from events.objects import WorkloadRun
from events.types import CRE_VERSION, MANAGED_LABEL, WORKLOADRUN_KIND, ApiServerType, EventType
from functions.conditions import ExclusiveType, decide_conditions, is_terminal, true_exclusive
from functions.context import Context
from functions.errors import PermanentError, TemporaryError
from functions.gateway import CONFIGMAPS, PVCS, TRAINING_RUNTIMES, Resource, cre_workloadruns
from functions.jobs import patch_status, read_job
from functions.outcome import NoReply, Outcome
from functions.translate import InvalidSpec, Translation, translate

FUNCTION = "workloadrun"
ACCEPTS = frozenset({ApiServerType.RESOURCE_ADD.value, ApiServerType.RESOURCE_UPDATE.value,
                     ApiServerType.RESOURCE_DELETE.value, EventType.JOB_CONDITION_CHANGED.value})
"""Event types this function handles (the Triggers in knative/ may route only these)."""
SUPERSEDED = "Superseded"


def handle(env: Envelope, ctx: Context) -> Outcome:
    if env.type == EventType.JOB_CONDITION_CHANGED:
        return mirror(env, ctx)
    change = parse_apiserver_event(env)
    if not isinstance(change, ResourceChange):
        raise PermanentError("workloadrun takes ApiServerSource Resource-mode events")
    group = ctx.settings.cre_group
    ref = change.ref
    if (ref.apiVersion, ref.kind) != (f"{group}/{CRE_VERSION}", WORKLOADRUN_KIND):
        raise PermanentError(f"expected {group}/{CRE_VERSION} WorkloadRun, got {ref.apiVersion}/{ref.kind}")
    if change.verb == "delete":
        return NoReply(f"WorkloadRun {ref.namespace}/{ref.name} was deleted")
    raw = ctx.gateway.get(cre_workloadruns(group), ref.namespace, ref.name)
    if raw is None:
        return NoReply(f"WorkloadRun {ref.namespace}/{ref.name} is gone")
    raw.setdefault("apiVersion", ref.apiVersion)
    raw.setdefault("kind", WORKLOADRUN_KIND)
    return materialize(raw, ctx)


def materialize(raw: dict[str, Any], ctx: Context) -> Outcome:
    run = parse_run(raw)
    where = f"WorkloadRun {run.metadata.namespace}/{run.metadata.name}"
    if not ctx.settings.manage_all and run.metadata.labels.get(MANAGED_LABEL) != "true":
        return NoReply(f"{where} is not managed")
    conditions = (raw.get("status") or {}).get("conditions") or []
    if is_terminal(conditions):
        return NoReply(f"{where} is terminal")
    try:
        translation = translate(raw, ctx.settings.cre_group)
    except InvalidSpec as e:
        write_run_conditions(raw, "Failed", "InvalidSpec", str(e), ctx)
        return NoReply(f"{where}: invalid spec: {e}")
    if ctx.settings.observe:
        return NoReply(f"observe mode: {where} would create {len(translation.objects)} objects")
    created = create_missing(translation, run.metadata.uid, ctx)
    if isinstance(created, str):
        write_run_conditions(raw, "Failed", "ObjectConflict", created, ctx)
        return NoReply(f"{where}: {created}")
    if true_exclusive(conditions) is None:
        job = translation.job["metadata"]["name"]
        write_run_conditions(raw, "InProgress", "JobCreated", f"Job {job} created from the WorkloadRun", ctx)
    return NoReply(f"{where}: {created} objects created")


def parse_run(raw: dict[str, Any]) -> WorkloadRun:
    try:
        return WorkloadRun.model_validate(raw)
    except ValidationError as e:
        raise PermanentError(f"invalid WorkloadRun: {first_error(e)}") from None


def resource_for(obj: dict[str, Any], ctx: Context) -> Resource:
    return {"ConfigMap": CONFIGMAPS, "PersistentVolumeClaim": PVCS, "TrainingRuntime": TRAINING_RUNTIMES,
            "Job": Resource(ctx.settings.cre_group, CRE_VERSION, "jobs", "Job")}[obj["kind"]]


def create_missing(translation: Translation, owner_uid: str, ctx: Context) -> int | str:
    """Create every object not there yet; the count, or why one is in the way."""
    created = 0
    for obj in translation.objects:
        res, meta = resource_for(obj, ctx), obj["metadata"]
        existing = ctx.gateway.get(res, meta["namespace"], meta["name"])
        if existing is None:
            try:
                ctx.gateway.create(res, meta["namespace"], obj)
                created += 1
                continue
            except TemporaryError as e:
                if e.reason != "AlreadyExists":
                    raise
                existing = ctx.gateway.get(res, meta["namespace"], meta["name"]) or {}
        owners = [o.get("uid") for o in (existing.get("metadata") or {}).get("ownerReferences") or []
                  if o.get("controller")]
        if owner_uid not in owners:
            return f"{obj['kind']} {meta['name']} already exists and is not owned by this WorkloadRun"
    return created


def write_run_conditions(raw: dict[str, Any], chosen: ExclusiveType, reason: str, message: str, ctx: Context,
                         siblings: str = SUPERSEDED) -> bool:
    """Write the WorkloadRun's exclusive conditions (`patch_status`: re-read and decided once more on a
    conflict); a terminal WorkloadRun is left alone."""

    def decide(current: dict[str, Any]) -> dict[str, Any] | None:
        conditions = (current.get("status") or {}).get("conditions") or []
        if is_terminal(conditions):
            return None
        new = decide_conditions(conditions, int(current["metadata"].get("generation", 0)), chosen, reason,
                                message, ctx.clock(), sibling_reason=siblings)
        return None if new is None else {"conditions": new}

    return patch_status(ctx, cre_workloadruns(ctx.settings.cre_group), raw, decide)[1]


def mirror(env: Envelope, ctx: Context) -> Outcome:
    data = env.data if isinstance(env.data, dict) else None
    job_ref = (data or {}).get("job") or {}
    if not job_ref.get("name") or not job_ref.get("namespace"):
        raise PermanentError(f"invalid {env.type} data: job.name and job.namespace are required")
    state = read_job(ctx, job_ref["namespace"], job_ref["name"])
    if state is None:
        return NoReply(f"Job {job_ref['namespace']}/{job_ref['name']} is gone")
    owner = state.job.controller_owner()
    group = ctx.settings.cre_group
    if owner is None or owner.kind != WORKLOADRUN_KIND or owner.api_version.split("/")[0] != group:
        return NoReply(f"Job {state.ref.namespace}/{state.ref.name} is not owned by a WorkloadRun")
    raw = ctx.gateway.get(cre_workloadruns(group), state.ref.namespace, owner.name)
    if raw is None or raw["metadata"].get("uid") != owner.uid:
        return NoReply(f"WorkloadRun {state.ref.namespace}/{owner.name} is gone")
    cond = state.true_condition
    if cond is None or cond.type not in ("InProgress", "Succeeded", "Failed"):
        return NoReply("the Job has no True condition to mirror")
    written = write_run_conditions(raw, cond.type, cond.reason, cond.message, ctx)  # type: ignore[arg-type]
    return NoReply(f"WorkloadRun {state.ref.namespace}/{owner.name}: {cond.type}/{cond.reason}"
                   + ("" if written else " (already so)"))
