"""A succeeded Job's thresholds → its `ValidationFailed` condition: the `validate` function's decision
(CRE's `checkPerformanceThresholds`; the thresholds' rules: `functions.domain.thresholds`). Pure.

`decide(observed, settings, now)`, on what `functions.validate.read` read: for a managed Job awaiting
validation, the thresholds' verdict, or a wait (202, the next tick checks again). A verdict is one
status write of `ValidationFailed` with no terminal guard (the Job stays Succeeded), on the read
resourceVersion; on True, while the Job has no `failedNodes`, the nodes of its group-nodes annotation (else
those its attempt's pods were bound to, CRE's `groupNodeNames`) each get an entry with reason
`ThresholdViolation` and the verdict's message. Its Kubernetes Event: a
Warning on the flip to True, a Normal `ThresholdsMet` on the False write. The reply is
`dev.crefn.job.validation`. Delivered again after that write (`restate_wanted`, `functions.domain.redelivery`), the
event makes good the Event and the reply, read off the stored condition; its `time` stands for `observedAt`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from events.emitted import FailedNode, JobRef, JobValidationData
from events.envelope import Envelope, Outbound, to_outbound
from events.objects import Pod
from events.types import EventType, Reason
from functions.domain.cel import CelOutcome
from functions.domain.condition_writes import group_nodes, independent_write, placed_nodes
from functions.domain.due import awaiting_validation
from functions.domain.jobs import Gone, JobState, Skipped, why_not_ours
from functions.domain.kubeevents import condition_name, job_event
from functions.domain.redelivery import Announced, announce_again, transition_time
from functions.domain.thresholds import (
    Verdict,
    Waiting,
    decide_validation,
    measured_values,
    measurement_timeout,
    succeeded_at,
)
from functions.runtime.plan import Plan, nothing
from functions.runtime.settings import Settings
from functions.validate.wants import CONDITION, wants_placed_nodes

FUNCTION = "validate"


@dataclass(frozen=True)
class Found:
    """The Job read fresh and, while it awaits validation with keys all known, the measurements of its
    namespace its keys need and each threshold's outcome on its measured value, by key (once every key
    has one); `pods`: its attempt's pods, read only when the verdict's failed nodes need them
    (`wants_placed_nodes`), else None."""

    cause: Envelope
    job: JobRef
    state: JobState
    goodput: tuple[dict[str, Any], ...] = ()
    bandwidth: tuple[dict[str, Any], ...] = ()
    outcomes: Mapping[str, CelOutcome] = field(default_factory=dict)
    pods: tuple[Pod, ...] | None = None
    announced: Announced | None = None
    """The Event of the Job's `ValidationFailed`, read when the event may be the one that decided it, delivered
    again (`restate_wanted`)."""


Observed = Skipped | Gone | Found


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    if isinstance(observed, Skipped):
        return nothing(observed.why)
    if isinstance(observed, Gone):
        return nothing(observed.why)
    state = observed.state
    if why := why_not_ours(state, observed.job, settings):
        return nothing(why)
    if observed.announced is not None:
        return restated(state, observed.announced.event, observed.cause, now)
    if not awaiting_validation(state):
        return nothing(f"{state.where} is not awaiting validation" + (
            "" if state.job.spec.thresholds else " (no thresholds)"))
    verdict = verdict_of(state, observed.goodput, observed.bandwidth, observed.outcomes, settings, now)
    if isinstance(verdict, Waiting):
        return nothing(f"{state.where}: {verdict.message}")
    if observed.pods is None and wants_placed_nodes(state, verdict, settings):
        # the read saw no verdict yet (its clock an instant earlier): the next check reads the pods
        return nothing(f"{state.where}: {verdict.reason} found without its pods read; decided on the next check")
    nodes = list(state.job.status.failed_nodes)  # the first attribution wins
    extra: dict[str, Any] = {}
    if verdict.failed and not nodes:
        nodes = [FailedNode(name=n, reason=Reason.THRESHOLD_VIOLATION, message=verdict.message)
                 for n in group_nodes(state, settings.cre_group) or placed_nodes(observed.pods or ())]
        if nodes:
            extra["failedNodes"] = [n.model_dump(by_alias=True) for n in nodes]
    write = independent_write(state, CONDITION, verdict.failed, verdict.reason, verdict.message, now,
                              settings.cre_group, FUNCTION, extra, normal_event=True, cause=observed.cause.id)
    assert write is not None  # the Job has no ValidationFailed condition: writing one is a change
    return Plan(write.effects, reply=validation(state, verdict.failed, verdict.reason, verdict.message, nodes,
                                                observed.cause),
                reason=f"{state.where}: {CONDITION}={'True' if verdict.failed else 'False'}/{verdict.reason}")


def validation(state: JobState, failed: bool, reason: str, message: str, nodes: Sequence[FailedNode],
               cause: Envelope) -> Outbound:
    """`dev.crefn.job.validation` for a verdict, with the Job's failedNodes after its write."""
    data = JobValidationData(job=state.ref, failed=failed, reason=reason, message=message, failed_nodes=list(nodes))
    return to_outbound(EventType.JOB_VALIDATION, FUNCTION, state.ref.namespace, state.ref.name, data, cause)


def restated(state: JobState, announced: Mapping[str, Any] | None, cause: Envelope, now: datetime) -> Plan:
    """The verdict's Event (when missing) and its `dev.crefn.job.validation` again, read off the stored Job."""
    cond = next(c for c in state.conditions if c.get("type") == CONDITION)
    failed, reason = cond.get("status") == "True", str(cond.get("reason") or "")
    message = str(cond.get("message") or "")
    event = job_event(state, condition_name(state, CONDITION, reason), reason, message, failed, now, FUNCTION,
                      cause.id)
    return announce_again(state, f"{CONDITION}={'True' if failed else 'False'}/{reason}", announced, event, cause,
                          validation(state, failed, reason, message, state.job.status.failed_nodes, cause),
                          transition_time(state, CONDITION), now)


def verdict_of(state: JobState, goodput: tuple[dict[str, Any], ...], bandwidth: tuple[dict[str, Any], ...],
               outcomes: Mapping[str, CelOutcome], settings: Settings, now: datetime) -> Verdict | Waiting:
    """The thresholds' verdict on what was read (a Job awaiting validation), or the wait for measurements."""
    spec = state.job.spec
    measured = measured_values(state.ref.name, state.job.metadata.uid, goodput, bandwidth, settings.cre_group)
    return decide_validation(spec.thresholds, measured, succeeded_at(state.conditions),
                             measurement_timeout(spec.measurement_timeout), now, outcomes)


