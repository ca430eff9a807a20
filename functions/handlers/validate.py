"""`validate`: a succeeded Job's performance thresholds → its `ValidationFailed` condition (CRE's
`checkPerformanceThresholds`).

Triggered by `job.condition.changed` to `Succeeded` (right after the success) and by the resync tick's
`dev.crefn.job.check` naming `validation`, every tick while a managed Job awaits validation: measurements
often complete after the Job does, and the measurement timeout runs with no object changing. read: the Job
fresh; while it awaits validation with its keys all known, the namespace's GoodputMeasurements and
BandwidthMeasurements (the kinds its keys need) and, once every key has a value, each threshold's outcome,
evaluated in a worker process within `CREFN_CEL_BUDGET_SECONDS` (`functions.celbudget`); the attempt's pods
only for a failed verdict that needs their nodes (no failedNodes, no group-nodes annotation). decide:
`functions.rules.validate.decide`; the answer goes to `alert` and to `workloadrun` (the run's mirror). A Job
validated already that the event may have decided, delivered again (`rules.restate_wanted`): its verdict's Event.
"""

from __future__ import annotations

from typing import Any

from events.emitted import JobCheckData, JobConditionChangedData
from events.envelope import Envelope, InvalidEvent, parse_data
from events.types import EventType
from functions.apply import run
from functions.context import Context
from functions.plan import Outcome
from functions.reads import read_first_event, read_job, read_measurements, read_pods
from functions.rules import validate as rules
from functions.rules.cel import CelOutcome
from functions.rules.due import awaiting_validation, not_asked
from functions.rules.jobs import Gone, why_not_ours
from functions.rules.redelivery import Announced
from functions.rules.thresholds import BANDWIDTH_KEYS, GOODPUT_KEYS, measured_values, to_evaluate, unknown_keys
from functions.rules.validate import Found, Observed, Skipped, decide, verdict_of, wants_placed_nodes

FUNCTION = rules.FUNCTION
ACCEPTS = frozenset({EventType.JOB_CHECK.value, EventType.JOB_CONDITION_CHANGED.value})


def read(env: Envelope, ctx: Context) -> Observed:
    if env.type == EventType.JOB_CHECK:
        check = parse_data(env, JobCheckData)
        if why := not_asked(check, "validation"):
            return Skipped(env, check.job, why)
        ref = check.job
    elif env.type == EventType.JOB_CONDITION_CHANGED:
        changed = parse_data(env, JobConditionChangedData)
        if changed.new.type != "Succeeded":
            return Skipped(env, changed.job, f"Job {changed.job.namespace}/{changed.job.name} "
                                             f"became {changed.new.type}, not Succeeded")
        ref = changed.job
    else:
        raise InvalidEvent(f"unknown event type {env.type!r} for this function")
    state = read_job(ctx, ref.namespace, ref.name)
    if state is None:
        return Gone(ref)
    if not awaiting_validation(state):
        names = () if ctx.settings.observe or why_not_ours(state, ref, ctx.settings) \
            else rules.restate_wanted(state, env, ctx.clock())
        announced = Announced(read_first_event(ctx, ref.namespace, names)) if names else None
        return Found(env, ref, state, announced=announced)
    goodput: tuple[dict[str, Any], ...] = ()
    bandwidth: tuple[dict[str, Any], ...] = ()
    outcomes: dict[str, CelOutcome] = {}
    if not unknown_keys(state.job.spec.thresholds):
        keys = set(state.job.spec.thresholds)
        goodputs, bandwidths = read_measurements(ctx, ref.namespace, bool(keys & set(GOODPUT_KEYS)),
                                                 bool(keys & set(BANDWIDTH_KEYS)))
        goodput, bandwidth = tuple(goodputs), tuple(bandwidths)
        measured = measured_values(ref.name, state.job.metadata.uid, goodput, bandwidth, ctx.settings.cre_group)
        outcomes = {key: ctx.cel.outcomes("value", expression, (value,))[0]
                    for key, expression, value in to_evaluate(state.job.spec.thresholds, measured)}
    verdict = verdict_of(state, goodput, bandwidth, outcomes, ctx.settings, ctx.clock())
    pods = read_pods(ctx, state) if wants_placed_nodes(state, verdict, ctx.settings) else None
    return Found(env, ref, state, goodput, bandwidth, outcomes, pods)


def handle(env: Envelope, ctx: Context) -> Outcome:
    return run(ctx, lambda: read(env, ctx), decide)
