"""The `resync` function: a PingSource tick re-drives every managed, non-terminal Job (SPEC §5).

Level-triggered safety net: for each Job, re-derive what the event path would have done and send the
resulting events to `K_SINK` (set by a SinkBinding): a Job without `workloadRef` is launched here
(`workload.created`); a Job whose TrainJob exists gets its `workload.phase`; a Job whose TrainJob is
gone gets `Failed`/`WorkloadDeleted`. This is what makes lost, duplicated or reordered events harmless
and what ends restart grace periods. Jobs are handled with bounded concurrency; one JSON summary line
per tick. The answer is 202, or 503 when some event could not be delivered (the tick is retried).
"""

from __future__ import annotations

import json
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from events.emitted import WorkloadRef
from events.envelope import Envelope, Outbound
from events.types import MANAGED_LABEL, TRAINJOB_API_VERSION, TRAINJOB_KIND, ApiServerType
from functions import launch, phase
from functions.adapter import decide_phase, deleted_phase
from functions.context import Context
from functions.errors import PermanentError, TemporaryError
from functions.gateway import TRAINJOBS
from functions.jobs import JobState, is_managed, jobs_resource, parse_job
from functions.outcome import NoReply, Outcome
from functions.transport import send_event

FUNCTION = "resync"
ACCEPTS = frozenset({ApiServerType.PING.value})
"""Event types this function handles (the Triggers in knative/ may route only these)."""
CONCURRENCY = 4
log = logging.getLogger("crefn")


@dataclass(frozen=True)
class JobResult:
    job: str
    event: str = ""
    error: str = ""


def derive(state: JobState, ctx: Context) -> Outbound | None:
    """The event the event path would have produced for this Job now (or None)."""
    ref = state.job.status.workload_ref
    if ref is None:
        try:
            outcome = launch.launch(state, None, ctx)
        except TemporaryError:
            return None  # waiting (grace, terminating): a later tick retries
        return None if isinstance(outcome, NoReply) else outcome
    namespace = ref.namespace or state.ref.namespace
    raw = ctx.gateway.get(TRAINJOBS, namespace, ref.name)
    if raw is None:
        workload = WorkloadRef(api_version=TRAINJOB_API_VERSION, kind=TRAINJOB_KIND, name=ref.name,
                               namespace=namespace, attempt=state.job.status.restart_count)
        return phase.to_phase_event(state.ref.name, workload, deleted_phase(ref.name), None, ctx, FUNCTION)
    trainjob = phase.parse_trainjob(raw)
    return phase.to_phase_event(state.ref.name, phase.to_workload_ref(trainjob), decide_phase(trainjob), None, ctx,
                                FUNCTION)


def resync_job(raw: dict[str, object], sink: str, ctx: Context) -> JobResult:
    state = parse_job(dict(raw), ctx.settings.cre_group)
    name = f"{state.ref.namespace}/{state.ref.name}"
    try:
        if not is_managed(state, ctx) or state.terminal:
            return JobResult(name)
        event = derive(state, ctx)
        if event is None:
            return JobResult(name)
        send_event(sink, event)
        return JobResult(name, event=event.type)
    except (TemporaryError, PermanentError) as e:
        return JobResult(name, error=str(e))


def handle(env: Envelope, ctx: Context) -> Outcome:
    if env.type != ApiServerType.PING:
        raise PermanentError(f"unknown event type {env.type!r} for this function")
    sink = ctx.settings.k_sink
    if not sink:
        raise PermanentError("K_SINK is not set: bind resync to the broker with a SinkBinding")
    selector = "" if ctx.settings.manage_all else f"{MANAGED_LABEL}=true"
    jobs = ctx.gateway.list_all(jobs_resource(ctx), None, label_selector=selector)
    with ThreadPoolExecutor(max_workers=CONCURRENCY) as pool:
        results = list(pool.map(lambda raw: resync_job(raw, sink, ctx), jobs))
    sent = [r for r in results if r.event]
    failed = [r for r in results if r.error]
    summary = {"function": FUNCTION, "jobs": len(results), "sent": len(sent), "failed": len(failed),
               "errors": [f"{r.job}: {r.error}" for r in failed][:5]}
    log.info(json.dumps(summary))
    text = f"resync: {len(results)} jobs, {len(sent)} events sent, {len(failed)} failed"
    if failed:
        raise TemporaryError(f"{text}; first: {failed[0].job}: {failed[0].error}", 503)
    return NoReply(text)
