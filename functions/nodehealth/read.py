"""`nodehealth`: CRE's node health check (`spec.nodeHealthMonitor.cel`) → `HardwareFailed` and
`failedNodes` (the rules and the decision: `functions.nodehealth.decide`).
`dev.crefn.job.check` (the resync tick) checks the Job it names. A Node add/update (the ApiServerSource
`crefn-nodes`, Resource mode: only the new Node, so CRE's "did a health-relevant field change" filter
cannot be applied) checks every Job whose managed pods there (`spec.nodeName`, all namespaces) name it
by the label `<cre group>/job`: one run per Job (`functions.runtime.apply.run_each`), the first with news
replied for, the others left to their next check; 503 when one failed and none was replied for.
read, per Job: the Job fresh; for a managed, non-terminal Job with a monitor, its attempt's pods, the
Nodes they run or wait on (one unreadable is skipped, as CRE does), the expression on them (in a worker
process within `CREFN_CEL_BUDGET_SECONDS`; a rejection is logged once per Job and expression) and,
with `CREFN_HARDWARE_FAILURE_ACTION=restart`, the attempt's TrainJob; when the event may be the one that
made `HardwareFailed` True, delivered again (`wants.restate_wanted`), that condition's Event.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from typing import Any

from events.emitted import JobCheckData, JobRef
from events.envelope import Envelope, InvalidEvent, parse_apiserver_event, parse_data
from events.types import ApiServerType, EventType
from functions.domain.attempts import of_attempt
from functions.domain.due import monitors_nodes
from functions.domain.jobs import Gone, JobState, is_managed
from functions.domain.redelivery import Announced
from functions.nodehealth import wants
from functions.nodehealth.decide import (
    FUNCTION,
    Evaluated,
    Evaluation,
    Found,
    Observed,
    decide,
    deferring,
    evaluate,
    jobs_on_node,
    monitor_expression,
    pod_nodes,
)
from functions.runtime.apply import run, run_each
from functions.runtime.context import Context
from functions.runtime.errors import CrefnError, Unavailable
from functions.runtime.logs import fields
from functions.runtime.plan import Outcome
from functions.runtime.reads import (
    read_first_event,
    read_job,
    read_managed_pods_on_node,
    read_node,
    read_pods,
    read_trainjob,
)

ACCEPTS = frozenset({EventType.JOB_CHECK.value, ApiServerType.RESOURCE_ADD.value, ApiServerType.RESOURCE_UPDATE.value})
log = logging.getLogger("crefn")


def read(env: Envelope, job: JobRef, ctx: Context) -> Observed:
    state = read_job(ctx, job.namespace, job.name)
    if state is None:
        return Gone(job)
    if state.terminal or not is_managed(state.job.metadata.labels, ctx.settings) or not monitors_nodes(state):
        return Found(env, job, state)
    expression = monitor_expression(state)
    if checked := ctx.cel.outcomes("node", expression, ()):  # compiled only: it cannot be used
        log_rejected(state.job.metadata.uid, expression, *job_of(state).values(), checked[0].error)
        return Evaluated(env, job, state, Evaluation(rejected=checked[0]))
    nodes, unread = read_nodes(ctx, state)
    trainjob = restart_trainjob(ctx, state)
    evaluation = evaluate(tuple(nodes), ctx.cel.outcomes("node", expression, tuple(nodes.values())))
    if evaluation.rejected is not None:
        log_rejected(state.job.metadata.uid, expression, *job_of(state).values(), evaluation.rejected.error)
        return Evaluated(env, job, state, evaluation, unread, trainjob)
    return Evaluated(env, job, state, evaluation, unread, trainjob, announced(env, ctx, state, evaluation))


def read_nodes(ctx: Context, state: JobState) -> tuple[dict[str, Mapping[str, Any]], tuple[tuple[str, str], ...]]:
    """The Nodes of the attempt's pods, read fresh, by name; those that could not be read, with why (logged)."""
    nodes: dict[str, Mapping[str, Any]] = {}
    unread: list[tuple[str, str]] = []
    for name in pod_nodes(read_pods(ctx, state)):
        try:
            node = read_node(ctx, name)
        except CrefnError as e:
            node, why = None, str(e)
        else:
            why = "not found"
        if node is None:
            log.warning(f"node {name} skipped: {why}", extra=fields(function=FUNCTION, node=name, skipped=why,
                                                                    **job_of(state)))
            unread.append((name, why))
        else:
            nodes[name] = node
    return nodes, tuple(unread)


def restart_trainjob(ctx: Context, state: JobState) -> dict[str, Any] | None:
    """The current attempt's TrainJob, read when a hardware failure restarts it (`hardware_failure_action`)."""
    ref = state.job.status.workload_ref
    if ctx.settings.hardware_failure_action != "restart" or ref is None:
        return None
    trainjob = read_trainjob(ctx, ref.namespace or state.ref.namespace, ref.name)
    return trainjob if of_attempt(trainjob, state.job.status.restart_count) else None


def announced(env: Envelope, ctx: Context, state: JobState, evaluation: Evaluation) -> Announced | None:
    """The Events of the verdict the event may have decided, delivered again (`wants.restate_wanted`)."""
    attempt = parse_data(env, JobCheckData).attempt if env.type == EventType.JOB_CHECK else None
    names = () if ctx.settings.observe else wants.restate_wanted(state, evaluation, env, attempt, ctx.clock())
    return Announced(read_first_event(ctx, state.ref.namespace, names)) if names else None


@functools.lru_cache(maxsize=4096)
def log_rejected(uid: str, expression: str, namespace: str, name: str, error: str) -> None:
    """Once per Job and expression for as long as the process lives (the tick asks every minute)."""
    log.warning(f"node health expression rejected: {error}",
                extra=fields(function=FUNCTION, expression=expression, error=error, namespace=namespace, job=name))


def job_of(state: JobState) -> dict[str, str]:
    """The Job a line is about, as its `namespace` and `job` fields."""
    return {"namespace": state.job.metadata.namespace, "job": state.job.metadata.name}


def on_node(env: Envelope, ctx: Context) -> Outcome:
    ref = parse_apiserver_event(env).ref
    if (ref.apiVersion, ref.kind) != ("v1", "Node"):
        raise InvalidEvent(f"expected v1/Node, got {ref.apiVersion}/{ref.kind}")
    jobs = jobs_on_node(read_managed_pods_on_node(ctx, ref.name), ref.name, ctx.settings.cre_group)
    each = run_each(ctx, jobs, functools.partial(reads_of, env, ctx=ctx), decide, then=deferring)
    reply = next((e.outcome.reply for e in each if e.outcome and e.outcome.reply), None)
    reasons = [e.outcome.reason for e in each if e.outcome and e.outcome.reason]
    failed = [f"Job {e.key.namespace}/{e.key.name}: {e.error}" for e in each if e.error]
    summary = f"node {ref.name}: {len(jobs)} jobs, {len(failed)} failed"
    if failed and reply is None:
        raise Unavailable(f"{summary}; first: {failed[0]}")
    return Outcome(reply, "; ".join([summary, *reasons, *failed]))


def reads_of(env: Envelope, job: JobRef, ctx: Context) -> Callable[[], Observed]:
    return functools.partial(read, env, job, ctx)


def answered(outcome: Outcome) -> Outcome:
    """The reason of an answer with an event is logged here (the server logs only the reply's type)."""
    if outcome.reply is not None and outcome.reason:
        log.info(f"replied {outcome.reply.type}: {outcome.reason}",
                 extra=fields(function=FUNCTION, replied=outcome.reply.type))
    return outcome


def handle(env: Envelope, ctx: Context) -> Outcome:
    if env.type == EventType.JOB_CHECK:
        data = parse_data(env, JobCheckData)
        if "nodehealth" not in data.checks:
            return Outcome(None, f"Job {data.job.namespace}/{data.job.name}: no node health check asked")
        return answered(run(ctx, functools.partial(read, env, data.job, ctx), decide))
    if env.type in (ApiServerType.RESOURCE_ADD, ApiServerType.RESOURCE_UPDATE):
        return answered(on_node(env, ctx))
    raise InvalidEvent(f"unknown event type {env.type!r} for this function")
