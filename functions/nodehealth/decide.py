"""A Job's node health check as CRE's Job controller makes it (`spec.nodeHealthMonitor.cel`). Pure.

The nodes checked are those of the attempt's Running or Pending pods; a Node is unhealthy when the
Job's CEL expression is true for it (`functions.domain.cel.node_health`), skipped when it fails on it.
The handler evaluates it (`functions.runtime.celbudget`) and `evaluate` reads the outcomes. `failedNodes`
grows and never shrinks (entries `HardwareFailureDetected`, `Hardware failure detected by node health
check`); only a new (name, reason) pair is news: `HardwareFailed=True`/`HardwareFailureDetected`/
`Hardware failure detected on node(s): [n1 n2]`. Node → Jobs: the pods on a Node name their Job with
the label `<cre group>/job`. `decide` is the `nodehealth` function's decision for one Job, on what
`functions.nodehealth.read` read; `deferring` the same once another Job on the Node has taken the
answer (one event per answer). The rules in full: docs/functions.md#node-health-decision; the flip to True
delivered again: `restate_wanted` (docs/functions.md#verdicts-delivered-again)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from events.emitted import FailedNode, JobHardwareFailedData, JobRef
from events.envelope import Envelope, Outbound, to_outbound
from events.objects import Pod
from events.types import EventType, Reason, job_label
from functions.domain.attempts import delete_attempt
from functions.domain.cel import CelOutcome
from functions.domain.condition_writes import independent_write
from functions.domain.due import monitors_nodes
from functions.domain.jobs import Gone, JobState, why_not_active
from functions.domain.kubeevents import action_event, cap_note, condition_name, job_event
from functions.domain.redelivery import Announced, announce_again, transition_time
from functions.runtime.effects import Effect
from functions.runtime.plan import Plan, nothing
from functions.runtime.settings import Settings

FUNCTION = "nodehealth"
CONDITION = "HardwareFailed"
NODE_MESSAGE = "Hardware failure detected by node health check"
LIVE_PHASES = ("Running", "Pending")


def monitor_expression(state: JobState) -> str:
    """The Job's `spec.nodeHealthMonitor.cel.expression` ("" without one)."""
    monitor = state.job.spec.node_health_monitor
    return monitor.cel.expression if monitor is not None and monitor.cel is not None else ""


def pod_nodes(pods: Iterable[Pod]) -> tuple[str, ...]:
    """The distinct nodes of the pods that are Running or Pending there, sorted."""
    return tuple(sorted({p.spec.node_name for p in pods if p.spec.node_name and p.status.phase in LIVE_PHASES}))


@dataclass(frozen=True)
class Evaluation:
    nodes: tuple[str, ...] = ()
    """The nodes the expression was evaluated on, sorted."""
    unhealthy: tuple[str, ...] = ()
    """The nodes the expression calls unhealthy, sorted."""
    skipped: tuple[tuple[str, str], ...] = ()
    """(node, why) for each node the expression failed on."""
    rejected: CelOutcome | None = None
    """Why the expression cannot be used, when it cannot (then nothing else counts)."""
    rejected_on: str = ""
    """The node it was being evaluated on when it was rejected ("": while it was compiled)."""


def evaluate(nodes: Sequence[str], outcomes: Sequence[CelOutcome]) -> Evaluation:
    """The Job's expression on the nodes: their outcomes in the same order, which end early at one that
    rejects the expression (`functions.domain.cel.outcomes`)."""
    unhealthy: list[str] = []
    skipped: list[tuple[str, str]] = []
    for name, outcome in zip(nodes, outcomes, strict=False):
        if outcome.rejects:
            return Evaluation(tuple(sorted(nodes)), rejected=outcome, rejected_on=name)
        if outcome.failure:
            skipped.append((name, outcome.error))
        elif outcome.value:
            unhealthy.append(name)
    return Evaluation(tuple(sorted(nodes)), tuple(sorted(unhealthy)), tuple(sorted(skipped)))


def rejection_message(evaluation: Evaluation) -> str:
    """The Warning Event's note for an interrupted expression, as CRE wraps cel-go's errors."""
    assert evaluation.rejected is not None
    if evaluation.rejected_on:
        return (f"node health expression rejected on node {evaluation.rejected_on}: "
                f"CEL evaluation error: {evaluation.rejected.error}")
    return f"node health expression rejected: CEL compilation error: {evaluation.rejected.error}"


@dataclass(frozen=True)
class Merge:
    failed_nodes: tuple[FailedNode, ...]
    """The Job's `failedNodes` after the merge."""
    new: tuple[str, ...]
    """The nodes whose (name, `HardwareFailureDetected`) entry the Job did not have, sorted."""


def merge_failed_nodes(existing: Sequence[FailedNode], unhealthy: Iterable[str]) -> Merge:
    """CRE's `mergeFailedNodes` with the node health check's reason and message."""
    reason = Reason.HARDWARE_FAILURE_DETECTED.value
    incoming = [FailedNode(name=n, reason=reason, message=NODE_MESSAGE) for n in sorted(set(unhealthy)) if n]
    had = {(n.name, n.reason) for n in existing}
    merged: dict[tuple[str, str], FailedNode] = {}
    for entry in (*existing, *incoming):
        if entry.name:
            merged.setdefault((entry.name, entry.reason), entry)
    return Merge(tuple(merged[key] for key in sorted(merged)),
                 tuple(n.name for n in incoming if (n.name, n.reason) not in had))


def hardware_message(failed_nodes: Iterable[FailedNode]) -> str:
    """`Hardware failure detected on node(s): [n1 n2]` (every distinct name, sorted, as Go prints a slice)."""
    names = sorted({n.name for n in failed_nodes if n.name})
    return f"Hardware failure detected on node(s): [{' '.join(names)}]"


def jobs_on_node(pods: Iterable[Mapping[str, Any]], node: str, cre_group: str) -> tuple[JobRef, ...]:
    """The Jobs whose labelled pods are on `node` (raw pods, as a list returns them), sorted."""
    label = job_label(cre_group)
    found: set[tuple[str, str]] = set()
    for pod in pods:
        meta = pod.get("metadata") or {}
        name = (meta.get("labels") or {}).get(label)
        if name and (pod.get("spec") or {}).get("nodeName") == node:
            found.add((str(meta.get("namespace", "")), str(name)))
    return tuple(JobRef(namespace=ns, name=name) for ns, name in sorted(found))


@dataclass(frozen=True)
class Found:
    """The Job read fresh, and nothing else: not managed, terminal, or without a monitor."""

    cause: Envelope
    job: JobRef
    state: JobState


@dataclass(frozen=True)
class Evaluated:
    """The Job read fresh and its expression on the Nodes of its attempt's live pods (those that could be
    read; rejected when it does not compile), each Node that could not be read (node, why), and, for the
    `restart` action, the attempt's TrainJob (None: gone, of another attempt, or not read)."""

    cause: Envelope
    job: JobRef
    state: JobState
    evaluation: Evaluation = field(default_factory=Evaluation)
    unread: tuple[tuple[str, str], ...] = ()
    trainjob: dict[str, Any] | None = None
    announced: Announced | None = None
    """The Event of the Job's `HardwareFailed`, read when the event may be the one that wrote it, delivered again
    (`restate_wanted`)."""


Observed = Gone | Found | Evaluated


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    if isinstance(observed, Gone):
        return nothing(observed.why)
    state = observed.state
    if why := why_not_active(state, observed.job, settings):
        return nothing(why)
    if not monitors_nodes(state):
        return nothing(f"{state.where} has no node health monitor")
    evaluation = Evaluation() if isinstance(observed, Found) else observed.evaluation
    if evaluation.rejected is not None:
        return rejected(state, evaluation, now)
    if isinstance(observed, Found) or (not evaluation.nodes and not observed.unread):
        return nothing(f"{state.where}: no pod of attempt {state.job.status.restart_count} runs or waits on a node")
    notes = [f"node {name} skipped: {why}" for name, why in (*observed.unread, *evaluation.skipped)]
    delete = restart_delete(observed.trainjob, state, settings) if evaluation.unhealthy else ()
    merge = merge_failed_nodes(state.job.status.failed_nodes, evaluation.unhealthy)
    if not merge.new:
        unhealthy = f"unhealthy [{' '.join(evaluation.unhealthy)}], " if evaluation.unhealthy else ""
        deleting = ", deleting the attempt's TrainJob" if delete else ""
        kept = Plan(delete, reason="; ".join([f"{state.where}: {unhealthy}no new failed node{deleting}", *notes]))
        if observed.announced is None:
            return kept
        restated = restate(state, observed.announced.event, observed.cause, delete, settings, now)
        return restated if restated.reply is not None or restated.effects else kept  # else announced by another
    message = hardware_message(merge.failed_nodes)
    failed_nodes = [n.model_dump(by_alias=True) for n in merge.failed_nodes]
    write = independent_write(state, CONDITION, True, Reason.HARDWARE_FAILURE_DETECTED, message, now,
                              settings.cre_group, FUNCTION, {"failedNodes": failed_nodes}, cause=observed.cause.id)
    assert write is not None  # a new failedNodes entry is a change
    reply = hardware_failed(state, merge.new, merge.failed_nodes, message, settings, observed.cause)
    return Plan((*write.effects, *delete), reply=reply, reason="; ".join(notes))


def hardware_failed(state: JobState, nodes: Sequence[str], failed_nodes: Sequence[FailedNode], message: str,
                    settings: Settings, cause: Envelope) -> Outbound:
    """`dev.crefn.job.hardware.failed`: the nodes newly found unhealthy, the Job's failedNodes after the write."""
    data = JobHardwareFailedData(job=state.ref, nodes=list(nodes), failed_nodes=list(failed_nodes), message=message,
                                 action=settings.hardware_failure_action)
    return to_outbound(EventType.JOB_HARDWARE_FAILED, FUNCTION, state.ref.namespace, state.ref.name, data, cause)


def hardware_condition(state: JobState) -> dict[str, Any]:
    """The Job's `HardwareFailed` condition when it is True with the node health check's reason, else empty."""
    cond = next((c for c in state.conditions if c.get("type") == CONDITION), {})
    true = cond.get("status") == "True" and cond.get("reason") == Reason.HARDWARE_FAILURE_DETECTED
    return cond if true else {}


def restate(state: JobState, announced: Mapping[str, Any] | None, cause: Envelope, delete: tuple[Effect, ...],
            settings: Settings, now: datetime) -> Plan:
    """The flip's Event (when missing) and its `job.hardware.failed` again, read off the stored Job; nothing (no
    reply) when another event announced it, or when its Event's note is not the condition's message any more (a
    node joined since: its own event announced the Job's failedNodes, and this one did not decide it)."""
    message = str(hardware_condition(state).get("message") or "")
    reason = Reason.HARDWARE_FAILURE_DETECTED.value
    if announced is not None and announced.get("note") != cap_note(message):
        return nothing(f"{state.where}: a node joined {CONDITION} after its event")
    event = job_event(state, condition_name(state, CONDITION, reason), reason, message, True, now, FUNCTION,
                      cause.id)
    failed = state.job.status.failed_nodes
    return announce_again(state, f"{CONDITION}/{reason}", announced, event, cause,
                          hardware_failed(state, detected(failed), failed, message, settings, cause),
                          transition_time(state, CONDITION), now, delete)


def detected(failed_nodes: Iterable[FailedNode]) -> tuple[str, ...]:
    """The names of the node health check's entries (`HardwareFailureDetected`), sorted."""
    return tuple(sorted({n.name for n in failed_nodes if n.reason == Reason.HARDWARE_FAILURE_DETECTED}))


def rejected(state: JobState, evaluation: Evaluation, now: datetime) -> Plan:
    """An expression that cannot be used changes nothing; one interrupted past its budget is told on the Job."""
    assert evaluation.rejected is not None
    why = f"{state.where}: node health expression rejected: {evaluation.rejected.error}"
    if evaluation.rejected.failure != "interrupted":
        return nothing(why)
    event = action_event(state, Reason.INVALID_NODE_HEALTH_EXPRESSION, rejection_message(evaluation), now, FUNCTION)
    return Plan((event,), reason=why)


def restart_delete(trainjob: Mapping[str, Any] | None, state: JobState, settings: Settings) -> tuple[Effect, ...]:
    """The `restart` action: the attempt's TrainJob deleted (uid precondition), unless it is going already or
    is not the Job's (not controlled by it, whatever `workloadRef` names)."""
    return delete_attempt(trainjob, state.job.metadata.uid) if settings.hardware_failure_action == "restart" else ()


def deferring(observed: Observed, settings: Settings, now: datetime) -> Plan:
    """`decide`, once another Job on the Node has taken the answer: news waits for the Job's next check."""
    plan = decide(observed, settings, now)
    if plan.reply is None:
        return plan
    return nothing(f"Job {observed.job.namespace}/{observed.job.name}: a new failed node, left to its next check "
                   f"(one event per answer)")
