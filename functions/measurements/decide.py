"""Ensuring a Job's measurements exist: the `measurements` function's decision. Pure. (Named apart from
`functions.domain.measurement_objects`, which knows the measurement objects themselves.)

`decide(observed, settings, now)`: for a managed Job, a create of each measurement CRE's
`reconcileWorkload` ensures for it as it is (`functions.domain.due.ensured_measurements`) that the read
did not find, goodput first. A BandwidthMeasurement of the name made for another Job uid (an earlier
Job of the same name) is replaced: deleted with a uid precondition, then created (CRE's
`ensureBandwidthMeasurement`); one without the annotation is kept. A refused create is not fatal, as
in CRE: its Warning Event `MeasurementCreationError` (`functions.domain.kubeevents.RefusalWarning`)
and the effects still to come follow it; for a Succeeded Job awaiting its thresholds' BandwidthMeasurement, CRE
only logs the refusal, and so does the answer here. Observe mode: nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from events.emitted import JobRef
from events.envelope import Envelope
from events.types import Reason
from functions.domain.due import ensured_measurements
from functions.domain.jobs import Gone, JobState, Skipped, why_not_ours
from functions.domain.kubeevents import RefusalWarning
from functions.domain.measurement_objects import bandwidth_body, bandwidth_measurements, goodput_body, job_uid_of
from functions.runtime.effects import Create, Delete, Effect
from functions.runtime.plan import Plan, nothing
from functions.runtime.resources import Resource, cre_goodput
from functions.runtime.settings import Settings

FUNCTION = "measurements"


@dataclass(frozen=True)
class Found:
    """The Job read fresh and, for the measurements ensured for it (`ensured_measurements`), whether
    `<job>-goodput` exists and the object named `<job>-bandwidth` (not read otherwise: False, None)."""

    cause: Envelope
    job: JobRef
    state: JobState
    goodput_exists: bool = False
    bandwidth: Mapping[str, Any] | None = None


Observed = Skipped | Gone | Found


@dataclass(frozen=True)
class Missing:
    """A measurement to create, after the delete of the one it replaces (when it replaces one)."""

    res: Resource
    body: dict[str, Any]
    replaces: Delete | None = None


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    if isinstance(observed, Skipped | Gone):
        return nothing(observed.why)
    state = observed.state
    if why := why_not_ours(state, observed.job, settings):
        return nothing(why)
    ensured = ensured_measurements(state)
    if not ensured:
        return nothing(why_none(state))
    group, spec, uid = settings.cre_group, state.job.spec, state.job.metadata.uid
    missing: list[Missing] = []
    if "goodput" in ensured and spec.goodput_measurement is not None and not observed.goodput_exists:
        missing.append(Missing(cre_goodput(group), goodput_body(state, group, spec.goodput_measurement)))
    found, replaced = observed.bandwidth, ""
    if "bandwidth" in ensured and spec.bandwidth_measurement is not None:
        body = bandwidth_body(state, group, spec.bandwidth_measurement)
        if found is None:
            missing.append(Missing(bandwidth_measurements(group), body))
        elif (earlier := job_uid_of(found, group)) not in (None, uid):
            meta = found.get("metadata") or {}
            replaced = f" (replacing the one of an earlier Job, uid {earlier})"
            missing.append(Missing(bandwidth_measurements(group), body, Delete(
                bandwidth_measurements(group), state.ref.namespace, str(meta.get("name")), str(meta.get("uid") or ""))))
    if not missing:
        return nothing(f"{state.where}: its measurements exist")
    names = ", ".join(f"{m.res.kind} {m.body['metadata']['name']}" for m in missing)
    if settings.observe:
        return nothing(f"observe mode: would create {names}{replaced}")
    return Plan(creates(state, missing, now), reason=f"{state.where}: created {names}{replaced}")


def why_none(state: JobState) -> str:
    if state.terminal:
        return f"{state.where} is terminal" + (" (its BandwidthMeasurement is ensured only while it awaits "
                                                "validation)" if state.job.spec.bandwidth_measurement else "")
    if state.job.status.workload_ref is None:
        return f"{state.where} has no workload recorded"
    return f"{state.where} asks for no measurement"


def creates(state: JobState, missing: list[Missing], now: datetime) -> tuple[Effect, ...]:
    """The creates in order, each after the delete it needs, each refused one followed by its Event and
    the effects after it."""
    if not missing:
        return ()
    first, rest = missing[0], creates(state, missing[1:], now)
    kind = first.res.kind
    create = Create(first.res, state.ref.namespace, first.body, refused=RefusalWarning(
        state, Reason.MEASUREMENT_CREATION_ERROR, f"Failed to ensure {kind}: failed to create {kind}: ", now,
        FUNCTION, then=rest, recorded=not state.terminal))  # a Succeeded Job awaiting thresholds: CRE only logs
    return (*((first.replaces,) if first.replaces else ()), create, *rest)
