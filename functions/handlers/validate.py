"""`validate`: a succeeded Job's performance thresholds → its `ValidationFailed` condition (CRE's
`checkPerformanceThresholds`).

Triggered by `job.condition.changed` to `Succeeded` (the first look, right after the success) and by
the resync tick's `dev.crefn.job.check` naming `validation`, sent every tick for a managed Job awaiting
validation: measurements often complete after the Job does (CRE's measurement controllers write them),
and the measurement timeout runs with no object changing. read: the Job fresh; while it awaits
validation and its keys are all known, the GoodputMeasurements and BandwidthMeasurements of its
namespace (only the kinds its keys need) and, once every key has a value, each threshold's outcome on
it, evaluated in a worker process within `CREFN_CEL_BUDGET_SECONDS` (`functions.celbudget`; past it
the expression is invalid). decide: `functions.rules.validate.decide`; the answer goes to `alert` and
to `workloadrun`, which mirrors it onto the Job's WorkloadRun.
"""

from __future__ import annotations

from events.emitted import JobCheckData, JobConditionChangedData
from events.envelope import Envelope, InvalidEvent, parse_data
from events.types import EventType
from functions.apply import run
from functions.context import Context
from functions.plan import Outcome
from functions.reads import read_job, read_measurements
from functions.rules import validate as rules
from functions.rules.due import awaiting_validation, not_asked
from functions.rules.jobs import Gone
from functions.rules.thresholds import BANDWIDTH_KEYS, GOODPUT_KEYS, measured_values, to_evaluate, unknown_keys
from functions.rules.validate import Found, Observed, Skipped, decide

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
    if not awaiting_validation(state) or unknown_keys(state.job.spec.thresholds):
        return Found(env, ref, state)
    keys = set(state.job.spec.thresholds)
    goodput, bandwidth = read_measurements(ctx, ref.namespace, bool(keys & set(GOODPUT_KEYS)),
                                           bool(keys & set(BANDWIDTH_KEYS)))
    measured = measured_values(ref.name, state.job.metadata.uid, goodput, bandwidth, ctx.settings.cre_group)
    outcomes = {key: ctx.cel.outcomes("value", expression, (value,))[0]
                for key, expression, value in to_evaluate(state.job.spec.thresholds, measured)}
    return Found(env, ref, state, tuple(goodput), tuple(bandwidth), outcomes)


def handle(env: Envelope, ctx: Context) -> Outcome:
    return run(ctx, lambda: read(env, ctx), decide)
