"""`measurements`: `dev.crefn.workload.created` → the Job's GoodputMeasurement and BandwidthMeasurement exist
(CRE's `ensureGoodputMeasurement` / `ensureBandwidthMeasurement`).

read: nothing when the event says the Job asks for no measurement (`measurements: []`, from the Job launch
read; a forged one only skips work), else the Job fresh and, for a managed, non-terminal Job with its workload
recorded, a GET of `<job>-goodput` / `<job>-bandwidth` for each measurement its spec asks for. decide:
`functions.rules.ensure_measurements.decide`. An existing one is left as it is; a name taken between the read
and the create is a conflict, so the function reads again and finds it there. A refused create is answered 202
with its Warning Event, never retried. Observe mode creates nothing (CRE's own controller does).
"""

from __future__ import annotations

from events.emitted import WorkloadCreatedData
from events.envelope import Envelope, InvalidEvent, parse_data
from events.types import EventType
from functions.apply import run
from functions.context import Context
from functions.plan import Outcome
from functions.reads import measurement_exists, read_job
from functions.rules import ensure_measurements as rules
from functions.rules.ensure_measurements import Found, Observed, Unasked, decide
from functions.rules.jobs import Gone, is_managed

FUNCTION = rules.FUNCTION
ACCEPTS = frozenset({EventType.WORKLOAD_CREATED.value})


def read(env: Envelope, ctx: Context) -> Observed:
    if env.type != EventType.WORKLOAD_CREATED:
        raise InvalidEvent(f"unknown event type {env.type!r} for this function")
    data = parse_data(env, WorkloadCreatedData)
    if data.measurements == []:  # said by launch, from the Job it read; absent (None) from earlier releases
        return Unasked(f"Job {data.job.namespace}/{data.job.name} asks for no measurement")
    state = read_job(ctx, data.job.namespace, data.job.name)
    if state is None:
        return Gone(data.job)
    if state.terminal or state.job.status.workload_ref is None or not is_managed(state.job.metadata.labels,
                                                                                  ctx.settings):
        return Found(env, data, state)  # nothing more to read: decide says why
    spec = state.job.spec
    goodput = spec.goodput_measurement is not None and measurement_exists(ctx, state, bandwidth=False)
    bandwidth = spec.bandwidth_measurement is not None and measurement_exists(ctx, state, bandwidth=True)
    return Found(env, data, state, goodput, bandwidth)


def handle(env: Envelope, ctx: Context) -> Outcome:
    return run(ctx, lambda: read(env, ctx), decide)
