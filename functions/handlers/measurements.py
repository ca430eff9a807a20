"""`measurements`: `dev.crefn.workload.created` → the Job's GoodputMeasurement and BandwidthMeasurement
exist (CRE's `ensureGoodputMeasurement` / `ensureBandwidthMeasurement`, `functions.rules.measurements`).

read: the Job fresh and, for each measurement its spec asks for, a GET of `<job>-goodput` /
`<job>-bandwidth`. decide: for a managed, non-terminal Job with its workload recorded (CRE ensures the
measurements once `workloadRef` is set), a create of each missing one. An existing one is left as it
is; a name taken between the read and the create is a conflict, so the function reads again and
finds it there. A create the API refuses (admission, quota, validation) is not fatal, as in CRE: a
Warning Event `MeasurementCreationError` `Failed to ensure GoodputMeasurement: failed to create
GoodputMeasurement: <the API's message>` (BandwidthMeasurement alike; once per attempt and distinct
message) and the answer 202, never a retry. The plan is GoodputMeasurement then BandwidthMeasurement,
and the effects a refused create gives (what is applied instead of the rest of the plan) are its
Event followed by the creates still to come, so a refused GoodputMeasurement never keeps the
BandwidthMeasurement from being created. Observe mode creates nothing (CRE's own controller does).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from events.emitted import WorkloadCreatedData
from events.envelope import Envelope, InvalidEvent, parse_data
from events.types import EventType, Reason
from functions.apply import run
from functions.context import Context
from functions.plan import Create, Effect, Outcome, Plan, nothing
from functions.reads import read_job
from functions.resources import Resource, cre_goodput
from functions.rules.jobs import JobState, is_managed, why_not_active
from functions.rules.kubeevents import RefusalWarning
from functions.rules.measurements import (
    bandwidth_body,
    bandwidth_measurements,
    bandwidth_name,
    goodput_body,
    goodput_name,
)
from functions.settings import Settings

FUNCTION = "measurements"
ACCEPTS = frozenset({EventType.WORKLOAD_CREATED.value})


@dataclass(frozen=True)
class Observed:
    cause: Envelope
    data: WorkloadCreatedData
    state: JobState | None
    goodput_exists: bool = False
    bandwidth_exists: bool = False


def read(env: Envelope, ctx: Context) -> Observed:
    if env.type != EventType.WORKLOAD_CREATED:
        raise InvalidEvent(f"unknown event type {env.type!r} for this function")
    data = parse_data(env, WorkloadCreatedData)
    state = read_job(ctx, data.job.namespace, data.job.name)
    if state is None or state.terminal or state.job.status.workload_ref is None \
            or not is_managed(state.job.metadata.labels, ctx.settings):
        return Observed(env, data, state)  # nothing to read: decide says why
    group, spec, ns = ctx.settings.cre_group, state.job.spec, state.ref.namespace
    goodput = spec.goodput_measurement is not None and \
        ctx.gateway.get(cre_goodput(group), ns, goodput_name(state.ref.name)) is not None
    bandwidth = spec.bandwidth_measurement is not None and \
        ctx.gateway.get(bandwidth_measurements(group), ns, bandwidth_name(state.ref.name)) is not None
    return Observed(env, data, state, goodput, bandwidth)


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    state = observed.state
    if why := why_not_active(state, observed.data.job, settings):
        return nothing(why)
    assert state is not None
    if state.job.status.workload_ref is None:
        return nothing(f"{state.where} has no workload recorded")
    group, spec = settings.cre_group, state.job.spec
    missing: list[tuple[Resource, dict[str, Any]]] = []
    if spec.goodput_measurement is not None and not observed.goodput_exists:
        missing.append((cre_goodput(group), goodput_body(state, group, spec.goodput_measurement)))
    if spec.bandwidth_measurement is not None and not observed.bandwidth_exists:
        missing.append((bandwidth_measurements(group), bandwidth_body(state, group, spec.bandwidth_measurement)))
    if not missing:
        return nothing(f"{state.where}: its measurements exist")
    names = ", ".join(f"{res.kind} {body['metadata']['name']}" for res, body in missing)
    if settings.observe:
        return nothing(f"observe mode: would create {names}")
    return Plan(creates(state, missing, now), reason=f"{state.where}: created {names}")


def creates(state: JobState, missing: list[tuple[Resource, dict[str, Any]]], now: datetime) -> tuple[Effect, ...]:
    """The creates in order, each refused one followed by its Event and the creates after it."""
    if not missing:
        return ()
    (res, body), rest = missing[0], creates(state, missing[1:], now)
    return (Create(res, state.ref.namespace, body, refused=RefusalWarning(
        state, Reason.MEASUREMENT_CREATION_ERROR, f"Failed to ensure {res.kind}: failed to create {res.kind}: ", now,
        FUNCTION, then=rest)), *rest)


def handle(env: Envelope, ctx: Context) -> Outcome:
    return run(ctx, lambda: read(env, ctx), decide)
