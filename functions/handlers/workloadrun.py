"""`workloadrun` (SPEC §5, §7): WorkloadRuns become TrainingRuntimes and Jobs, and the Jobs' states
are mirrored back onto their WorkloadRuns (the reasons: `functions.rules.runstatus`).

- WorkloadRun add/update → read it fresh, translate it (pure, `functions.rules.translate`) and read
  every object it becomes → create what is missing: config ConfigMap, checkpoint PVC,
  TrainingRuntime, then the Job (which `launch` picks up; it carries the WorkloadRun's
  `crefn.dev/managed` label), then `InProgress`/`WorkflowCreated`. Objects that exist and are owned
  by this WorkloadRun are left alone, so a redelivery creates nothing twice; the spec is immutable,
  nothing is updated. Once the run has its Job, a missing Job is a verdict, not a trigger:
  `Failed`/`WorkflowDeleted`, nothing is created again (an ApiServerSource re-lists on restart).
- `dev.crefn.job.condition.changed` and `dev.crefn.job.validation` of a Job owned by a WorkloadRun →
  the run's condition follows the Job's, read fresh (a Job that succeeded with thresholds stays
  `InProgress` on its run until `validate` has written its verdict); a CRE Job delete event of such a
  Job → `WorkflowDeleted`, only when it names the run's Job (named after the run) and that Job is
  gone on a fresh read, or the Job holding its name now is another (another uid, not controlled by the
  run): a delete event of a Job that is still there is stale or forged, and changes nothing.
A terminal WorkloadRun is never written again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from events.emitted import ConditionSummary, EventData, JobRef
from events.envelope import Envelope, ResourceChange, first_error, parse_apiserver_event, parse_data
from events.objects import WorkloadRun
from events.types import CRE_VERSION, JOB_KIND, WORKLOADRUN_KIND, ApiServerType, EventType, RunReason
from functions.apply import run
from functions.context import Context
from functions.errors import PermanentError
from functions.plan import Create, Effect, Outcome, Plan, WriteStatus, nothing
from functions.reads import read_job
from functions.resources import CONFIGMAPS, PVCS, TRAINING_RUNTIMES, Resource, cre_jobs, cre_workloadruns
from functions.rules.checks import awaiting_validation
from functions.rules.conditions import EXCLUSIVE, condition, decide_conditions, is_terminal, true_exclusive
from functions.rules.jobs import JobState, is_managed, parse_job
from functions.rules.runspec import InvalidSpec
from functions.rules.runstatus import created, deleted, mirrored
from functions.rules.translate import translate
from functions.settings import Settings

FUNCTION = "workloadrun"
ACCEPTS = frozenset({ApiServerType.RESOURCE_ADD.value, ApiServerType.RESOURCE_UPDATE.value,
                     ApiServerType.RESOURCE_DELETE.value, EventType.JOB_CONDITION_CHANGED.value,
                     EventType.JOB_VALIDATION.value})


@dataclass(frozen=True)
class Observed:
    where: str
    run: dict[str, Any] | None = None
    """The WorkloadRun read fresh (None: deleted, gone, or not the mirror's owner)."""
    objects: tuple[dict[str, Any], ...] = ()
    """What it translates into, in creation order (the Job last)."""
    existing: tuple[dict[str, Any] | None, ...] = ()
    """The object of each one's name, as read."""
    invalid: str = ""
    mirror: ConditionSummary | None = None
    """The run's condition for its Job's state, when mirroring; `WorkflowDeleted` for a deleted Job."""
    skip: str = ""


def resource_for(kind: str, group: str) -> Resource:
    return {"ConfigMap": CONFIGMAPS, "PersistentVolumeClaim": PVCS, "TrainingRuntime": TRAINING_RUNTIMES,
            "Job": cre_jobs(group)}[kind]


def parse_run(raw: dict[str, Any]) -> WorkloadRun:
    try:
        return WorkloadRun.model_validate(raw)
    except ValidationError as e:
        raise PermanentError(f"invalid WorkloadRun: {first_error(e)}") from None


def read(env: Envelope, ctx: Context) -> Observed:
    if env.type in (EventType.JOB_CONDITION_CHANGED, EventType.JOB_VALIDATION):
        return read_mirror(env, ctx)
    change = parse_apiserver_event(env)
    if not isinstance(change, ResourceChange):
        raise PermanentError("workloadrun takes ApiServerSource Resource-mode events")
    group = ctx.settings.cre_group
    ref = change.ref
    if (ref.apiVersion, ref.kind, change.verb) == (f"{group}/{CRE_VERSION}", JOB_KIND, "delete"):
        return read_deleted(parse_job(change.object, group), ctx)
    if (ref.apiVersion, ref.kind) != (f"{group}/{CRE_VERSION}", WORKLOADRUN_KIND):
        raise PermanentError(f"expected {group}/{CRE_VERSION} WorkloadRun, got {ref.apiVersion}/{ref.kind}")
    where = f"WorkloadRun {ref.namespace}/{ref.name}"
    if change.verb == "delete":
        return Observed(where, skip=f"{where} was deleted")
    raw = ctx.gateway.get(cre_workloadruns(group), ref.namespace, ref.name)
    if raw is None:
        return Observed(where, skip=f"{where} is gone")
    raw.setdefault("apiVersion", ref.apiVersion)
    raw.setdefault("kind", WORKLOADRUN_KIND)
    parse_run(raw)
    try:
        objects = tuple(translate(raw, group).objects)
    except InvalidSpec as e:
        return Observed(where, raw, invalid=str(e))
    existing = tuple(ctx.gateway.get(resource_for(o["kind"], group), o["metadata"]["namespace"],
                                     o["metadata"]["name"]) for o in objects)
    return Observed(where, raw, objects, existing)


class JobEvent(EventData):
    """What a mirrored event must carry: the Job it is about (the rest is read fresh)."""

    job: JobRef


def read_mirror(env: Envelope, ctx: Context) -> Observed:
    job_ref = parse_data(env, JobEvent).job
    if not job_ref.name or not job_ref.namespace:
        raise PermanentError(f"invalid {env.type} data: job.name and job.namespace are required")
    ns, name = job_ref.namespace, job_ref.name
    state = read_job(ctx, ns, name)
    if state is None:
        return Observed(f"Job {ns}/{name}", skip=f"Job {ns}/{name} is gone")
    return read_owner(state, state, ctx)


def read_deleted(seen: JobState, ctx: Context) -> Observed:
    """A Job delete event (anyone can post one), acted on only when it is about the run's Job (named after
    the run, `functions.rules.translate`) and that Job is gone on a fresh read, or the Job holding the
    name now is another one (another uid, not controlled by the run)."""
    ran = seen.job.controller_owner()
    if ran is None or ran.kind != WORKLOADRUN_KIND:
        return read_owner(seen, None, ctx)  # no run's Job: skipped there, with nothing read
    if ran.name != seen.ref.name:
        return Observed(seen.where, skip=f"{seen.where} is not the Job of WorkloadRun {ran.name}")
    standing = read_job(ctx, seen.ref.namespace, seen.ref.name)
    if standing is not None:
        owner = standing.job.controller_owner()
        if standing.job.metadata.uid == seen.job.metadata.uid or (owner is not None and owner.uid == ran.uid):
            return Observed(seen.where, skip=f"{seen.where} is still there: its delete event is stale or forged")
    return read_owner(seen, None, ctx)


def read_owner(seen: JobState, current: JobState | None, ctx: Context) -> Observed:
    """The WorkloadRun that owns a Job, and what its condition becomes (`current` None: the Job was deleted)."""
    owner = seen.job.controller_owner()
    group, ns = ctx.settings.cre_group, seen.job.metadata.namespace
    if owner is None or owner.kind != WORKLOADRUN_KIND or owner.api_version.split("/")[0] != group:
        return Observed(seen.where, skip=f"{seen.where} is not owned by a WorkloadRun")
    where = f"WorkloadRun {ns}/{owner.name}"
    raw = ctx.gateway.get(cre_workloadruns(group), ns, owner.name)
    if raw is None or raw["metadata"].get("uid") != owner.uid:
        return Observed(where, skip=f"{where} is gone")
    cond = deleted() if current is None else mirrored(owner.name, seen.job.metadata.name, current.conditions,
                                                      awaiting_validation(current))
    if cond is None:
        return Observed(where, skip="the Job has no condition to mirror yet")
    return Observed(where, raw, mirror=cond)


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    if observed.skip:
        return nothing(observed.skip)
    assert observed.run is not None
    where, raw = observed.where, observed.run
    if observed.mirror is not None:
        cond = observed.mirror
        writes = run_conditions(raw, cond, now, settings)
        return Plan(writes, reason=f"{where}: {cond.type}/{cond.reason}" + ("" if writes else " (already so)"))
    if not is_managed((raw.get("metadata") or {}).get("labels") or {}, settings):
        return nothing(f"{where} is not managed")
    conditions = (raw.get("status") or {}).get("conditions") or []
    if is_terminal(conditions):
        return nothing(f"{where} is terminal")
    if observed.invalid:
        return failed(raw, RunReason.INVALID_SPEC, observed.invalid, f"{where}: invalid spec: {observed.invalid}",
                      now, settings)
    if true_exclusive(conditions) is not None and observed.existing[-1] is None:
        return Plan(run_conditions(raw, deleted(), now, settings),
                    reason=f"{where}: its Job was deleted; it is not created again")
    if settings.observe:
        return nothing(f"observe mode: {where} would create {len(observed.objects)} objects")
    owner_uid = raw["metadata"].get("uid")
    creates: list[Effect] = []
    for obj, existing in zip(observed.objects, observed.existing, strict=True):
        meta = obj["metadata"]
        if existing is None:
            creates.append(Create(resource_for(obj["kind"], settings.cre_group), meta["namespace"], obj,
                                  refused=BuildFailed(raw, obj["kind"], meta["name"], now, settings)))
            continue
        owners = [o.get("uid") for o in (existing.get("metadata") or {}).get("ownerReferences") or []
                  if o.get("controller")]
        if owner_uid not in owners:
            message = f"{obj['kind']} {meta['name']} already exists and is not owned by this WorkloadRun"
            return failed(raw, RunReason.OBJECT_CONFLICT, message, f"{where}: {message}", now, settings)
    if true_exclusive(conditions) is None:
        creates += run_conditions(raw, created(raw["metadata"]["name"]), now, settings)
    return Plan(tuple(creates), reason=f"{where}: {sum(isinstance(e, Create) for e in creates)} objects created")


def failed(raw: dict[str, Any], reason: str, message: str, why: str, now: datetime, settings: Settings) -> Plan:
    return Plan(run_conditions(raw, condition("Failed", reason, message), now, settings), reason=why)


@dataclass(frozen=True)
class BuildFailed:
    """A generated object the API refused (its CRD's schema or rules, admission): the run cannot be built."""

    run: dict[str, Any]
    kind: str
    name: str
    now: datetime
    settings: Settings

    def follow(self, error: str) -> tuple[Effect, ...]:
        message = f"{self.kind} {self.name} was refused: {error}"
        return run_conditions(self.run, condition("Failed", RunReason.BUILD_FAILED, message), self.now, self.settings)


def run_conditions(raw: dict[str, Any], chosen: ConditionSummary, now: datetime,
                   settings: Settings) -> tuple[WriteStatus, ...]:
    """The write of the WorkloadRun's exclusive conditions, siblings `Superseded`; none on a terminal run
    or when nothing would change."""
    conditions = (raw.get("status") or {}).get("conditions") or []
    if chosen.type not in EXCLUSIVE or is_terminal(conditions):
        return ()
    meta = raw["metadata"]
    new = decide_conditions(conditions, int(meta.get("generation", 0)), chosen, now,
                            sibling_reason=RunReason.SUPERSEDED)
    if new is None:
        return ()
    return (WriteStatus(cre_workloadruns(settings.cre_group), meta["namespace"], meta["name"],
                        str(meta.get("resourceVersion", "")), {"conditions": new}),)


def handle(env: Envelope, ctx: Context) -> Outcome:
    return run(ctx, lambda: read(env, ctx), decide)
