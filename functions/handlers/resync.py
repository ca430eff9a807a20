"""`resync`: a PingSource tick re-drives the managed, non-terminal Jobs that need it (SPEC §5).

The level-triggered safety net, at the cost of a few paged LISTs per tick: every TrainJob the project
created, indexed in memory, then every managed Job page by page (a page of Jobs in memory at a time),
each joined with its TrainJob from the index (no GET per Job; a Job whose TrainJob the index lacks
gets one GET before its TrainJob is taken as gone: it may be newer than the LIST). For each non-terminal Job it
decides what the event path would have done, and acts only where the cluster and the Job's status
disagree (drift) or where time has run out: a Job without `workloadRef` is launched
(`functions.rules.launch`, its `workload.created`; one still in its restart grace waits for a later
tick); a Job whose TrainJob is gone gets `Failed`/`WorkloadDeleted`; a Job whose TrainJob's phase its
conditions do not show yet (`functions.rules.status`) gets the `workload.phase` event, as does a Job
whose pods are scheduling-blocked (its grace runs out with no pod changing). A Job whose wall-clock
bound has run out (`functions.rules.deadline`) gets `dev.crefn.job.deadline` instead, for `timeout`.
Besides, a Job due for a clock-driven check (`functions.rules.checks`: node health while it runs,
thresholds after it succeeded) gets `dev.crefn.job.check`, for `nodehealth` and `validate`.
A Job in step costs nothing: in the steady state a tick sends no event. The events go to `K_SINK` (a SinkBinding),
with the OIDC token of `CREFN_OIDC_TOKEN_PATH` when it is set (the `oidc` overlay projects one for the Broker).
This is what makes lost, duplicated or reordered events harmless and what ends restart grace
periods. Jobs are handled with bounded concurrency; one JSON summary line per tick; the answer is
202, or 503 when some Job could not be handled (the tick is retried). A conflict on a Job's write is
re-read with a GET, as in every handler.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from events.emitted import JobCheckData, JobDeadlineData
from events.envelope import Envelope, to_outbound
from events.objects import TrainJobSpec
from events.types import MANAGED_BY_LABEL, MANAGED_BY_VALUE, MANAGED_LABEL, ApiServerType, EventType
from functions import tracing
from functions.apply import run
from functions.client import deliver
from functions.context import Context
from functions.errors import CrefnError, NotYet, PermanentError, Unavailable
from functions.plan import Outcome, Plan, nothing
from functions.reads import read_job, read_runtime_jobs, read_trainjob
from functions.resources import TRAINJOBS, cre_jobs
from functions.rules.adapter import decide_phase, deleted_phase
from functions.rules.attempts import current_workload_ref, workload_name, workload_ref_of
from functions.rules.checks import checks_due
from functions.rules.deadline import deadline
from functions.rules.jobs import JobState, is_managed, parse_job
from functions.rules.launch import LaunchObserved, creates, decide_launch, why_not_launch
from functions.rules.phase import parse_trainjob, phase_event
from functions.rules.status import in_step
from functions.settings import Settings

FUNCTION = "resync"
ACCEPTS = frozenset({ApiServerType.PING.value})
CONCURRENCY = 4
log = logging.getLogger("crefn")


@dataclass(frozen=True)
class Observed:
    state: JobState
    trainjob: dict[str, Any] | None
    """The object of the workload's name: the current attempt's TrainJob, or what blocks a launch."""
    runtime_jobs: tuple[str, ...] | None = None
    """For a launch: the replicatedJobs of the training runtime (whose pods are labelled)."""


@dataclass(frozen=True)
class JobResult:
    job: str
    event: str = ""
    error: str = ""


def workload_key(state: JobState) -> tuple[str, str]:
    """Where the Job's workload is: its `workloadRef`, or the name a launch would give it."""
    ref = state.job.status.workload_ref
    return ((ref.namespace if ref else "") or state.ref.namespace, ref.name if ref else workload_name(state.ref.name))


def read(state: JobState, ctx: Context) -> Observed:
    """A Job's world read fresh (after a conflict); a tick starts from the joined LISTs instead."""
    fresh = read_job(ctx, state.ref.namespace, state.ref.name) or state
    return with_runtime(Observed(fresh, read_trainjob(ctx, *workload_key(fresh))), ctx)


def with_runtime(observed: Observed, ctx: Context) -> Observed:
    """A Job about to be launched (its name free, or held by its earlier attempt) gets its training runtime's
    replicatedJobs (one GET, only then)."""
    state = observed.state
    if why_not_launch(state, ctx.settings) or not creates(LaunchObserved(state, observed.trainjob)):
        return observed
    return Observed(state, observed.trainjob, read_runtime_jobs(ctx, state))


SPEC_KEYS = frozenset(field.alias or name for name, field in TrainJobSpec.model_fields.items())


def indexed(trainjob: dict[str, Any]) -> dict[str, Any]:
    """What the tick keeps of a listed TrainJob: all but its managedFields and the spec fields the adapter
    does not read (a TrainJob's spec and managedFields can outweigh the rest many times over)."""
    meta = {k: v for k, v in (trainjob.get("metadata") or {}).items() if k != "managedFields"}
    spec = {k: v for k, v in (trainjob.get("spec") or {}).items() if k in SPEC_KEYS}
    return {**trainjob, "metadata": meta, "spec": spec}


def joined(state: JobState, trainjobs: dict[tuple[str, str], dict[str, Any]], ctx: Context) -> Observed:
    """The Job with its TrainJob from the tick's index; one the index lacks while the Job refers to it
    is read (created after the LIST, or really gone: drift, rare)."""
    key = workload_key(state)
    trainjob = trainjobs.get(key)
    if trainjob is None and state.job.status.workload_ref is not None and not state.terminal:
        trainjob = read_trainjob(ctx, *key)
    return Observed(state, trainjob)


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    state = observed.state
    if not is_managed(state.job.metadata.labels, settings) or state.terminal:
        return nothing(f"{state.where}: nothing to re-drive")
    if due := deadline(state, now, settings.default_timeout_per_job):
        data = JobDeadlineData(job=state.ref, attempt=state.job.status.restart_count,
                               elapsed_seconds=due.elapsed.total_seconds(), timeout_seconds=due.timeout.total_seconds(),
                               blocked=due.blocked)
        return Plan(reply=to_outbound(EventType.JOB_DEADLINE, FUNCTION, state.ref.namespace, state.ref.name, data,
                                      None))
    ref = state.job.status.workload_ref
    if ref is None:  # managed, not terminal, no workload: to be launched (`why_not_launch`)
        return decide_launch(LaunchObserved(state, observed.trainjob, runtime_jobs=observed.runtime_jobs), settings,
                             now, FUNCTION, None)
    if observed.trainjob is None:
        return Plan(reply=phase_event(state.ref.name, current_workload_ref(state.job), deleted_phase(ref.name), now,
                                      FUNCTION, None))
    trainjob = parse_trainjob(observed.trainjob)
    result = decide_phase(trainjob)
    if in_step(state, workload_ref_of(trainjob), result):
        return nothing(f"{state.where}: in step with TrainJob {trainjob.metadata.name}")
    return Plan(reply=phase_event(state.ref.name, workload_ref_of(trainjob), result, now, FUNCTION, None))


def resync_job(raw: dict[str, Any], trainjobs: dict[tuple[str, str], dict[str, Any]], sink: str,
               ctx: Context) -> JobResult:
    try:
        state = parse_job(raw, ctx.settings.cre_group)
    except PermanentError as e:
        return JobResult(str((raw.get("metadata") or {}).get("name", "?")), error=str(e))
    name = f"{state.ref.namespace}/{state.ref.name}"
    reads = iter([with_runtime(joined(state, trainjobs, ctx), ctx)])
    try:
        sent = ""
        if is_managed(state.job.metadata.labels, ctx.settings) and (due := checks_due(state)):
            data = JobCheckData(job=state.ref, attempt=state.job.status.restart_count, checks=due)
            deliver(sink, to_outbound(EventType.JOB_CHECK, FUNCTION, state.ref.namespace, state.ref.name, data, None),
                    "K_SINK", token_file=ctx.settings.oidc_token_path)
            sent = EventType.JOB_CHECK.value
        outcome = run(ctx, lambda: next(reads, None) or read(state, ctx), decide)
        if outcome.reply is None:
            return JobResult(name, event=sent)
        deliver(sink, outcome.reply, "K_SINK", token_file=ctx.settings.oidc_token_path)
        return JobResult(name, event=outcome.reply.type)
    except NotYet:
        return JobResult(name)  # waiting (grace, terminating): a later tick retries
    except CrefnError as e:
        return JobResult(name, error=str(e))


def handle(env: Envelope, ctx: Context) -> Outcome:
    if env.type != ApiServerType.PING:
        raise PermanentError(f"unknown event type {env.type!r} for this function")
    sink = ctx.settings.k_sink
    if not sink:
        raise PermanentError("K_SINK is not set: bind resync to the broker with a SinkBinding")
    selector = "" if ctx.settings.manage_all else f"{MANAGED_LABEL}=true"
    trainjobs = {(t["metadata"]["namespace"], t["metadata"]["name"]): indexed(t)
                 for page in ctx.gateway.pages(TRAINJOBS, None, label_selector=f"{MANAGED_BY_LABEL}={MANAGED_BY_VALUE}")
                 for t in page["items"]}
    jobs = 0
    results: list[JobResult] = []  # only the Jobs that sent an event or failed
    with ThreadPoolExecutor(max_workers=CONCURRENCY) as pool:
        for page in ctx.gateway.pages(cre_jobs(ctx.settings.cre_group), None, label_selector=selector):
            jobs += len(page["items"])
            results += [r for r in pool.map(lambda raw: resync_job(raw, trainjobs, sink, ctx), page["items"])
                        if r.event or r.error]
    sent = [r for r in results if r.event]
    failed = [r for r in results if r.error]
    log.info(tracing.log_line({"function": FUNCTION, "jobs": jobs, "sent": len(sent), "failed": len(failed),
                               "errors": [f"{r.job}: {r.error}" for r in failed][:5]}))
    text = f"resync: {jobs} jobs, {len(sent)} events sent, {len(failed)} failed"
    if failed:
        raise Unavailable(f"{text}; first: {failed[0].job}: {failed[0].error}")
    return Outcome(None, text)
