"""Which clock-driven checks a Job is due on a resync tick (`dev.crefn.job.check`). Pure.

- `nodehealth`: a non-terminal Job with `spec.nodeHealthMonitor.cel` and a workload (CRE evaluates its
  nodes on every reconcile while the Job is not Succeeded or Failed);
- `validation`: a Succeeded Job with `spec.thresholds` and no `ValidationFailed` condition yet (CRE's
  "awaiting validation": measurements may arrive after the success, until `measurementTimeout`).
"""

from __future__ import annotations

from typing import Literal

from functions.rules.jobs import JobState

Check = Literal["nodehealth", "validation"]


def monitors_nodes(state: JobState) -> bool:
    monitor = state.job.spec.node_health_monitor
    return monitor is not None and monitor.cel is not None and bool(monitor.cel.expression.strip())


def awaiting_validation(state: JobState) -> bool:
    true = state.true_condition
    return (bool(state.job.spec.thresholds) and true is not None and true.type == "Succeeded"
            and not any(c.get("type") == "ValidationFailed" for c in state.conditions))


def due_on_tick(state: JobState) -> list[Check]:
    due: list[Check] = []
    if monitors_nodes(state) and not state.terminal and state.job.status.workload_ref is not None:
        due.append("nodehealth")
    if awaiting_validation(state):
        due.append("validation")
    return due
