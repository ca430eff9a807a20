"""A Job's node health check as CRE's Job controller makes it (`spec.nodeHealthMonitor.cel`). Pure.

- The nodes checked: the distinct `spec.nodeName` of the attempt's pods in phase Running or Pending
  (a pod that ended or was never placed says nothing about a node the workload uses now).
- A Node is unhealthy when the Job's CEL expression is true for it (`functions.rules.cel.node_health`,
  which fills CRE's Node defaults); a Node the expression fails on (a missing map key, say) is
  skipped, as CRE logs and skips it. The handler evaluates it (`functions.celbudget`) and `evaluate`
  reads the outcomes. An expression that cannot be used (longer than 2048 characters, does not
  compile or return bool) changes nothing, as in CRE; one interrupted (over its time budget) changes
  nothing either, but is told on the Job by a Warning Event `InvalidNodeHealthExpression`:
  `node health expression rejected on node <n>: CEL evaluation error: operation interrupted: …`
  (CRE's wrapping of cel-go's error; `CEL compilation error` when it was being compiled).
- `failedNodes` grows and never shrinks: each unhealthy Node gets the entry (name,
  `HardwareFailureDetected`, `Hardware failure detected by node health check`); entries are unique by
  (name, reason), an existing entry wins over a new one, entries without a name are dropped, and the
  list is sorted by name then reason. A node that recovers stays listed.
- Only a (name, reason) pair the Job did not have is news: then `HardwareFailed=True` /
  `HardwareFailureDetected` / `Hardware failure detected on node(s): [n1 n2]`, where the list is every
  distinct name of the merged entries, sorted, in Go's `%v` format for a `[]string` (whatever their
  reason: a node listed earlier for `WorkloadFailed` is named too, as CRE names it).
- Node → Jobs: the pods on a Node name their Job with the label `<cre group>/job`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from events.emitted import FailedNode, JobRef
from events.objects import Pod
from events.types import Reason, job_label
from functions.rules.cel import CelOutcome
from functions.rules.jobs import JobState

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
    rejects the expression (`functions.rules.cel.outcomes`)."""
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
