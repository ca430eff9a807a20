"""CRE Jobs as read (SPEC §2, §6.1, §6.2): which are ours, their state, and the status write.

A Job is managed when it carries `crefn.dev/managed=true` or `CREFN_MANAGE_ALL` is set. A Job whose
`Succeeded` or `Failed` is True is terminal and never written again: every decision starts from a
fresh read and checks it, so the guard holds when another writer got there first (the conflict
re-read decides again on the newer state). A status write carries the resourceVersion that was read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from events.emitted import ConditionSummary, FailedNode, FailureInfo, JobConditionChangedData, JobRef, WorkloadRef
from events.envelope import Envelope, Outbound, first_error, to_outbound
from events.objects import CreJob
from events.types import CRE_VERSION, JOB_KIND, MANAGED_LABEL, WORKLOADRUN_KIND, EventType
from functions.domain.attempts import current_workload_ref, is_current, stale
from functions.domain.conditions import is_terminal, true_exclusive
from functions.runtime.errors import PermanentError
from functions.runtime.plan import Written
from functions.runtime.resources import cre_jobs
from functions.runtime.settings import Settings

if TYPE_CHECKING:
    from functions.runtime.effects import WriteStatus


@dataclass(frozen=True)
class Skipped:
    """Nothing to do, said by a function's read: the event asks nothing of the function, or what was read
    shows nothing to act on (a Job that is not one to act on, a stale or forged delete event). `why` is the
    answer's reason; the decision is `nothing(why)`."""

    why: str


@dataclass(frozen=True)
class Gone:
    """What a function read when the Job an event names does not exist on a fresh read."""

    job: JobRef

    @property
    def why(self) -> str:
        return f"Job {self.job.namespace}/{self.job.name} is gone"


@dataclass(frozen=True)
class JobState:
    """A Job as read: the raw object (writes keep what we do not model) and the model."""

    raw: dict[str, Any]
    job: CreJob

    @property
    def ref(self) -> JobRef:
        return JobRef(name=self.job.metadata.name, namespace=self.job.metadata.namespace)

    @property
    def where(self) -> str:
        return f"Job {self.job.metadata.namespace}/{self.job.metadata.name}"

    @property
    def conditions(self) -> list[dict[str, Any]]:
        return list((self.raw.get("status") or {}).get("conditions") or [])

    @property
    def terminal(self) -> bool:
        return is_terminal(self.conditions)

    @property
    def true_condition(self) -> ConditionSummary | None:
        return true_exclusive(self.conditions)


def parse_job(raw: dict[str, Any], cre_group: str) -> JobState:
    api_version, kind = str(raw.get("apiVersion", "")), str(raw.get("kind", ""))
    if api_version != f"{cre_group}/{CRE_VERSION}" or kind != JOB_KIND:
        raise PermanentError(f"expected {cre_group}/{CRE_VERSION} Job, got {api_version}/{kind}")
    try:
        return JobState(raw, CreJob.model_validate(raw))
    except ValidationError as e:
        raise PermanentError(f"invalid Job: {first_error(e)}") from None


def is_managed(labels: Mapping[str, str], settings: Settings) -> bool:
    return settings.manage_all or labels.get(MANAGED_LABEL) == "true"


def as_written(written: Written, cre_group: str, namespace: str, name: str) -> JobState | None:
    """The Job as a plan's locked writes left it, from the API server's answer (None: no such write)."""
    raw = written.get((cre_jobs(cre_group).plural, namespace, name))
    return parse_job(dict(raw), cre_group) if raw is not None else None


def write_status(state: JobState, status: Mapping[str, Any], cre_group: str) -> WriteStatus:
    from functions.runtime.effects import WriteStatus  # `phase`, which writes no status, never makes the effects

    meta = state.job.metadata
    return WriteStatus(cre_jobs(cre_group), meta.namespace, meta.name, meta.resource_version, status)


def condition_changed(state: JobState, status: Mapping[str, Any], new: ConditionSummary, function: str,
                      cause: Envelope | None, workload: WorkloadRef | None = None, restated: bool = False) -> Outbound:
    """`dev.crefn.job.condition.changed` for a status write (the Job as it is after the write); `restated`: for
    a verdict written before (`functions.domain.redelivery`), whose previous condition is not known (null)."""
    job = state.job
    if workload is None and job.status.workload_ref is not None:
        workload = current_workload_ref(job)
    nodes = status.get("failedNodes", [n.model_dump(by_alias=True) for n in job.status.failed_nodes])
    log = status.get("failureLog") or (job.status.failure_log.model_dump(by_alias=True)
                                       if job.status.failure_log else None)
    data = JobConditionChangedData(
        job=state.ref, previous=None if restated else state.true_condition, new=new,
        restart_count=int(status.get("restartCount", job.status.restart_count)), workload=workload,
        failed_nodes=[FailedNode.model_validate(n) for n in nodes],
        failure=FailureInfo.model_validate(log) if log and new.type == "Failed" else None,
        workload_run=workload_run_of(job),
    )
    return to_outbound(EventType.JOB_CONDITION_CHANGED, function, job.metadata.namespace, job.metadata.name, data,
                       cause, jobcondition=new.type)


def workload_run_of(job: CreJob) -> str:
    """The name of the WorkloadRun (of the Job's CRE group) that controls the Job, "" when none."""
    owner = job.controller_owner()
    group = job.api_version.partition("/")[0]
    if owner is None or owner.kind != WORKLOADRUN_KIND or owner.api_version.partition("/")[0] != group:
        return ""
    return owner.name


def why_not_current(state: JobState, workload: WorkloadRef) -> str:
    """Why an event about a workload must not act on the Job: it is terminal, or the event is about
    another attempt ("" when it is the current one)."""
    if state.terminal:
        return f"{state.where} is terminal"
    if not is_current(state.job, workload):
        return stale(workload, state.job.metadata.namespace, state.job.metadata.name)
    return ""


def why_not_ours(state: JobState | None, ref: JobRef, settings: Settings) -> str:
    """Why an event about a Job is none of ours ("" when the Job exists and is managed)."""
    if state is None:
        return Gone(ref).why
    if not is_managed(state.job.metadata.labels, settings):
        return f"Job {ref.namespace}/{ref.name} is not managed"
    return ""


def why_not_active(state: JobState | None, ref: JobRef, settings: Settings) -> str:
    """Why a Job is not one to act on: gone, not managed, or terminal ("" when it is)."""
    if why := why_not_ours(state, ref, settings):
        return why
    assert state is not None
    return f"{state.where} is terminal" if state.terminal else ""
