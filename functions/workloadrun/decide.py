"""WorkloadRuns become TrainingRuntimes and Jobs, their Jobs' states mirrored back: the `workloadrun`
function's decision (SPEC §5, §7; the conditions: `functions.workloadrun.run_conditions`). Pure.

`decide(observed, settings, now)`, on what `functions.workloadrun.read` read: a managed, non-terminal
run translated into objects creates those missing, in order (config ConfigMap, checkpoint PVC,
TrainingRuntime, then the Job), each refused create failing the run `BuildFailed`, then
`InProgress`/`WorkflowCreated`; an object of its name not controlled by the run fails it
`ObjectConflict`, an invalid spec `InvalidSpec`. Once the run has its Job, a missing Job is
`Failed`/`WorkflowDeleted`, nothing is created again. A mirror writes the run's exclusive conditions
for its Job's state (and its `ValidationFailed` when the Job's is True). A terminal WorkloadRun is never written again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from events.emitted import ConditionSummary
from events.types import RunReason
from functions.domain.conditions import (
    EXCLUSIVE,
    condition,
    decide_conditions,
    decide_independent,
    is_terminal,
    true_exclusive,
)
from functions.domain.jobs import Skipped, is_managed
from functions.domain.kubeevents import run_event
from functions.runtime.effects import Create, Effect, WriteStatus
from functions.runtime.errors import one_line
from functions.runtime.plan import Plan, nothing
from functions.runtime.resources import CONFIGMAPS, PVCS, TRAINING_RUNTIMES, Resource, cre_jobs, cre_workloadruns
from functions.runtime.settings import Settings
from functions.workloadrun.run_conditions import created, deleted

FUNCTION = "workloadrun"


@dataclass(frozen=True)
class Mirror:
    """The run that owns a Job, read fresh, and its condition for its Job's state (`WorkflowDeleted` for
    a deleted Job); `validation`: the message of the Job's `ValidationFailed` when it is True."""

    where: str
    run: dict[str, Any]
    condition: ConditionSummary
    validation: str | None = None


@dataclass(frozen=True)
class Invalid:
    """The run read fresh, whose spec does not translate."""

    where: str
    run: dict[str, Any]
    error: str


@dataclass(frozen=True)
class Translated:
    """The run read fresh, what it translates into in creation order (the Job last) and the object of
    each one's name, as read (None: free)."""

    where: str
    run: dict[str, Any]
    objects: tuple[dict[str, Any], ...]
    existing: tuple[dict[str, Any] | None, ...]
    detected: tuple[tuple[str, str], ...] = ()
    """The hardware CRE's Workflow would detect, as the run's status fields (`functions.domain.placement`)."""


Observed = Skipped | Mirror | Invalid | Translated


def resource_for(kind: str, group: str) -> Resource:
    return {"ConfigMap": CONFIGMAPS, "PersistentVolumeClaim": PVCS, "TrainingRuntime": TRAINING_RUNTIMES,
            "Job": cre_jobs(group)}[kind]


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    if isinstance(observed, Skipped):
        return nothing(observed.why)
    where, raw = observed.where, observed.run
    if isinstance(observed, Mirror):
        cond = observed.condition
        writes = run_conditions(raw, cond, now, settings, observed.validation)
        return Plan(writes, reason=f"{where}: {cond.type}/{cond.reason}" + ("" if writes else " (already so)"))
    if not is_managed((raw.get("metadata") or {}).get("labels") or {}, settings):
        return nothing(f"{where} is not managed")
    conditions = (raw.get("status") or {}).get("conditions") or []
    if is_terminal(conditions):
        return nothing(f"{where} is terminal")
    if isinstance(observed, Invalid):
        return failed(raw, RunReason.INVALID_SPEC, observed.error, f"{where}: invalid spec: {observed.error}",
                      now, settings)
    return decide_build(observed, conditions, settings, now)


def decide_build(observed: Translated, conditions: list[dict[str, Any]], settings: Settings, now: datetime) -> Plan:
    """The creates of what the run translates into and is missing, then its `WorkflowCreated`."""
    where, raw = observed.where, observed.run
    if true_exclusive(conditions) is not None and observed.existing[-1] is None:
        return Plan(run_conditions(raw, deleted(), now, settings),
                    reason=f"{where}: its Job was deleted; it is not created again")
    if settings.observe:
        return nothing(f"observe mode: {where} would create {len(observed.objects)} objects")
    owner_uid = raw["metadata"].get("uid")
    creates: list[Effect] = []
    for obj, existing in zip(observed.objects, observed.existing, strict=True):
        meta = obj["metadata"]
        if existing is None:
            creates.append(Create(resource_for(obj["kind"], settings.cre_group), meta["namespace"], obj,
                                  refused=BuildFailed(raw, obj["kind"], meta["name"], now, settings)))
            continue
        owners = [o.get("uid") for o in (existing.get("metadata") or {}).get("ownerReferences") or []
                  if o.get("controller")]
        if owner_uid not in owners:
            message = f"{obj['kind']} {meta['name']} already exists and is not owned by this WorkloadRun"
            return failed(raw, RunReason.OBJECT_CONFLICT, message, f"{where}: {message}", now, settings)
    if true_exclusive(conditions) is None:  # CRE's run names the hardware its Workflow detected
        creates += run_conditions(raw, created(raw["metadata"]["name"]), now, settings, extra=dict(observed.detected))
    return Plan(tuple(creates), reason=f"{where}: {sum(isinstance(e, Create) for e in creates)} objects created")


def failed(raw: dict[str, Any], reason: str, message: str, why: str, now: datetime, settings: Settings) -> Plan:
    return Plan(run_conditions(raw, condition("Failed", reason, message), now, settings), reason=why)


@dataclass(frozen=True)
class BuildFailed:
    """A generated object the API refused (its CRD's schema or rules, admission): the run cannot be built."""

    run: dict[str, Any]
    kind: str
    name: str
    now: datetime
    settings: Settings

    def follow(self, error: str) -> tuple[Effect, ...]:
        message = f"{self.kind} {self.name} was refused: {one_line(error)}"
        return run_conditions(self.run, condition("Failed", RunReason.BUILD_FAILED, message), self.now, self.settings)


def run_conditions(raw: dict[str, Any], chosen: ConditionSummary, now: datetime, settings: Settings,
                   validation: str | None = None, extra: dict[str, Any] | None = None) -> tuple[Effect, ...]:
    """The write of the WorkloadRun's exclusive conditions, siblings `Superseded`, and with a `validation`
    message its `ValidationFailed` True / `ThresholdViolation` in the same write (CRE mirrors it before the
    terminal condition), then the run's Event when the True type flips (`run_event`); none on a terminal run or
    when nothing would change."""
    conditions = (raw.get("status") or {}).get("conditions") or []
    if chosen.type not in EXCLUSIVE or is_terminal(conditions):
        return ()
    meta = raw["metadata"]
    generation = int(meta.get("generation", 0))
    new = decide_conditions(conditions, generation, chosen, now, sibling_reason=RunReason.SUPERSEDED)
    if validation is not None:
        new = decide_independent(new or conditions, generation, "ValidationFailed", True,
                                 RunReason.THRESHOLD_VIOLATION, validation, now) or new
    if new is None:
        return ()
    write = WriteStatus(cre_workloadruns(settings.cre_group), meta["namespace"], meta["name"],
                        str(meta.get("resourceVersion", "")), {"conditions": new, **(extra or {})})
    before = true_exclusive(conditions)
    if before is not None and before.type == chosen.type:
        return (write,)
    return write, run_event(raw, chosen, now, FUNCTION)
