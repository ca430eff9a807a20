"""Shared data of the alert tests (SPEC §8): the clock, and the decision events the `alert` function receives.
Jobs by their conditions: tests.support.alertjobs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from events.emitted import JobConditionChangedData, JobHardwareFailedData, JobRestartedData, JobValidationData
from tests.support.helpers import EARLIER

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
WINDOW = timedelta(seconds=90)


def ago(seconds: float) -> str:
    return (NOW - timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


FRESH, OLD = ago(30), EARLIER  # within the window; two hours before NOW


def changed(new_type: str, reason: str, restarts: int = 0, message: str = "boom") -> JobConditionChangedData:
    return JobConditionChangedData.model_validate({
        "job": {"name": "llm", "namespace": "ns"}, "new": {"type": new_type, "reason": reason, "message": message},
        "restartCount": restarts, "failedNodes": [{"name": "gpu-7", "reason": "WorkloadFailed"}],
        "workload": {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "llm-workload",
                     "namespace": "ns", "attempt": restarts}})


def restarted(attempt: int = 1) -> JobRestartedData:
    return JobRestartedData.model_validate({
        "job": {"name": "llm", "namespace": "ns"}, "attempt": attempt, "maxRestarts": 3, "notBefore": NOW.isoformat(),
        "previousWorkload": {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                             "name": "llm-workload", "namespace": "ns", "attempt": attempt - 1},
        "failure": {"podName": "made-up", "nodeName": "made-up", "exitCode": 1, "reason": "MadeUp"}})


def hardware() -> JobHardwareFailedData:
    return JobHardwareFailedData.model_validate({
        "job": {"name": "llm", "namespace": "ns"}, "nodes": ["gpu-3"], "action": "report",
        "message": "Hardware failure detected on node(s): [gpu-3]"})


def validation(failed: bool) -> JobValidationData:
    return JobValidationData.model_validate({
        "job": {"name": "llm", "namespace": "ns"}, "failed": failed,
        "reason": "ThresholdViolated" if failed else "ThresholdsMet", "message": "goodput low"})


def unblocked() -> JobConditionChangedData:
    return changed("InProgress", "WorkloadRunning").model_copy(update={
        "previous": changed("InProgress", "WorkloadSchedulingBlocked").new})
