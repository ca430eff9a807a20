"""`workloadrun` (SPEC §5, §7): WorkloadRuns become TrainingRuntimes and Jobs, and the Jobs' states
are mirrored back onto their WorkloadRuns.

read: a WorkloadRun add/update → the run fresh, the Nodes its target may name (when the translation
depends on them: `functions.domain.placement`), the run translated (pure, `functions.domain.translation`), and
every object it becomes, by name. `dev.crefn.job.condition.changed` and `dev.crefn.job.validation` of a
Job owned by a WorkloadRun → the Job fresh, its run, and the run's condition for the Job's state
(`functions.workloadrun.run_conditions`: a Job that succeeded with thresholds stays `InProgress` on its run until
`validate` has written its verdict). A CRE Job delete event → `WorkflowDeleted`, only when it names
the run's Job (`<run>-job`) and that Job is gone on a fresh read, or the Job holding its name
now is another (another uid, not controlled by the run): a delete event of a Job that is still there
is stale or forged, and changes nothing. decide: `functions.workloadrun.decide.decide`.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from events.emitted import EventData, JobRef
from events.envelope import Envelope, ResourceChange, first_error, parse_apiserver_event, parse_data
from events.objects import WorkloadRun
from events.types import CRE_VERSION, JOB_KIND, WORKLOADRUN_KIND, ApiServerType, EventType
from functions.domain.conditions import true_exclusive
from functions.domain.due import awaiting_validation
from functions.domain.jobs import JobState, Skipped, parse_job
from functions.domain.placement import needs_nodes, selector
from functions.domain.runspec import InvalidSpec
from functions.domain.translation import job_name, translate
from functions.runtime.apply import run
from functions.runtime.context import Context
from functions.runtime.errors import PermanentError
from functions.runtime.plan import Outcome
from functions.runtime.reads import read_job, read_nodes, read_object, read_workloadrun
from functions.workloadrun.decide import Invalid, Mirror, Observed, Translated, decide, resource_for
from functions.workloadrun.run_conditions import deleted, mirrored, validation_message

ACCEPTS = frozenset({ApiServerType.RESOURCE_ADD.value, ApiServerType.RESOURCE_UPDATE.value,
                     ApiServerType.RESOURCE_DELETE.value, EventType.JOB_CONDITION_CHANGED.value,
                     EventType.JOB_VALIDATION.value})


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
    if change.verb == "delete":
        return Skipped(f"WorkloadRun {ref.namespace}/{ref.name} was deleted")
    return read_run(ref.namespace, ref.name, ctx)


def read_run(ns: str, name: str, ctx: Context) -> Observed:
    """The WorkloadRun fresh, translated (the nodes read when its placement needs them), and the objects of
    its translation as they stand; or why it cannot be built."""
    group, where = ctx.settings.cre_group, f"WorkloadRun {ns}/{name}"
    raw = read_workloadrun(ctx, ns, name)
    if raw is None:
        return Skipped(f"{where} is gone")
    raw.setdefault("apiVersion", f"{group}/{CRE_VERSION}")
    raw.setdefault("kind", WORKLOADRUN_KIND)
    parse_run(raw)
    try:
        spec = raw.get("spec") or {}
        first = true_exclusive((raw.get("status") or {}).get("conditions") or []) is None  # detected then
        nodes = read_nodes(ctx, selector(spec)) if needs_nodes(spec) or first else None
        translation = translate(raw, group, nodes)
    except InvalidSpec as e:
        return Invalid(where, raw, str(e))
    objects = tuple(translation.objects)
    existing = tuple(read_object(ctx, resource_for(o["kind"], group), o["metadata"]["namespace"],
                                 o["metadata"]["name"]) for o in objects)
    return Translated(where, raw, objects, existing, translation.detected)


class JobEvent(EventData):
    """What a mirrored event must carry: the Job it is about (the rest is read fresh), and may: the WorkloadRun
    that controls it ('' when none: nothing to mirror, nothing read; absent: read the Job to know)."""

    job: JobRef
    workload_run: str | None = None


def read_mirror(env: Envelope, ctx: Context) -> Observed:
    event = parse_data(env, JobEvent)
    job_ref = event.job
    if not job_ref.name or not job_ref.namespace:
        raise PermanentError(f"invalid {env.type} data: job.name and job.namespace are required")
    ns, name = job_ref.namespace, job_ref.name
    if event.workload_run == "":  # a forged "none" only skips the mirror
        return Skipped(f"Job {ns}/{name} is not owned by a WorkloadRun (the event says)")
    state = read_job(ctx, ns, name)
    if state is None:
        return Skipped(f"Job {ns}/{name} is gone")
    return read_owner(state, state, ctx)


def read_deleted(seen: JobState, ctx: Context) -> Observed:
    """A Job delete event (anyone can post one), acted on only when it is about the run's Job (`<run>-job`,
    `functions.domain.translation.job_name`), the run has recorded its Job (a condition), and that Job is gone
    on a fresh read, or the Job holding the name now is another one (another uid, not controlled by the run)."""
    ran = seen.job.controller_owner()
    if ran is None or ran.kind != WORKLOADRUN_KIND:
        return read_owner(seen, None, ctx)  # no run's Job: skipped there, with nothing read
    if seen.ref.name != job_name(ran.name):
        return Skipped(f"{seen.where} is not the Job of WorkloadRun {ran.name}")
    standing = read_job(ctx, seen.ref.namespace, seen.ref.name)
    if standing is not None:
        owner = standing.job.controller_owner()
        if standing.job.metadata.uid == seen.job.metadata.uid or (owner is not None and owner.uid == ran.uid):
            return Skipped(f"{seen.where} is still there: its delete event is stale or forged")
    return read_owner(seen, None, ctx)


def read_owner(seen: JobState, current: JobState | None, ctx: Context) -> Observed:
    """The WorkloadRun that owns a Job, and what its condition becomes (`current` None: the Job was deleted)."""
    owner = seen.job.controller_owner()
    group, ns = ctx.settings.cre_group, seen.job.metadata.namespace
    if owner is None or owner.kind != WORKLOADRUN_KIND or owner.api_version.split("/")[0] != group:
        return Skipped(f"{seen.where} is not owned by a WorkloadRun")
    where = f"WorkloadRun {ns}/{owner.name}"
    raw = read_workloadrun(ctx, ns, owner.name)
    if raw is None or raw["metadata"].get("uid") != owner.uid:
        return Skipped(f"{where} is gone")
    if current is None and true_exclusive((raw.get("status") or {}).get("conditions") or []) is None:
        return Skipped(f"{where} has recorded no Job yet: a delete of one is not its Job's")
    cond = deleted() if current is None else mirrored(owner.name, current.conditions, awaiting_validation(current))
    if cond is None:
        return Skipped("the Job has no condition to mirror yet")
    return Mirror(where, raw, cond, None if current is None else validation_message(current.conditions))


def handle(env: Envelope, ctx: Context) -> Outcome:
    return run(ctx, lambda: read(env, ctx), decide)
