"""`resync`: a PingSource tick re-drives the managed, non-terminal Jobs that need it (SPEC §5).

The level-triggered safety net: the unfinished TrainJobs the project created, indexed in memory, then the
unfinished managed Jobs, both listed from the API server's watch cache (`resourceVersion=0`) without the
label `crefn.dev/finished` (kept by the tick, `functions.resync.decide.label_writes`); the hourly sweep
(`functions.resync.decide.is_sweep`, the injected clock) lists all of them from etcd, page by page. Each Job is
joined with its TrainJob (a Job whose TrainJob the index lacks gets one GET before it is taken as gone), a Job
about to be launched with its training runtime. decide: `functions.resync.decide.decide`, per Job, through
`functions.runtime.apply.run_each`, concurrently; events go to `K_SINK` (with the OIDC token of
`CREFN_OIDC_TOKEN_PATH` when set). The answer is 202, or 503 when some Job could not be handled. What a tick
costs: docs/cost.md#a-tick-that-ignores-history.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from events.envelope import Envelope
from events.objects import TrainJobSpec
from events.types import FINISHED_LABEL, MANAGED_LABEL, ApiServerType
from functions.domain.attempts import workload_name
from functions.domain.deletion import finishes
from functions.domain.jobs import JobState, parse_job
from functions.domain.launching import LaunchObserved, creates, why_not_launch
from functions.resync.decide import FUNCTION, Observed, decide, is_sweep
from functions.runtime.apply import Each, run_each
from functions.runtime.context import Context
from functions.runtime.errors import NotYet, PermanentError, Unavailable
from functions.runtime.logs import fields
from functions.runtime.plan import Outcome
from functions.runtime.reads import (
    job_pages,
    managed_trainjob_pages,
    read_job,
    read_job_pods,
    read_runtime_jobs,
    read_trainjob,
)

ACCEPTS = frozenset({ApiServerType.PING.value})
CONCURRENCY = 4
log = logging.getLogger("crefn")
Listed = dict[str, Any]
"""A Job as the tick's LIST gives it."""


@dataclass(frozen=True)
class JobResult:
    job: str
    event: str = ""
    error: str = ""


def workload_key(state: JobState) -> tuple[str, str]:
    """Where the Job's workload is: its `workloadRef`, or the name a launch would give it."""
    ref = state.job.status.workload_ref
    return ((ref.namespace if ref else "") or state.ref.namespace, ref.name if ref else workload_name(state.ref.name))


def read(listed: JobState, ctx: Context) -> Observed:
    """A Job's world read fresh (after a conflict); a tick starts from the joined LISTs instead."""
    fresh = read_job(ctx, listed.ref.namespace, listed.ref.name) or listed
    return with_runtime(Observed(listed, fresh, read_trainjob(ctx, *workload_key(fresh))), ctx)


def with_runtime(observed: Observed, ctx: Context) -> Observed:
    """A Job about to be launched (its name free, or held by its earlier attempt) gets its training runtime's
    replicatedJobs (one GET, only then); a Job whose deletion the functions finish (`finishes`), its pods."""
    state = observed.state
    if finishes(state, ctx.settings):  # its TrainJob too, when the index has none (not labelled as CRE labels it)
        trainjob = observed.trainjob or read_trainjob(ctx, *workload_key(state))
        return Observed(observed.listed, state, trainjob, pods=read_job_pods(ctx, state))
    if why_not_launch(state, ctx.settings) or not creates(LaunchObserved(state, observed.trainjob)):
        return observed
    return Observed(observed.listed, state, observed.trainjob, read_runtime_jobs(ctx, state))


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
    return Observed(state, state, trainjob)


def reads_of(raw: Listed, trainjobs: dict[tuple[str, str], dict[str, Any]], ctx: Context) -> Callable[[], Observed]:
    """A listed Job's reads, as `run` takes them: first the tick's LISTs joined, then (after a conflict) fresh."""
    state = parse_job(raw, ctx.settings.cre_group)
    done: list[Observed] = []

    def next_read() -> Observed:
        done.append(read(state, ctx) if done else with_runtime(joined(state, trainjobs, ctx), ctx))
        return done[-1]
    return next_read


def job_name(raw: Listed, ctx: Context) -> str:
    """The Job as the tick's results name it: `namespace/name`, or its name when it cannot be parsed."""
    try:
        ref = parse_job(raw, ctx.settings.cre_group).ref
    except PermanentError:
        return str((raw.get("metadata") or {}).get("name", "?"))
    return f"{ref.namespace}/{ref.name}"


def result_of(each: Each[Listed], ctx: Context) -> JobResult:
    if each.outcome is not None:
        return JobResult(job_name(each.key, ctx), event=each.outcome.sent[-1] if each.outcome.sent else "")
    if isinstance(each.error, NotYet):
        return JobResult(job_name(each.key, ctx))  # waiting (grace, terminating): a later tick retries
    return JobResult(job_name(each.key, ctx), error=str(each.error))


def resync_job(raw: Listed, trainjobs: dict[tuple[str, str], dict[str, Any]], ctx: Context) -> JobResult:
    """One listed Job's part of a tick."""
    (each,) = run_each(ctx, [raw], functools.partial(reads_of, trainjobs=trainjobs, ctx=ctx), decide)
    return result_of(each, ctx)


def handle(env: Envelope, ctx: Context) -> Outcome:
    if env.type != ApiServerType.PING:
        raise PermanentError(f"unknown event type {env.type!r} for this function")
    if not ctx.settings.k_sink:
        raise PermanentError("K_SINK is not set: bind resync to the broker with a SinkBinding")
    sweep = is_sweep(ctx.clock())
    jobs, results = resync_pages(ctx, sweep)
    sent = [r for r in results if r.event]
    failed = [r for r in results if r.error]
    text = f"resync: {jobs} jobs, {len(sent)} events sent, {len(failed)} failed"
    log.info(text, extra=fields(function=FUNCTION, sweep=sweep, jobs=jobs, sent=len(sent), failed=len(failed),
                                errors=[f"{r.job}: {r.error}" for r in failed][:5]))
    if failed:
        raise Unavailable(f"{text}; first: {failed[0].job}: {failed[0].error}")
    return Outcome(None, text)


def resync_pages(ctx: Context, sweep: bool) -> tuple[int, list[JobResult]]:
    """Every managed Job, page by page (from the watch cache, or from etcd on a sweep, which lists the finished
    ones too), decided against the TrainJobs' index; how many there were, and those that sent or failed."""
    selector = ",".join(s for s in ("" if ctx.settings.manage_all else f"{MANAGED_LABEL}=true",
                                    "" if sweep else f"!{FINISHED_LABEL}") if s)
    trainjobs = {(t["metadata"]["namespace"], t["metadata"]["name"]): indexed(t)
                 for page in managed_trainjob_pages(ctx, unfinished=not sweep)
                 for t in page["items"]}
    jobs = 0
    results: list[JobResult] = []  # only the Jobs that sent an event or failed
    reads = functools.partial(reads_of, trainjobs=trainjobs, ctx=ctx)
    with ThreadPoolExecutor(max_workers=CONCURRENCY) as pool:
        for page in job_pages(ctx, selector, cached=not sweep):
            jobs += len(page["items"])
            each = run_each(ctx, page["items"], reads, decide, map_each=pool.map)
            results += [result_of(e, ctx) for e in each
                        if (e.error and not isinstance(e.error, NotYet)) or (e.outcome and e.outcome.sent)]
    return jobs, results
