"""`validate`: a succeeded Job's performance thresholds → its `ValidationFailed` condition (CRE's
`checkPerformanceThresholds`; the rules: `functions.rules.thresholds`).

Triggered by `job.condition.changed` to `Succeeded` (the first look, right after the success) and by
the resync tick's `dev.crefn.job.check` naming `validation`, which it sends every tick for a managed
Job awaiting validation (Succeeded, `spec.thresholds` set, no `ValidationFailed` yet): measurements
often complete after the Job does, and the measurement timeout runs with no object changing.

read: the Job fresh; while it awaits validation and its keys are all known, the GoodputMeasurements
and BandwidthMeasurements of its namespace (only the kinds its keys need), which the rules filter by
`spec.jobRef.name`, and, once every key has a value, each threshold's outcome on it: compiled and
evaluated in a worker process, each within `CREFN_CEL_BUDGET_SECONDS` (`functions.celbudget`; past
it the expression is invalid). decide: the thresholds' verdict, or a wait (202, the next tick checks again). A
verdict is one status write of `ValidationFailed` with no terminal guard (the Job stays Succeeded),
on the read resourceVersion (a conflict re-reads: a Job validated meanwhile is left alone); on True,
while the Job has no `failedNodes`, the nodes of its group-nodes annotation each get an entry with
reason `ThresholdViolation` and the verdict's message. Its Kubernetes Event: a Warning on the flip to
True, a Normal `ThresholdsMet` on the False write. The answer is `dev.crefn.job.validation` (to
`alert` and to `workloadrun`, which mirrors it onto the Job's WorkloadRun). A Job that is not
awaiting validation (no thresholds, not Succeeded, already validated, gone, not managed) is answered
202 and nothing is written.

The measurements are written by CRE's GoodputMeasurement and BandwidthMeasurement controllers; without
them a Job with thresholds ends `MeasurementTimeout` once its timeout has run out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from events.emitted import FailedNode, JobCheckData, JobConditionChangedData, JobRef, JobValidationData
from events.envelope import Envelope, InvalidEvent, parse_data, to_outbound
from events.types import CRE_VERSION, EventType, Reason
from functions.apply import run
from functions.context import Context
from functions.plan import Outcome, Plan, nothing
from functions.reads import read_job
from functions.resources import Resource, cre_goodput
from functions.rules.cel import CelOutcome
from functions.rules.checks import awaiting_validation
from functions.rules.jobs import JobState, why_not_ours
from functions.rules.thresholds import (
    BANDWIDTH_KEYS,
    GOODPUT_KEYS,
    Waiting,
    decide_validation,
    measured_values,
    measurement_timeout,
    succeeded_at,
    to_evaluate,
    unknown_keys,
)
from functions.rules.verdicts import group_nodes, independent_write
from functions.settings import Settings

FUNCTION = "validate"
ACCEPTS = frozenset({EventType.JOB_CHECK.value, EventType.JOB_CONDITION_CHANGED.value})
CONDITION = "ValidationFailed"


def cre_bandwidth(group: str) -> Resource:
    return Resource(group, CRE_VERSION, "bandwidthmeasurements", "BandwidthMeasurement")


@dataclass(frozen=True)
class Observed:
    cause: Envelope
    job: JobRef
    state: JobState | None = None
    goodput: tuple[dict[str, Any], ...] = ()
    bandwidth: tuple[dict[str, Any], ...] = ()
    skip: str = ""
    """Why the event asks for no validation (the Job is then not read)."""
    outcomes: Mapping[str, CelOutcome] = field(default_factory=dict)
    """Each threshold's outcome on its measured value, by key (once every key has one)."""


def read(env: Envelope, ctx: Context) -> Observed:
    if env.type == EventType.JOB_CHECK:
        check = parse_data(env, JobCheckData)
        if "validation" not in check.checks:
            return Observed(env, check.job, skip=f"the check of Job {check.job.namespace}/{check.job.name} "
                                                 f"is not a validation ({', '.join(check.checks) or 'none'})")
        ref = check.job
    elif env.type == EventType.JOB_CONDITION_CHANGED:
        changed = parse_data(env, JobConditionChangedData)
        if changed.new.type != "Succeeded":
            return Observed(env, changed.job, skip=f"Job {changed.job.namespace}/{changed.job.name} "
                                                   f"became {changed.new.type}, not Succeeded")
        ref = changed.job
    else:
        raise InvalidEvent(f"unknown event type {env.type!r} for this function")
    state = read_job(ctx, ref.namespace, ref.name)
    if state is None or not awaiting_validation(state) or unknown_keys(state.job.spec.thresholds):
        return Observed(env, ref, state)
    keys, group = set(state.job.spec.thresholds), ctx.settings.cre_group
    goodput = ctx.gateway.list_all(cre_goodput(group), ref.namespace) if keys & set(GOODPUT_KEYS) else []
    bandwidth = ctx.gateway.list_all(cre_bandwidth(group), ref.namespace) if keys & set(BANDWIDTH_KEYS) else []
    measured = measured_values(ref.name, goodput, bandwidth)
    outcomes = {key: ctx.cel.outcomes("value", expression, (value,))[0]
                for key, expression, value in to_evaluate(state.job.spec.thresholds, measured)}
    return Observed(env, ref, state, tuple(goodput), tuple(bandwidth), outcomes=outcomes)


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    if observed.skip:
        return nothing(observed.skip)
    state = observed.state
    if why := why_not_ours(state, observed.job, settings):
        return nothing(why)
    assert state is not None
    if not awaiting_validation(state):
        return nothing(f"{state.where} is not awaiting validation" + (
            "" if state.job.spec.thresholds else " (no thresholds)"))
    spec = state.job.spec
    verdict = decide_validation(spec.thresholds, measured_values(state.ref.name, observed.goodput, observed.bandwidth),
                                succeeded_at(state.conditions), measurement_timeout(spec.measurement_timeout), now,
                                observed.outcomes)
    if isinstance(verdict, Waiting):
        return nothing(f"{state.where}: {verdict.message}")
    nodes = list(state.job.status.failed_nodes)  # the first attribution wins
    extra: dict[str, Any] = {}
    if verdict.failed and not nodes:
        nodes = [FailedNode(name=n, reason=Reason.THRESHOLD_VIOLATION, message=verdict.message)
                 for n in group_nodes(state, settings.cre_group)]
        if nodes:
            extra["failedNodes"] = [n.model_dump(by_alias=True) for n in nodes]
    write = independent_write(state, CONDITION, verdict.failed, verdict.reason, verdict.message, now,
                              settings.cre_group, FUNCTION, extra, normal_event=True)
    assert write is not None  # the Job has no ValidationFailed condition: writing one is a change
    data = JobValidationData(job=state.ref, failed=verdict.failed, reason=verdict.reason, message=verdict.message,
                             failed_nodes=nodes)  # the Job's failedNodes after the write
    return Plan(write.effects, reply=to_outbound(EventType.JOB_VALIDATION, FUNCTION, state.ref.namespace,
                                                 state.ref.name, data, observed.cause),
                reason=f"{state.where}: {CONDITION}={'True' if verdict.failed else 'False'}/{verdict.reason}")


def handle(env: Envelope, ctx: Context) -> Outcome:
    return run(ctx, lambda: read(env, ctx), decide)
