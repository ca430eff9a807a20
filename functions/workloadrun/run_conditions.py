"""A WorkloadRun's conditions, as CRE's WorkloadRun controller writes them (SPEC §5 `workloadrun`).

Exclusive `InProgress`/`Succeeded`/`Failed` (the other two False with reason `Superseded`), from the
state of the one Job the run created: `WorkflowCreated` (`Workflow <run> created`, kept while it runs),
`WorkflowSucceeded`, `WorkflowFailed`, `WorkflowValidationFailed` (checked first; a Job awaiting its
thresholds' verdict keeps the run `InProgress`), `WorkflowDeleted` (never created again); the project's
own `InvalidSpec`, `BuildFailed` and `ObjectConflict`. The Job's `ValidationFailed` True is also mirrored
as the run's independent `ValidationFailed`/`ThresholdViolation` with the Job's message.
Each condition's texts: docs/functions.md#workloadruns-torch-mpi-exec
"""

from __future__ import annotations

from typing import Any

from events.emitted import ConditionSummary
from events.types import RunReason
from functions.domain.conditions import condition, true_exclusive

WORKFLOW_DELETED = "Workflow was deleted"
WORKFLOW_SUCCEEDED = "Workflow completed successfully"


def created(run: str) -> ConditionSummary:
    return condition("InProgress", RunReason.WORKFLOW_CREATED, f"Workflow {run} created")


def deleted() -> ConditionSummary:
    return condition("Failed", RunReason.WORKFLOW_DELETED, WORKFLOW_DELETED)


def failed_validation(job_conditions: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The Job's `ValidationFailed` condition when it is True."""
    return next((c for c in job_conditions if c.get("type") == "ValidationFailed" and c.get("status") == "True"),
                None)


def validation_message(job_conditions: list[dict[str, Any]]) -> str | None:
    """The message of the run's own `ValidationFailed` (CRE's `ThresholdViolation`: the message as the Job
    has it); None while the Job's `ValidationFailed` is not True."""
    validation = failed_validation(job_conditions)
    return None if validation is None else str(validation.get("message") or "")


def mirrored(run: str, job: str, job_conditions: list[dict[str, Any]],
             awaiting_validation: bool = False) -> ConditionSummary | None:
    """The WorkloadRun's condition for its Job's conditions (None: nothing to mirror yet);
    `awaiting_validation`: the Job succeeded and its thresholds have no verdict yet."""
    validation = failed_validation(job_conditions)
    if validation is not None:
        return condition("Failed", RunReason.WORKFLOW_VALIDATION_FAILED,
                         validation.get("message") or validation.get("reason") or "thresholds not met")
    cond = true_exclusive(job_conditions)
    if cond is None:
        return None
    if cond.type == "Succeeded" and not awaiting_validation:
        return condition("Succeeded", RunReason.WORKFLOW_SUCCEEDED, WORKFLOW_SUCCEEDED)
    if cond.type == "Failed":
        return condition("Failed", RunReason.WORKFLOW_FAILED, f"Job {job} failed: {cond.reason}: {cond.message}")
    return created(run)
