"""`validate`: a succeeded Job's performance thresholds → its `ValidationFailed` condition (CRE's
`checkPerformanceThresholds`).

Triggered by `job.condition.changed` to `Succeeded` (right after the success) and by the resync tick's
`dev.crefn.job.check` naming `validation`, every tick while a managed Job awaits validation: measurements
often complete after the Job does, and the measurement timeout runs with no object changing. read: the Job
fresh; while it awaits validation with its keys all known, the namespace's GoodputMeasurements and
BandwidthMeasurements (the kinds its keys need) and, once every key has a value, each threshold's outcome,
evaluated in a worker process within `CREFN_CEL_BUDGET_SECONDS` (`functions.runtime.celbudget`); the attempt's pods
only for a failed verdict that needs their nodes (no failedNodes, no group-nodes annotation). decide:
`functions.validate.decide.decide`; the answer goes to `alert` and to `workloadrun` (the run's mirror). A Job
validated already that the event may have decided, delivered again (`wants.restate_wanted`): its verdict's Event.
"""

from __future__ import annotations

from typing import Any

from events.emitted import JobRef
from events.envelope import Envelope
from events.types import EventType
from functions.domain.cel import CelOutcome
from functions.domain.due import awaiting_validation
from functions.domain.jobs import Gone, JobState, Skipped, why_not_ours
from functions.domain.redelivery import Announced
from functions.domain.thresholds import BANDWIDTH_KEYS, GOODPUT_KEYS, measured_values, to_evaluate, unknown_keys
from functions.runtime.apply import run
from functions.runtime.context import Context
from functions.runtime.plan import Outcome
from functions.runtime.reads import read_first_event, read_job, read_measurements, read_pods
from functions.validate import wants
from functions.validate.decide import Found, Observed, decide, verdict_of

Measured = tuple[dict[str, Any], ...]
ACCEPTS = frozenset({EventType.JOB_CHECK.value, EventType.JOB_CONDITION_CHANGED.value})


def read(env: Envelope, ctx: Context) -> Observed:
    ref, why = wants.asked(env)
    if why:
        return Skipped(why)
    state = read_job(ctx, ref.namespace, ref.name)
    if state is None:
        return Gone(ref)
    if not awaiting_validation(state):
        return Found(env, ref, state, announced=announced(env, ctx, state, ref))
    goodput, bandwidth, outcomes = read_thresholds(ctx, state, ref)
    verdict = verdict_of(state, goodput, bandwidth, outcomes, ctx.settings, ctx.clock())
    pods = read_pods(ctx, state) if wants.wants_placed_nodes(state, verdict, ctx.settings) else None
    return Found(env, ref, state, goodput, bandwidth, outcomes, pods)


def announced(env: Envelope, ctx: Context, state: JobState, ref: JobRef) -> Announced | None:
    """The Event of a verdict the event may have decided, delivered again (`wants.restate_wanted`)."""
    names = () if ctx.settings.observe or why_not_ours(state, ref, ctx.settings) \
        else wants.restate_wanted(state, env, ctx.clock())
    return Announced(read_first_event(ctx, ref.namespace, names)) if names else None


def read_thresholds(ctx: Context, state: JobState, ref: JobRef) -> tuple[Measured, Measured, dict[str, CelOutcome]]:
    """The measurements of the Job's namespace its threshold keys need, and each threshold's outcome on its
    measured value, by key; nothing while a key is unknown."""
    if unknown_keys(state.job.spec.thresholds):
        return (), (), {}
    keys = set(state.job.spec.thresholds)
    goodputs, bandwidths = read_measurements(ctx, ref.namespace, bool(keys & set(GOODPUT_KEYS)),
                                             bool(keys & set(BANDWIDTH_KEYS)))
    goodput, bandwidth = tuple(goodputs), tuple(bandwidths)
    measured = measured_values(ref.name, state.job.metadata.uid, goodput, bandwidth, ctx.settings.cre_group)
    return goodput, bandwidth, {key: ctx.cel.outcomes("value", expression, (value,))[0]
                                for key, expression, value in to_evaluate(state.job.spec.thresholds, measured)}


def handle(env: Envelope, ctx: Context) -> Outcome:
    return run(ctx, lambda: read(env, ctx), decide)
