"""Writing a Job's exclusive condition (SPEC §6.2) and what goes with it.

`condition_write` is the one status write every handler makes to set the True exclusive condition:
the conditions CRE's rules give (`functions.domain.conditions`), the other status fields the
decision adds, and the Kubernetes Event of a type flip (`functions.domain.kubeevents`), placed after
the write. A Failed verdict attributes the Job's nodes (`failed_nodes`): the nodes CRE's Workflow
lists in the Job's annotation `<cre group>/group-nodes` (trimmed, de-duplicated, sorted), else every
node the attempt's pods were bound to (CRE's `DiscoverPlacedNodesForJob`), written only while
`failedNodes` is empty — the first attribution wins, so an earlier `HardwareFailureDetected` or
`ThresholdViolation` list is kept as it is, as CRE does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from events.emitted import ConditionSummary
from events.objects import Pod
from events.types import Reason, group_nodes_annotation
from functions.domain.conditions import decide_conditions, decide_independent
from functions.domain.jobs import JobState, write_status
from functions.domain.kubeevents import condition_name, job_event, transition_event
from functions.runtime.effects import Effect


@dataclass(frozen=True)
class ConditionWrite:
    status: dict[str, Any]
    """The status patch (what `job.condition.changed` reports)."""
    effects: tuple[Effect, ...]
    """The write, then the Event of a type flip."""


def condition_write(state: JobState, new: ConditionSummary, now: datetime, group: str, function: str,
                    extra: Mapping[str, Any] | None = None, cause: str = "") -> ConditionWrite | None:
    """The write that makes `new` the True exclusive condition, with `extra` status fields; None when
    it would change nothing. `cause`: the id of the deciding event, recorded on the Event of a verdict."""
    conditions = decide_conditions(state.conditions, state.job.metadata.generation, new, now)
    status: dict[str, Any] = dict(extra or {})
    if conditions is not None:
        status["conditions"] = conditions
    if not status:
        return None
    effects: list[Effect] = [write_status(state, status, group)]
    if conditions is not None and (event := transition_event(state, new, now, function, cause)):
        effects.append(event)
    return ConditionWrite(status, tuple(effects))


def independent_write(state: JobState, cond_type: str, status: bool, reason: str, message: str, now: datetime,
                      group: str, function: str, extra: Mapping[str, Any] | None = None,
                      normal_event: bool = False, cause: str = "") -> ConditionWrite | None:
    """The write of an independent condition (`HardwareFailed`, `ValidationFailed`) with `extra` status
    fields, on the read resourceVersion like every write, but with no terminal guard: CRE evaluates
    thresholds after `Succeeded`, and hardware failures are not terminal. Its Event: a Warning on the
    flip to True; with `normal_event`, a Normal one on the first False write (CRE's `ThresholdsMet`); `cause`:
    the id of the deciding event, recorded on it. None when it would change nothing."""
    conditions = decide_independent(state.conditions, state.job.metadata.generation, cond_type, status, reason,
                                    message, now)
    patch: dict[str, Any] = dict(extra or {})
    if conditions is not None:
        patch["conditions"] = conditions
    if not patch:
        return None
    effects: list[Effect] = [write_status(state, patch, group)]
    before = next((c for c in state.conditions if c.get("type") == cond_type), None)
    flipped = conditions is not None and (before or {}).get("status") != ("True" if status else "False")
    if flipped and (status or (before is None and normal_event)):
        name = condition_name(state, cond_type, reason)
        effects.append(job_event(state, name, reason, message, status, now, function, cause))
    return ConditionWrite(patch, tuple(effects))


def group_nodes(state: JobState, group: str) -> tuple[str, ...]:
    """The nodes of the Job's annotation `<group>/group-nodes` (set by CRE's Workflow)."""
    value = state.job.metadata.annotations.get(group_nodes_annotation(group), "")
    return tuple(sorted({n.strip() for n in value.split(",") if n.strip()}))


def placed_nodes(pods: Sequence[Pod]) -> tuple[str, ...]:
    """The nodes the pods were bound to (`spec.nodeName`), any phase, de-duplicated and sorted (CRE's
    `nodemonitor.DiscoverPlacedNodesForJob`)."""
    return tuple(sorted({p.spec.node_name for p in pods if p.spec.node_name}))


def failed_nodes(state: JobState, group: str, message: str, pods: Sequence[Pod] = ()) -> dict[str, Any]:
    """`failedNodes` for a Failed verdict of the Job tier, or nothing: only while the Job has none (first
    attribution wins). The nodes: the group-nodes annotation's, else where `pods` were placed (CRE's
    `groupNodeNames`). The entries' reason is `WorkloadFailed` whatever the verdict's (the CRD's enum:
    "the workload exited non-zero, stalled, or otherwise failed"), the message the verdict's."""
    nodes = group_nodes(state, group) or placed_nodes(pods)
    if state.job.status.failed_nodes or not nodes:
        return {}
    return {"failedNodes": [{"name": n, "reason": Reason.WORKLOAD_FAILED.value, "message": message} for n in nodes]}
