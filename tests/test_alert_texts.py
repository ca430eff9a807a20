"""Every alert the rules build, whole, against a golden file (tests/golden/alerts.json): labels, summary,
description, startsAt and endsAt are what a responder reads in Slack, PagerDuty and Alertmanager, so a
changed word or a lost expiry shows up here. After an intended change of a text, regenerate the file
with `UPDATE_GOLDEN=1 pytest tests/test_alert_texts.py` and read the diff."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from events.emitted import AlertData, FailureInfo, JobHardwareFailedData, JobRestartedData, JobValidationData
from functions.rules.alerting import (
    Restated,
    on_condition_changed,
    on_hardware_failed,
    on_job_deleted,
    on_job_state,
    on_restarted,
    on_validation,
)
from tests.support.helpers import cond, job
from tests.test_alerting import NOW, OLD, RUNNING, WINDOW, ago, changed, exclusive

GOLDEN = Path(__file__).parent / "golden" / "alerts.json"
UPDATE = bool(os.environ.get("UPDATE_GOLDEN"))
OOM = FailureInfo(pod_name="llm-workload-node-1-0", node_name="gpu-node-17", exit_code=137, reason="OOMKilled")
NODES = {"failedNodes": [{"name": "gpu-3", "reason": "HardwareFailureDetected"},
                         {"name": "gpu-4", "reason": "HardwareFailureDetected"},
                         {"name": "gpu-5", "reason": "WorkloadFailed"}]}


def hardware(nodes: list[str], action: str) -> JobHardwareFailedData:
    return JobHardwareFailedData.model_validate({
        "job": {"name": "llm", "namespace": "ml"}, "nodes": nodes, "action": action,
        "message": f"Hardware failure detected on node(s): {nodes}",
        "failedNodes": [{"name": n, "reason": "HardwareFailureDetected"} for n in nodes]})


def validation(failed: bool, nodes: list[str]) -> JobValidationData:
    return JobValidationData.model_validate({
        "job": {"name": "llm", "namespace": "ml"}, "failed": failed,
        "reason": "ThresholdViolated" if failed else "ThresholdsMet",
        "message": 'Threshold "goodputRatio" violated: measured 0.5000, expression: value >= 0.9',
        "failedNodes": [{"name": n, "reason": "ThresholdViolated"} for n in nodes]})


def restarted(failure: FailureInfo | None) -> JobRestartedData:
    return JobRestartedData.model_validate({
        "job": {"name": "llm", "namespace": "ml"}, "attempt": 2, "maxRestarts": 3, "notBefore": NOW.isoformat(),
        "previousWorkload": {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                             "name": "llm-workload-1", "namespace": "ml", "attempt": 1},
        "failure": failure.model_dump(by_alias=True) if failure else None})


def deleted(status: dict[str, Any], spec: dict[str, Any] | None = None,
            meta: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "llm", "namespace": "ml"} if meta is None else meta, "status": status,
            "spec": spec or {}}


FAILED = [{"type": "Failed", "status": "True", "reason": "WorkloadFailed"}]
BLOCKED = changed("InProgress", "WorkloadSchedulingBlocked", message="0/3 nodes are available")

CASES: dict[str, Callable[[], list[AlertData]]] = {
    "changed-failed": lambda: on_condition_changed(changed("Failed", "WorkloadFailed"), None, NOW),
    "changed-failed-no-message": lambda: on_condition_changed(changed("Failed", "WorkloadFailed", message=""), 2, NOW),
    "changed-exhausted-oom": lambda: on_condition_changed(
        changed("Failed", "WorkloadFailed", restarts=2).model_copy(update={"failure": OOM}), 2, NOW),
    "changed-failure-log-only": lambda: on_condition_changed(changed("Failed", "WorkloadFailed").model_copy(
        update={"failure": FailureInfo(pod_name="", node_name="", exit_code=0, reason="PodNotFound")}), 1, NOW),
    "changed-failed-no-nodes-no-workload": lambda: on_condition_changed(changed("Failed", "JobTimedOut").model_copy(
        update={"failed_nodes": [], "workload": None}), 1, NOW),
    "changed-succeeded-after-restart": lambda: on_condition_changed(
        changed("Succeeded", "WorkloadCompleted", restarts=1), 2, NOW),
    "changed-blocked": lambda: on_condition_changed(BLOCKED, 2, NOW),
    "changed-unblocked": lambda: on_condition_changed(
        changed("InProgress", "WorkloadRunning").model_copy(update={"previous": BLOCKED.new}), 2, NOW),
    "hardware-restart": lambda: on_hardware_failed(hardware(["gpu-3", "gpu-4"], "restart"), NOW),
    "hardware-report-no-nodes": lambda: on_hardware_failed(hardware([], "report"), NOW),
    "validation-failed": lambda: on_validation(validation(True, ["gpu-1", "gpu-2"]), NOW),
    "validation-failed-no-nodes": lambda: on_validation(validation(True, []), NOW),
    "validation-passed": lambda: on_validation(validation(False, []), NOW),
    "restarted": lambda: on_restarted(restarted(None), NOW),
    "restarted-oom": lambda: on_restarted(restarted(OOM), NOW),
    "deleted-exhausted": lambda: on_job_deleted(deleted(
        {"conditions": FAILED, "restartCount": 2}, {"checkpoint": {"pvcName": "p", "maxRestarts": 2}}), NOW),
    "deleted-restarted-no-checkpoint": lambda: on_job_deleted(deleted({"conditions": FAILED, "restartCount": 1}), NOW),
    "deleted-blocked": lambda: on_job_deleted(deleted({"conditions": [
        {"type": "InProgress", "status": "True", "reason": "WorkloadSchedulingBlocked"}]}), NOW),
    "deleted-verdicts": lambda: on_job_deleted(deleted({"conditions": [
        {"type": "Succeeded", "status": "True", "reason": "WorkloadCompleted"},
        {"type": "HardwareFailed", "status": "True", "reason": "HardwareFailureDetected"},
        {"type": "ValidationFailed", "status": "True", "reason": "ThresholdViolated"}]}), NOW),
    "deleted-without-metadata": lambda: on_job_deleted(deleted({"conditions": FAILED}, meta={}), NOW),
    "state-failed-oom": lambda: on_job_state(job(
        exclusive("Failed", "WorkloadFailed", message="boom"), checkpoint={"pvcName": "p", "maxRestarts": 2},
        restart_count=2, workload_ref=True, status={"failureLog": OOM.model_dump(by_alias=True), **NODES}),
        NOW, WINDOW, False),
    "state-failed-without-workload": lambda: on_job_state(job(exclusive("Failed", "WorkloadFailed")), NOW, WINDOW,
                                                          False),
    "state-failed-90-days-ago": lambda: on_job_state(job(exclusive("Failed", "WorkloadFailed", ago(90 * 86400))),
                                                     NOW, WINDOW, False),
    "state-blocked-condition-later-than-grace": lambda: on_job_state(job(
        exclusive("InProgress", "WorkloadSchedulingBlocked", ago(20)), status={"schedulingBlockedSince": ago(400)}),
        NOW, WINDOW, False),
    "state-blocked-grace-later-than-condition": lambda: on_job_state(job(
        exclusive("InProgress", "WorkloadSchedulingBlocked", OLD), status={"schedulingBlockedSince": ago(320)}),
        NOW, WINDOW, False),
    "state-blocked-no-times": lambda: on_job_state(job(
        [{"type": "InProgress", "status": "True", "reason": "WorkloadSchedulingBlocked", "message": "m"}]),
        NOW, WINDOW, False),
    "state-hardware-and-validation": lambda: on_job_state(job(
        [*exclusive("Succeeded", "WorkloadCompleted", OLD),
         cond("HardwareFailed", "True", "HardwareFailureDetected", "nodes unhealthy", ltt=ago(10)),
         cond("ValidationFailed", "True", "ThresholdViolated", "goodput low", ltt=ago(10))], status=NODES),
        NOW, WINDOW, False),
    "state-hardware-no-nodes": lambda: on_job_state(job(
        [*RUNNING, cond("HardwareFailed", "True", "HardwareFailureDetected", "unhealthy", ltt=ago(10))]),
        NOW, WINDOW, False),
    "state-left": lambda: on_job_state(job(
        [*exclusive("Succeeded", "WorkloadCompleted", ago(5)), cond("HardwareFailed", "False", "NodesHealthy",
                                                                   ltt=ago(5))],
        restart_count=1, status={"schedulingBlockedSince": OLD}), NOW, WINDOW, False),
}


def dump(alerts: list[AlertData]) -> list[dict[str, Any]]:
    return [{"restated": isinstance(a, Restated), **a.model_dump(mode="json", by_alias=True)} for a in alerts]


def test_the_golden_file_has_every_case_and_no_other() -> None:
    assert UPDATE or sorted(json.loads(GOLDEN.read_text())) == sorted(CASES)


@pytest.mark.parametrize("case", sorted(CASES))
def test_alert_texts(case: str) -> None:
    built = dump(CASES[case]())
    golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    if UPDATE:
        golden[case] = built
        GOLDEN.write_text(json.dumps(dict(sorted(golden.items())), indent=1, ensure_ascii=False) + "\n")
    assert built == golden[case]


def test_a_state_whose_alert_expired_says_nothing() -> None:
    """Ninety days after the Failed transition the alert's endsAt is now: it is not restated."""
    assert on_job_state(job(exclusive("Failed", "WorkloadFailed", ago(90 * 86400))), NOW, WINDOW, False) == []
    (alert,) = on_job_state(job(exclusive("Failed", "WorkloadFailed", ago(90 * 86400 - 1))), NOW, WINDOW, False)
    assert alert.ends_at == NOW + timedelta(seconds=1)
