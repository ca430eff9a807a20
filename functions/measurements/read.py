"""`measurements`: a Job's GoodputMeasurement and BandwidthMeasurement exist (CRE's
`ensureGoodputMeasurement` / `ensureBandwidthMeasurement`, run on every reconcile of the Job).

Triggered by `dev.crefn.workload.created` (the first look, right after the launch) and by the resync
tick's `dev.crefn.job.check` naming `measurements` (`functions.domain.due`), so a lost event or a
deleted measurement is repaired within a tick. read: the Job fresh and, for a managed Job whose
measurements are ensured as it is (`functions.domain.due.ensured_measurements`), a GET of
`<job>-goodput` / `<job>-bandwidth` for each. decide: `functions.measurements.decide.decide`. An
existing one is left as it is, but a BandwidthMeasurement left by an earlier Job of the same name is
replaced; a name taken between the read and the create is a conflict, so the function reads again
and finds it there. A refused create is answered 202 with its Warning Event, never retried (the next
tick tries again). Observe mode creates nothing. `workload.created` with `measurements: []` reads nothing.
"""

from __future__ import annotations

from events.emitted import JobCheckData, JobRef, WorkloadCreatedData
from events.envelope import Envelope, InvalidEvent, parse_data
from events.types import EventType
from functions.domain.due import ensured_measurements, not_asked
from functions.domain.jobs import Gone, Skipped, is_managed
from functions.measurements.decide import Found, Observed, decide
from functions.runtime.apply import run
from functions.runtime.context import Context
from functions.runtime.plan import Outcome
from functions.runtime.reads import goodput_exists, read_bandwidth, read_job

ACCEPTS = frozenset({EventType.WORKLOAD_CREATED.value, EventType.JOB_CHECK.value})


def read(env: Envelope, ctx: Context) -> Observed:
    if env.type == EventType.WORKLOAD_CREATED:
        data = parse_data(env, WorkloadCreatedData)
        ref: JobRef = data.job
        if data.measurements == []:  # said by launch, from the Job it read; absent (None) from earlier releases
            return Skipped(f"Job {ref.namespace}/{ref.name} asks for no measurement")
    elif env.type == EventType.JOB_CHECK:
        check = parse_data(env, JobCheckData)
        if why := not_asked(check, "measurements"):
            return Skipped(why)
        ref = check.job
    else:
        raise InvalidEvent(f"unknown event type {env.type!r} for this function")
    state = read_job(ctx, ref.namespace, ref.name)
    if state is None:
        return Gone(ref)
    ensured = ensured_measurements(state)
    if not ensured or not is_managed(state.job.metadata.labels, ctx.settings):
        return Found(env, ref, state)  # nothing more to read: decide says why
    goodput = "goodput" in ensured and goodput_exists(ctx, state)
    bandwidth = read_bandwidth(ctx, state) if "bandwidth" in ensured else None
    return Found(env, ref, state, goodput, bandwidth)


def handle(env: Envelope, ctx: Context) -> Outcome:
    return run(ctx, lambda: read(env, ctx), decide)
