"""`resync`: a PingSource tick re-drives every managed, non-terminal Job (SPEC §5).

The level-triggered safety net: for each Job, read it and its TrainJob, and decide what the event
path would have: a Job without `workloadRef` is launched here (`functions.rules.launch`, its
`workload.created`); a Job whose TrainJob exists gets its `workload.phase`; a Job whose TrainJob is
gone gets `Failed`/`WorkloadDeleted`. The events go to `K_SINK` (a SinkBinding). This is what makes
lost, duplicated or reordered events harmless and what ends restart grace periods (a Job still in
its grace period waits for a later tick). Jobs are handled with bounded concurrency; one JSON
summary line per tick; the answer is 202, or 503 when some Job could not be handled (the tick is
retried).
"""

from __future__ import annotations

import json
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from events.envelope import Envelope
from events.types import MANAGED_LABEL, ApiServerType
from functions.apply import run
from functions.context import Context
from functions.errors import CrefnError, NotYet, PermanentError, Unavailable
from functions.plan import Outcome, Plan, nothing
from functions.reads import read_trainjob
from functions.resources import cre_jobs
from functions.rules.adapter import decide_phase, deleted_phase
from functions.rules.attempts import current_workload_ref, workload_name, workload_ref_of
from functions.rules.jobs import JobState, is_managed, parse_job
from functions.rules.launch import LaunchObserved, decide_launch
from functions.rules.phase import parse_trainjob, phase_event
from functions.settings import Settings
from functions.transport import deliver

FUNCTION = "resync"
ACCEPTS = frozenset({ApiServerType.PING.value})
CONCURRENCY = 4
log = logging.getLogger("crefn")


@dataclass(frozen=True)
class Observed:
    state: JobState
    trainjob: dict[str, Any] | None
    """The object of the workload's name: the current attempt's TrainJob, or what blocks a launch."""


@dataclass(frozen=True)
class JobResult:
    job: str
    event: str = ""
    error: str = ""


def read(state: JobState, ctx: Context) -> Observed:
    ref = state.job.status.workload_ref
    name = ref.name if ref else workload_name(state.ref.name)
    return Observed(state, read_trainjob(ctx, (ref.namespace if ref else "") or state.ref.namespace, name))


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    state = observed.state
    if not is_managed(state.job.metadata.labels, settings) or state.terminal:
        return nothing(f"{state.where}: nothing to re-drive")
    ref = state.job.status.workload_ref
    if ref is None:
        return decide_launch(LaunchObserved(state, observed.trainjob), settings, now, FUNCTION, None)
    if observed.trainjob is None:
        return Plan(reply=phase_event(state.ref.name, current_workload_ref(state.job), deleted_phase(ref.name), now,
                                      FUNCTION, None))
    trainjob = parse_trainjob(observed.trainjob)
    return Plan(reply=phase_event(state.ref.name, workload_ref_of(trainjob), decide_phase(trainjob), now, FUNCTION,
                                  None))


def resync_job(raw: dict[str, Any], sink: str, ctx: Context) -> JobResult:
    try:
        state = parse_job(raw, ctx.settings.cre_group)
    except PermanentError as e:
        return JobResult(str((raw.get("metadata") or {}).get("name", "?")), error=str(e))
    name = f"{state.ref.namespace}/{state.ref.name}"
    if not is_managed(state.job.metadata.labels, ctx.settings) or state.terminal:
        return JobResult(name)
    try:
        outcome = run(ctx, lambda: read(state, ctx), decide)
        if outcome.reply is None:
            return JobResult(name)
        deliver(sink, outcome.reply, "K_SINK")
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
    jobs = ctx.gateway.list_all(cre_jobs(ctx.settings.cre_group), None, label_selector=selector)
    with ThreadPoolExecutor(max_workers=CONCURRENCY) as pool:
        results = list(pool.map(lambda raw: resync_job(raw, sink, ctx), jobs))
    sent = [r for r in results if r.event]
    failed = [r for r in results if r.error]
    log.info(json.dumps({"function": FUNCTION, "jobs": len(results), "sent": len(sent), "failed": len(failed),
                         "errors": [f"{r.job}: {r.error}" for r in failed][:5]}))
    text = f"resync: {len(results)} jobs, {len(sent)} events sent, {len(failed)} failed"
    if failed:
        raise Unavailable(f"{text}; first: {failed[0].job}: {failed[0].error}")
    return Outcome(None, text)
