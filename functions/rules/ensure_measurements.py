"""Ensuring a Job's measurements exist: the `measurements` function's decision. Pure. (Named apart from
`functions.rules.measurements`, which knows the measurement objects themselves.)

`decide(observed, settings, now)`, on what `functions.handlers.measurements` read: for a managed,
non-terminal Job with its workload recorded (CRE ensures them once `workloadRef` is set), a create of
each of `<job>-goodput` and `<job>-bandwidth` its spec asks for and the read did not find, in that
order. A create the API refuses is not fatal, as in CRE: its Warning Event `MeasurementCreationError`
(`functions.rules.kubeevents.RefusalWarning`) and the creates still to come follow it, so a refused
GoodputMeasurement never keeps the BandwidthMeasurement from being created. Observe mode: nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from events.emitted import WorkloadCreatedData
from events.envelope import Envelope
from events.types import Reason
from functions.plan import Create, Effect, Plan, nothing
from functions.resources import Resource, cre_goodput
from functions.rules.jobs import Gone, JobState, why_not_active
from functions.rules.kubeevents import RefusalWarning
from functions.rules.measurements import bandwidth_body, bandwidth_measurements, goodput_body
from functions.settings import Settings

FUNCTION = "measurements"


@dataclass(frozen=True)
class Found:
    """The Job read fresh and, for an active Job with its workload recorded, whether each measurement
    its spec asks for exists (not read otherwise: False)."""

    cause: Envelope
    data: WorkloadCreatedData
    state: JobState
    goodput_exists: bool = False
    bandwidth_exists: bool = False


@dataclass(frozen=True)
class Unasked:
    """Nothing read: the event says the Job's spec asks for no measurement (a forged one only skips work)."""

    why: str


Observed = Gone | Found | Unasked


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    if isinstance(observed, Gone | Unasked):
        return nothing(observed.why)
    state = observed.state
    if why := why_not_active(state, observed.data.job, settings):
        return nothing(why)
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
