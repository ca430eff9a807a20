"""Which clock-driven checks a Job is due on a resync tick (`dev.crefn.job.check`). Pure.

- `nodehealth`: a non-terminal Job with `spec.nodeHealthMonitor.cel` and a workload (CRE evaluates its
  nodes on every reconcile while the Job is not Succeeded or Failed);
- `validation`: a Succeeded Job with `spec.thresholds` and no `ValidationFailed` condition yet (CRE's
  "awaiting validation": measurements may arrive after the success, until `measurementTimeout`);
- `measurements`: a Job whose measurements CRE ensures on every reconcile (`reconcileWorkload`): a
  non-terminal one with a workload and a `goodputMeasurement` or `bandwidthMeasurement`, and, for its
  BandwidthMeasurement only, a Succeeded one awaiting validation (`ensured_measurements`).
"""

from __future__ import annotations

from typing import Literal

from events.emitted import JobCheckData
from functions.domain.jobs import JobState

Check = Literal["nodehealth", "validation", "measurements"]
Measurement = Literal["goodput", "bandwidth"]


def monitors_nodes(state: JobState) -> bool:
    monitor = state.job.spec.node_health_monitor
    return monitor is not None and monitor.cel is not None and bool(monitor.cel.expression.strip())


def awaiting_validation(state: JobState) -> bool:
    true = state.true_condition
    return (bool(state.job.spec.thresholds) and true is not None and true.type == "Succeeded"
            and not any(c.get("type") == "ValidationFailed" for c in state.conditions))


def ensured_measurements(state: JobState) -> tuple[Measurement, ...]:
    """The measurements CRE ensures for the Job as it is: those its spec asks for while it runs with a
    workload recorded; the BandwidthMeasurement alone while it awaits validation; none otherwise."""
    spec = state.job.spec
    if state.job.status.workload_ref is None:
        return ()
    if not state.terminal:
        return (*(("goodput",) if spec.goodput_measurement is not None else ()),
                *(("bandwidth",) if spec.bandwidth_measurement is not None else ()))
    return ("bandwidth",) if spec.bandwidth_measurement is not None and awaiting_validation(state) else ()


def due_on_tick(state: JobState) -> list[Check]:
    due: list[Check] = []
    if monitors_nodes(state) and not state.terminal and state.job.status.workload_ref is not None:
        due.append("nodehealth")
    if awaiting_validation(state):
        due.append("validation")
    if ensured_measurements(state):
        due.append("measurements")
    return due


def not_asked(check: JobCheckData, wanted: Check) -> str:
    """Why a function that does the `wanted` check has nothing to do for the event ("" when it is asked)."""
    if wanted in check.checks:
        return ""
    return (f"the check of Job {check.job.namespace}/{check.job.name} does not ask for {wanted} "
            f"({', '.join(check.checks) or 'none'})")
