"""Reading and writing CRE Jobs: which Jobs are ours, workload names, and the status write (SPEC §6).

Status writes go through the status subresource with the resourceVersion that was read; on a 409
the Job is read again and the change recomputed once, then the 409 is answered (Knative retries).
A Job whose `Succeeded` or `Failed` is True is terminal: the recompute sees fresh state, so the
terminal guard holds even when another writer got there first. `CREFN_MODE=observe` computes
everything and writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from events.emitted import ConditionSummary, FailedNode, JobConditionChangedData, JobRef, WorkloadRef
from events.envelope import Envelope, Outbound, first_error, to_outbound
from events.objects import CreJob
from events.types import CRE_VERSION, JOB_KIND, MANAGED_LABEL, TRAINJOB_API_VERSION, TRAINJOB_KIND, EventType
from functions.conditions import is_terminal, true_exclusive
from functions.context import Context
from functions.errors import PermanentError, TemporaryError
from functions.gateway import Resource, cre_jobs
from functions.outcome import NoReply

WORKLOAD_NAME_LIMIT = 44
WORKLOAD_NAME_KEEP = 38


def fnv32a(text: str) -> int:
    h = 0x811C9DC5
    for byte in text.encode():
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def workload_name(job_name: str) -> str:
    """`<job>-workload`, truncated like CRE: ≤44 chars, first 38 kept, trailing `-` dropped, then
    `-` and the first 5 hex digits of the FNV-32a hash of the full name."""
    full = f"{job_name}-workload"
    if len(full) <= WORKLOAD_NAME_LIMIT:
        return full
    suffix = f"{fnv32a(full):08x}"[:5]
    return f"{full[:WORKLOAD_NAME_KEEP].rstrip('-')}-{suffix}"


@dataclass(frozen=True)
class JobState:
    """A Job as read: the raw object (for writes that must keep what we do not model) and the model."""

    raw: dict[str, Any]
    job: CreJob

    @property
    def ref(self) -> JobRef:
        return JobRef(name=self.job.metadata.name, namespace=self.job.metadata.namespace)

    @property
    def conditions(self) -> list[dict[str, Any]]:
        return list((self.raw.get("status") or {}).get("conditions") or [])

    @property
    def terminal(self) -> bool:
        return is_terminal(self.conditions)

    @property
    def true_condition(self) -> ConditionSummary | None:
        return true_exclusive(self.conditions)


def jobs_resource(ctx: Context) -> Resource:
    return cre_jobs(ctx.settings.cre_group)


def parse_job(raw: dict[str, Any], cre_group: str) -> JobState:
    api_version, kind = str(raw.get("apiVersion", "")), str(raw.get("kind", ""))
    if api_version != f"{cre_group}/{CRE_VERSION}" or kind != JOB_KIND:
        raise PermanentError(f"expected {cre_group}/{CRE_VERSION} Job, got {api_version}/{kind}")
    try:
        return JobState(raw, CreJob.model_validate(raw))
    except ValidationError as e:
        raise PermanentError(f"invalid Job: {first_error(e)}") from None


def read_job(ctx: Context, namespace: str, name: str) -> JobState | None:
    raw = ctx.gateway.get(jobs_resource(ctx), namespace, name)
    if raw is None:
        return None
    raw.setdefault("apiVersion", f"{ctx.settings.cre_group}/{CRE_VERSION}")
    raw.setdefault("kind", JOB_KIND)
    return parse_job(raw, ctx.settings.cre_group)


def is_managed(state: JobState, ctx: Context) -> bool:
    return ctx.settings.manage_all or state.job.metadata.labels.get(MANAGED_LABEL) == "true"


def read_managed_job(ctx: Context, job: JobRef) -> JobState | NoReply:
    """The Job read fresh, or why there is nothing to do: it is gone, or not ours to manage."""
    state = read_job(ctx, job.namespace, job.name)
    if state is None:
        return NoReply(f"Job {job.namespace}/{job.name} is gone")
    if not is_managed(state, ctx):
        return NoReply(f"Job {job.namespace}/{job.name} is not managed")
    return state


@dataclass(frozen=True)
class StatusChange:
    """A status patch (merge patch of `status`) and what it does to the True exclusive condition."""

    status: dict[str, Any]
    new_condition: ConditionSummary | None = None


@dataclass(frozen=True)
class StatusWrite:
    before: JobState
    change: StatusChange | None
    written: bool

    @property
    def condition_changed(self) -> bool:
        """True when the True exclusive type or its reason changed (what `job.condition.changed` means)."""
        if self.change is None or self.change.new_condition is None:
            return False
        old = self.before.true_condition
        new = self.change.new_condition
        return old is None or (old.type, old.reason) != (new.type, new.reason)


Decide = Callable[[JobState], StatusChange | None]


def patch_status(ctx: Context, res: Resource, raw: dict[str, Any],
                 decide: Callable[[dict[str, Any]], dict[str, Any] | None]) -> tuple[dict[str, Any] | None, bool]:
    """Merge-patch the `status` decided from `raw`, with its resourceVersion; on a 409 read the object
    again and decide once more, then let the 409 through. Returns the status decided (None: nothing to
    write, or the object is gone) and whether it was written (never in observe mode)."""
    meta = raw["metadata"]
    for attempt in (1, 2):
        status = decide(raw)
        if status is None or ctx.settings.observe:
            return status, False
        try:
            ctx.gateway.patch(res, meta["namespace"], meta["name"], {"status": status},
                              resource_version=meta.get("resourceVersion"), status=True)
            return status, True
        except TemporaryError as e:
            if e.status != 409 or attempt == 2:
                raise
        fresh = ctx.gateway.get(res, meta["namespace"], meta["name"])
        if fresh is None:
            return None, False
        raw, meta = fresh, fresh["metadata"]
    raise AssertionError("unreachable")


def apply_status(ctx: Context, state: JobState, decide: Decide) -> StatusWrite:
    """Compute and write a Job's status change (`patch_status`), never on a terminal Job."""
    decided: list[tuple[JobState, StatusChange | None]] = []

    def decide_raw(raw: dict[str, Any]) -> dict[str, Any] | None:
        current = state if raw is state.raw else parse_job(
            {"apiVersion": state.job.api_version, "kind": JOB_KIND, **raw}, ctx.settings.cre_group)
        change = None if current.terminal else decide(current)
        decided.append((current, change))
        return change.status if change else None

    status, written = patch_status(ctx, jobs_resource(ctx), state.raw, decide_raw)
    current, change = decided[-1]
    return StatusWrite(current, change if status is not None else None, written)


def condition_changed_event(write: StatusWrite, function: str, cause: Envelope | None,
                            workload: WorkloadRef | None = None) -> Outbound:
    """`dev.crefn.job.condition.changed` for a status write (the Job as it is after the write)."""
    assert write.change is not None and write.change.new_condition is not None
    job, status = write.before.job, write.change.status
    ref = job.status.workload_ref
    if workload is None and ref is not None:
        workload = WorkloadRef(api_version=ref.api_version or TRAINJOB_API_VERSION, kind=ref.kind or TRAINJOB_KIND,
                               name=ref.name, namespace=ref.namespace or job.metadata.namespace,
                               attempt=job.status.restart_count)
    nodes = status.get("failedNodes", [n.model_dump(by_alias=True) for n in job.status.failed_nodes])
    data = JobConditionChangedData(
        job=write.before.ref,
        previous=write.before.true_condition,
        new=write.change.new_condition,
        restart_count=int(status.get("restartCount", job.status.restart_count)),
        workload=workload,
        failed_nodes=[FailedNode.model_validate(n) for n in nodes],
    )
    return to_outbound(EventType.JOB_CONDITION_CHANGED, function, job.metadata.namespace, job.metadata.name, data,
                       cause, jobcondition=write.change.new_condition.type)
