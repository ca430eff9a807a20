"""A WorkloadRun's condition from its Job's (`functions.workloadrun.run_conditions`), as a table."""

from __future__ import annotations

from typing import Any

import pytest

from functions.workloadrun.run_conditions import created, deleted, mirrored, validation_message


def cond(type_: str, status: str = "True", reason: str = "R", message: str = "m") -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": message}


@pytest.mark.parametrize(("job_conditions", "expected"), [
    ([], None),
    ([cond("InProgress", reason="WorkloadRunning", message="Workload TrainJob/x is running")],
     ("InProgress", "WorkflowCreated", "Workflow run created")),
    ([cond("Succeeded", reason="WorkloadCompleted")],
     ("Succeeded", "WorkflowSucceeded", "Workflow completed successfully")),
    ([cond("Failed", reason="WorkloadFailed", message="boom")], ("Failed", "WorkflowFailed",
                                                                 "Job llm failed: WorkloadFailed: boom")),
    ([cond("Succeeded"), cond("ValidationFailed", reason="ThresholdViolation", message="Threshold \"k\" violated")],
     ("Failed", "WorkflowValidationFailed", "Threshold \"k\" violated")),
    ([cond("Succeeded"), cond("ValidationFailed", status="False", reason="ThresholdsMet")],
     ("Succeeded", "WorkflowSucceeded", "Workflow completed successfully")),
    ([cond("InProgress"), cond("Failed", reason="JobTimedOut", message="Job exceeded timeoutPerJob")],
     ("Failed", "WorkflowFailed", "Job llm failed: JobTimedOut: Job exceeded timeoutPerJob")),
    ([cond("InProgress", reason="WorkloadCreated", message="")],
     ("InProgress", "WorkflowCreated", "Workflow run created")),
    ([cond("InProgress", reason="", message="")], ("InProgress", "WorkflowCreated", "Workflow run created")),
    ([cond("InProgress", reason="WorkloadPending", message="queued in ClusterQueue GPU-X")],
     ("InProgress", "WorkflowCreated", "Workflow run created")),
    ([cond("InProgress", reason="WorkloadRestarting", message="Restarting workload from checkpoint (restart 1/3)")],
     ("InProgress", "WorkflowCreated", "Workflow run created")),
    ([cond("Succeeded"), cond("ValidationFailed", reason="ThresholdViolation", message="")],
     ("Failed", "WorkflowValidationFailed", "ThresholdViolation")),
    ([cond("Succeeded"), cond("ValidationFailed", reason="", message="")],
     ("Failed", "WorkflowValidationFailed", "thresholds not met")),
], ids=["nothing-yet", "running", "succeeded", "failed", "validation-failed", "thresholds-met",
        "dual-true-reads-failed", "progress-without-message", "progress-without-reason-or-message",
        "pending-keeps-created", "restarting-keeps-created",
        "validation-without-message", "validation-without-reason-or-message"])
def test_mirrored(job_conditions: list[dict[str, Any]], expected: tuple[str, str, str] | None) -> None:
    got = mirrored("run", "llm", job_conditions)
    assert (None if got is None else (got.type, got.reason, got.message)) == expected


def test_created_and_deleted() -> None:
    made, gone = created("r"), deleted()
    assert (made.type, made.reason, made.message) == ("InProgress", "WorkflowCreated", "Workflow r created")
    assert (gone.type, gone.reason, gone.message) == ("Failed", "WorkflowDeleted", "Workflow was deleted")


@pytest.mark.parametrize(("job_conditions", "expected"), [
    ([cond("Succeeded", reason="WorkloadCompleted", message="TrainJob completed")],
     ("InProgress", "WorkflowCreated", "Workflow run created")),
    ([cond("Succeeded"), cond("ValidationFailed", reason="MeasurementTimeout", message="Measurement data not "
                              "available within 5m0s for keys: [goodputRatio]")],
     ("Failed", "WorkflowValidationFailed", "Measurement data not available within 5m0s for keys: [goodputRatio]")),
    ([cond("Failed", reason="WorkloadFailed", message="boom")],
     ("Failed", "WorkflowFailed", "Job llm failed: WorkloadFailed: boom")),
], ids=["succeeded-awaiting-the-verdict-stays-in-progress", "verdict-wins", "failed-is-failed"])
def test_mirrored_while_awaiting_validation(job_conditions: list[dict[str, Any]],
                                            expected: tuple[str, str, str]) -> None:
    got = mirrored("run", "llm", job_conditions, awaiting_validation=True)
    assert got is not None and (got.type, got.reason, got.message) == expected


@pytest.mark.parametrize(("job_conditions", "expected"), [
    ([cond("Succeeded"), cond("ValidationFailed", reason="ThresholdViolated",
                              message='Threshold "goodputRatio" violated: measured 0.5000, expression: value >= 0.9')],
     'Threshold "goodputRatio" violated: measured 0.5000, expression: value >= 0.9'),
    ([cond("Succeeded"), cond("ValidationFailed", reason="ThresholdViolated", message="")], ""),
    ([cond("Succeeded"), cond("ValidationFailed", status="False", reason="ThresholdsMet")], None),
    ([cond("Succeeded")], None),
], ids=["violated", "violated-without-message", "thresholds-met", "no-verdict"])
def test_the_runs_own_validation_failed_message(job_conditions: list[dict[str, Any]], expected: str | None) -> None:
    """CRE's WorkloadRun controller mirrors the `ValidationFailed` True it sees, message as is."""
    assert validation_message(job_conditions) == expected
