"""A WorkloadRun's conditions, as CRE's WorkloadRun controller writes them (SPEC §5 `workloadrun`).

Exclusive `InProgress`/`Succeeded`/`Failed` (the other two False with reason `Superseded`), from the
state of the one Job the run created, in the words of the Workflow CRE would have run it in (one group, one
iteration): `WorkflowCreated` (`Workflow <run> created`, kept while it runs), `WorkflowSucceeded` (`Workflow
completed successfully`), and for a failed or threshold-missing Job `1 groups failed across 1 iterations` (with
`; hardware failures occurred on one or more nodes` when the Job is `HardwareFailed`), reason
`WorkflowValidationFailed` for a threshold miss without hardware failure, else `WorkflowFailed`; a Job awaiting
its thresholds' verdict keeps the run `InProgress`; `WorkflowDeleted` (never created again); the project's own
`InvalidSpec`, `BuildFailed` and `ObjectConflict`. A Job's `ValidationFailed` True is also the run's independent
`ValidationFailed`/`ThresholdViolation` `One or more Jobs failed performance threshold validation`.
Each condition's texts: docs/functions.md#workloadruns-torch-mpi-exec
"""

from __future__ import annotations

from typing import Any

from events.emitted import ConditionSummary
from events.types import RunReason
from functions.domain.conditions import condition, true_exclusive

WORKFLOW_DELETED = "Workflow was deleted"
WORKFLOW_SUCCEEDED = "Workflow completed successfully"
GROUP_FAILED = "1 groups failed across 1 iterations"
"""CRE's Workflow `setFinalStatus` for one failed group of one iteration (`%d groups failed across %d iterations`)."""
HARDWARE_FAILURES = "; hardware failures occurred on one or more nodes"
THRESHOLD_VIOLATION = "One or more Jobs failed performance threshold validation"


def created(run: str) -> ConditionSummary:
    return condition("InProgress", RunReason.WORKFLOW_CREATED, f"Workflow {run} created")


def deleted() -> ConditionSummary:
    return condition("Failed", RunReason.WORKFLOW_DELETED, WORKFLOW_DELETED)


def is_true(job_conditions: list[dict[str, Any]], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True" for c in job_conditions)


def validation_message(job_conditions: list[dict[str, Any]]) -> str | None:
    """The message of the run's own `ValidationFailed` (CRE's `ThresholdViolation`, the Workflow's words); None
    while the Job's `ValidationFailed` is not True."""
    return THRESHOLD_VIOLATION if is_true(job_conditions, "ValidationFailed") else None


def mirrored(run: str, job_conditions: list[dict[str, Any]],
             awaiting_validation: bool = False) -> ConditionSummary | None:
    """The WorkloadRun's condition for its Job's conditions (None: nothing to mirror yet);
    `awaiting_validation`: the Job succeeded and its thresholds have no verdict yet."""
    validation, hardware = is_true(job_conditions, "ValidationFailed"), is_true(job_conditions, "HardwareFailed")
    cond = true_exclusive(job_conditions)
    if validation or (cond is not None and cond.type == "Failed"):
        reason = RunReason.WORKFLOW_VALIDATION_FAILED if validation and not hardware else RunReason.WORKFLOW_FAILED
        return condition("Failed", reason, GROUP_FAILED + (HARDWARE_FAILURES if hardware else ""))
    if cond is None:
        return None
    if cond.type == "Succeeded" and not awaiting_validation:
        return condition("Succeeded", RunReason.WORKFLOW_SUCCEEDED, WORKFLOW_SUCCEEDED)
    return created(run)
