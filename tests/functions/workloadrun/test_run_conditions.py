"""A WorkloadRun's condition from its Job's (`functions.workloadrun.run_conditions`), as a table."""

from __future__ import annotations

from typing import Any

import pytest

from functions.workloadrun.run_conditions import created, deleted, mirrored, validation_message

GROUP = "1 groups failed across 1 iterations"  # CRE's Workflow `setFinalStatus`, one group of one iteration


def cond(type_: str, status: str = "True", reason: str = "R", message: str = "m") -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": message}


@pytest.mark.parametrize(("job_conditions", "expected"), [
    ([], None),
    ([cond("InProgress", reason="WorkloadRunning", message="Workload TrainJob/x is running")],
     ("InProgress", "WorkflowCreated", "Workflow run created")),
    ([cond("Succeeded", reason="WorkloadCompleted")],
     ("Succeeded", "WorkflowSucceeded", "Workflow completed successfully")),
    ([cond("Failed", reason="WorkloadFailed", message="boom")], ("Failed", "WorkflowFailed", GROUP)),
    ([cond("Succeeded"), cond("ValidationFailed", reason="ThresholdViolation", message="Threshold \"k\" violated")],
     ("Failed", "WorkflowValidationFailed", GROUP)),
    ([cond("Succeeded"), cond("ValidationFailed", status="False", reason="ThresholdsMet")],
     ("Succeeded", "WorkflowSucceeded", "Workflow completed successfully")),
    ([cond("InProgress"), cond("Failed", reason="JobTimedOut", message="Job exceeded timeoutPerJob")],
     ("Failed", "WorkflowFailed", GROUP)),
    ([cond("InProgress", reason="WorkloadCreated", message="")],
     ("InProgress", "WorkflowCreated", "Workflow run created")),
    ([cond("InProgress", reason="", message="")], ("InProgress", "WorkflowCreated", "Workflow run created")),
    ([cond("InProgress", reason="WorkloadPending", message="queued in ClusterQueue GPU-X")],
     ("InProgress", "WorkflowCreated", "Workflow run created")),
    ([cond("InProgress", reason="WorkloadRestarting", message="Restarting workload from checkpoint (restart 1/3)")],
     ("InProgress", "WorkflowCreated", "Workflow run created")),
    ([cond("Failed", reason="HardwareFailureDetected"), cond("HardwareFailed", reason="HardwareFailureDetected")],
     ("Failed", "WorkflowFailed", GROUP + "; hardware failures occurred on one or more nodes")),
    ([cond("Failed"), cond("HardwareFailed"), cond("ValidationFailed", reason="ThresholdViolation")],
     ("Failed", "WorkflowFailed", GROUP + "; hardware failures occurred on one or more nodes")),
    ([cond("Failed"), cond("HardwareFailed", status="False")], ("Failed", "WorkflowFailed", GROUP)),
], ids=["nothing-yet", "running", "succeeded", "failed", "validation-failed", "thresholds-met",
        "dual-true-reads-failed", "progress-without-message", "progress-without-reason-or-message",
        "pending-keeps-created", "restarting-keeps-created", "hardware", "hardware-wins-over-validation",
        "hardware-false"])
def test_mirrored(job_conditions: list[dict[str, Any]], expected: tuple[str, str, str] | None) -> None:
    got = mirrored("run", job_conditions)
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
     ("Failed", "WorkflowValidationFailed", GROUP)),
    ([cond("Failed", reason="WorkloadFailed", message="boom")], ("Failed", "WorkflowFailed", GROUP)),
], ids=["succeeded-awaiting-the-verdict-stays-in-progress", "verdict-wins", "failed-is-failed"])
def test_mirrored_while_awaiting_validation(job_conditions: list[dict[str, Any]],
                                            expected: tuple[str, str, str]) -> None:
    got = mirrored("run", job_conditions, awaiting_validation=True)
    assert got is not None and (got.type, got.reason, got.message) == expected


@pytest.mark.parametrize(("job_conditions", "expected"), [
    ([cond("Succeeded"), cond("ValidationFailed", reason="ThresholdViolated",
                              message='Threshold "goodputRatio" violated: measured 0.5000, expression: value >= 0.9')],
     "One or more Jobs failed performance threshold validation"),
    ([cond("Succeeded"), cond("ValidationFailed", reason="ThresholdViolated", message="")],
     "One or more Jobs failed performance threshold validation"),
    ([cond("Succeeded"), cond("ValidationFailed", status="False", reason="ThresholdsMet")], None),
    ([cond("Succeeded")], None),
], ids=["violated", "violated-without-message", "thresholds-met", "no-verdict"])
def test_the_runs_own_validation_failed_message(job_conditions: list[dict[str, Any]], expected: str | None) -> None:
    """CRE's WorkloadRun controller mirrors the Workflow's `ValidationFailed`, whose message is the Workflow's own."""
    assert validation_message(job_conditions) == expected
