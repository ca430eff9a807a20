"""`nodehealth`: CRE's node health check (`spec.nodeHealthMonitor.cel`) → `HardwareFailed` and
`failedNodes` (`functions.rules.nodehealth`).

Two inputs. `dev.crefn.job.check` (the resync tick, for every managed, non-terminal Job with a
monitor and a workload) checks the Job it names. A Node `dev.knative.apiserver.resource.add/update`
(the ApiServerSource `crefn-nodes`, Resource mode: the event carries only the new Node, so CRE's
"did a health-relevant field change" filter cannot be applied and every update is checked) checks
every Job with a pod on that Node: the managed pods there (`spec.nodeName` field selector, all
namespaces) name their Jobs by the label `<cre group>/job`.

read, per Job: the Job fresh; for a managed, non-terminal Job with a monitor whose expression
compiles, the pods of its current attempt and each Node they run or wait on (a Node that cannot be
read is skipped, as CRE skips it), the expression's outcome on each Node, and, with
`CREFN_HARDWARE_FAILURE_ACTION=restart`, the attempt's TrainJob. The expression is compiled and
evaluated in a worker process, each evaluation within `CREFN_CEL_BUDGET_SECONDS` (`functions.celbudget`).
An expression that does not compile (or whose type is not bool) is logged once per Job and
expression while this process lives (a small memo: the tick re-sends the check every minute) and
changes nothing, as in CRE; one interrupted past its budget is logged alike, changes nothing and is
told on the Job by a Warning Event `InvalidNodeHealthExpression` (one per attempt, node and message).
decide: when an unhealthy Node adds a (name, `HardwareFailureDetected`)
pair the Job did not have, one status write through the independent writer (no terminal guard, the
read resourceVersion; the Warning Event `HardwareFailureDetected` on the flip to True), and the reply
`dev.crefn.job.hardware.failed`. The workload keeps running (CRE's Job tier only reports); with the
`restart` action the attempt's TrainJob is also deleted (uid precondition) whenever one of its Nodes
is unhealthy, after the write, so that `restart` restarts the Job or fails it (`… was deleted`), as
CRE's Workflow causes; a Node already listed still deletes a later attempt placed on it.

A Node event answers with at most one event: the first Job (by namespace and name) with news is
written and replied for; another Job with news on the same Node is left as it is for its next
check (the tick, within a minute), so that no verdict is written without its event. A Job that
cannot be handled does not stop the others; the answer is 503 when one failed and none was
replied for.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from events.emitted import JobCheckData, JobHardwareFailedData, JobRef
from events.envelope import Envelope, InvalidEvent, Outbound, parse_apiserver_event, parse_data, to_outbound
from events.types import MANAGED_LABEL, ApiServerType, EventType, Reason
from functions import tracing
from functions.apply import run
from functions.context import Context
from functions.errors import CrefnError, Unavailable
from functions.plan import Delete, Effect, Outcome, Plan, nothing
from functions.reads import read_job, read_pods, read_trainjob
from functions.resources import NODES, PODS, TRAINJOBS
from functions.rules.attempts import of_attempt
from functions.rules.checks import monitors_nodes
from functions.rules.jobs import JobState, is_managed, why_not_active
from functions.rules.kubeevents import action_event
from functions.rules.nodehealth import (
    CONDITION,
    Evaluation,
    evaluate,
    hardware_message,
    jobs_on_node,
    merge_failed_nodes,
    monitor_expression,
    pod_nodes,
    rejection_message,
)
from functions.rules.verdicts import independent_write
from functions.settings import Settings

FUNCTION = "nodehealth"
ACCEPTS = frozenset({EventType.JOB_CHECK.value, ApiServerType.RESOURCE_ADD.value, ApiServerType.RESOURCE_UPDATE.value})
PAGE_SIZE = 500
log = logging.getLogger("crefn")


@dataclass(frozen=True)
class Observed:
    cause: Envelope
    job: JobRef
    state: JobState | None
    evaluation: Evaluation = field(default_factory=Evaluation)
    """The expression on the Nodes of the attempt's live pods (those that could be read)."""
    unread: tuple[tuple[str, str], ...] = ()
    """(node, why) for each Node that could not be read."""
    trainjob: dict[str, Any] | None = None
    """The attempt's TrainJob (read for the `restart` action only)."""


def read(env: Envelope, job: JobRef, ctx: Context) -> Observed:
    state = read_job(ctx, job.namespace, job.name)
    if (state is None or state.terminal or not is_managed(state.job.metadata.labels, ctx.settings)
            or not monitors_nodes(state)):
        return Observed(env, job, state)
    expression = monitor_expression(state)
    if checked := ctx.cel.outcomes("node", expression, ()):  # compiled only: it cannot be used
        log_rejected(state.job.metadata.uid, expression, state.where, checked[0].error)
        return Observed(env, job, state, Evaluation(rejected=checked[0]))
    nodes: dict[str, Mapping[str, Any]] = {}
    unread: list[tuple[str, str]] = []
    for name in pod_nodes(read_pods(ctx, state)):
        try:
            node = ctx.gateway.get(NODES, None, name)
        except CrefnError as e:
            node, why = None, str(e)
        else:
            why = "not found"
        if node is None:
            log.warning(tracing.log_line({"function": FUNCTION, "job": state.where, "node": name, "skipped": why}))
            unread.append((name, why))
        else:
            nodes[name] = node
    trainjob = None
    ref = state.job.status.workload_ref
    if ctx.settings.hardware_failure_action == "restart" and ref is not None:
        trainjob = read_trainjob(ctx, ref.namespace or state.ref.namespace, ref.name)
        if not of_attempt(trainjob, state.job.status.restart_count):
            trainjob = None
    evaluation = evaluate(tuple(nodes), ctx.cel.outcomes("node", expression, tuple(nodes.values())))
    if evaluation.rejected is not None:
        log_rejected(state.job.metadata.uid, expression, state.where, evaluation.rejected.error)
    return Observed(env, job, state, evaluation, tuple(unread), trainjob)


@functools.lru_cache(maxsize=4096)
def log_rejected(uid: str, expression: str, where: str, error: str) -> None:
    """Once per Job and expression for as long as the process lives (the tick asks every minute)."""
    log.warning(tracing.log_line({"function": FUNCTION, "job": where, "expression": expression,
                                  "error": f"node health expression rejected: {error}"}))


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    state = observed.state
    if why := why_not_active(state, observed.job, settings):
        return nothing(why)
    assert state is not None
    if not monitors_nodes(state):
        return nothing(f"{state.where} has no node health monitor")
    evaluation = observed.evaluation
    if evaluation.rejected is not None:
        return rejected(state, evaluation, now)
    if not evaluation.nodes and not observed.unread:
        return nothing(f"{state.where}: no pod of attempt {state.job.status.restart_count} runs or waits on a node")
    notes = [f"node {name} skipped: {why}" for name, why in (*observed.unread, *evaluation.skipped)]
    delete = restart_delete(observed.trainjob, settings) if evaluation.unhealthy else ()
    merge = merge_failed_nodes(state.job.status.failed_nodes, evaluation.unhealthy)
    if not merge.new:
        unhealthy = f"unhealthy [{' '.join(evaluation.unhealthy)}], " if evaluation.unhealthy else ""
        deleting = ", deleting the attempt's TrainJob" if delete else ""
        return Plan(delete, reason="; ".join([f"{state.where}: {unhealthy}no new failed node{deleting}", *notes]))
    message = hardware_message(merge.failed_nodes)
    failed_nodes = [n.model_dump(by_alias=True) for n in merge.failed_nodes]
    write = independent_write(state, CONDITION, True, Reason.HARDWARE_FAILURE_DETECTED, message, now,
                              settings.cre_group, FUNCTION, {"failedNodes": failed_nodes})
    assert write is not None  # a new failedNodes entry is a change
    data = JobHardwareFailedData(job=state.ref, nodes=list(merge.new), failed_nodes=list(merge.failed_nodes),
                                 message=message, action=settings.hardware_failure_action)
    reply = to_outbound(EventType.JOB_HARDWARE_FAILED, FUNCTION, state.ref.namespace, state.ref.name, data,
                        observed.cause)
    return Plan((*write.effects, *delete), reply=reply, reason="; ".join(notes))


def rejected(state: JobState, evaluation: Evaluation, now: datetime) -> Plan:
    """An expression that cannot be used changes nothing; one interrupted past its budget is told on the Job."""
    assert evaluation.rejected is not None
    why = f"{state.where}: node health expression rejected: {evaluation.rejected.error}"
    if evaluation.rejected.failure != "interrupted":
        return nothing(why)
    event = action_event(state, Reason.INVALID_NODE_HEALTH_EXPRESSION, rejection_message(evaluation), now, FUNCTION)
    return Plan((event,), reason=why)


def restart_delete(trainjob: Mapping[str, Any] | None, settings: Settings) -> tuple[Effect, ...]:
    """The `restart` action: the attempt's TrainJob deleted (uid precondition), unless it is going already."""
    if settings.hardware_failure_action != "restart" or trainjob is None or trainjob["metadata"].get(
            "deletionTimestamp"):
        return ()
    meta = trainjob["metadata"]
    return (Delete(TRAINJOBS, meta["namespace"], meta["name"], meta["uid"]),)


def deferring(observed: Observed, settings: Settings, now: datetime) -> Plan:
    """`decide`, once another Job on the Node has taken the answer: news waits for the Job's next check."""
    plan = decide(observed, settings, now)
    if plan.reply is None:
        return plan
    return nothing(f"Job {observed.job.namespace}/{observed.job.name}: a new failed node, left to its next check "
                   f"(one event per answer)")


def read_pods_on_node(ctx: Context, node: str) -> list[dict[str, Any]]:
    """The managed pods on a Node, in every namespace (paged)."""
    return ctx.gateway.list_all(PODS, None, label_selector=f"{MANAGED_LABEL}=true", page_size=PAGE_SIZE,
                                field_selector=f"spec.nodeName={node}")


def on_node(env: Envelope, ctx: Context) -> Outcome:
    ref = parse_apiserver_event(env).ref
    if (ref.apiVersion, ref.kind) != ("v1", "Node"):
        raise InvalidEvent(f"expected v1/Node, got {ref.apiVersion}/{ref.kind}")
    jobs = jobs_on_node(read_pods_on_node(ctx, ref.name), ref.name, ctx.settings.cre_group)
    reply: Outbound | None = None
    reasons: list[str] = []
    failed: list[str] = []
    for job in jobs:
        try:
            outcome = run(ctx, functools.partial(read, env, job, ctx), decide if reply is None else deferring)
        except CrefnError as e:
            failed.append(f"Job {job.namespace}/{job.name}: {e}")
            continue
        reply = reply or outcome.reply
        reasons.extend([outcome.reason] if outcome.reason else [])
    summary = f"node {ref.name}: {len(jobs)} jobs, {len(failed)} failed"
    if failed and reply is None:
        raise Unavailable(f"{summary}; first: {failed[0]}")
    return Outcome(reply, "; ".join([summary, *reasons, *failed]))


def answered(outcome: Outcome) -> Outcome:
    """The reason of an answer with an event is logged here (the server logs only the reply's type)."""
    if outcome.reply is not None and outcome.reason:
        log.info(tracing.log_line({"function": FUNCTION, "replied": outcome.reply.type, "reason": outcome.reason}))
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
