"""Every alert the rules build, whole, against a golden file (tests/golden/alerts.json): labels, summary,
description, startsAt and endsAt are what a responder reads in Slack, PagerDuty and Alertmanager, so a
changed word or a lost expiry shows up here. After an intended change of a text, regenerate the file
with `UPDATE_GOLDEN=1 pytest tests/domain/test_alerts_texts.py` and read the diff."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from events.emitted import AlertData, FailureInfo
from functions.domain.alerts import Restated, on_job_deleted, on_job_state
from functions.domain.claims import Decision, claimed, on_decision
from functions.domain.jobs import JobState
from tests.support import paths
from tests.support.alertjobs import CHECKPOINT, GRACE_END, RESTARTING, RUNNING, exclusive
from tests.support.alerts import NOW, OLD, WINDOW, ago, changed, hardware, restarted, unblocked, validation
from tests.support.helpers import cond, job

GOLDEN = paths.GOLDEN / "alerts.json"
UPDATE = bool(os.environ.get("UPDATE_GOLDEN"))
OOM = FailureInfo(pod_name="llm-workload-node-1-0", node_name="gpu-node-17", exit_code=137, reason="OOMKilled")
NODES = {"failedNodes": [{"name": "gpu-3", "reason": "HardwareFailureDetected"},
                         {"name": "gpu-4", "reason": "HardwareFailureDetected"},
                         {"name": "gpu-5", "reason": "WorkloadFailed"}]}
THRESHOLD_NODES = {"failedNodes": [{"name": "gpu-1", "reason": "ThresholdViolation"},
                                   {"name": "gpu-2", "reason": "ThresholdViolation"}]}
FAILED_ON = {"failedNodes": [{"name": "gpu-7", "reason": "WorkloadFailed"}]}
VIOLATED = 'Threshold "goodputRatio" violated: measured 0.5000, expression: value >= 0.9'


def decided(event: Decision, stored: JobState) -> list[AlertData]:
    return on_decision(stored, claimed(event, stored), NOW)


def deleted(status: dict[str, Any], spec: dict[str, Any] | None = None,
            meta: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "llm", "namespace": "ml"} if meta is None else meta, "status": status,
            "spec": spec or {}}


FAILED = [{"type": "Failed", "status": "True", "reason": "WorkloadFailed"}]
SUCCEEDED_EARLIER = exclusive("Succeeded", "WorkloadCompleted", OLD)

CASES: dict[str, Callable[[], list[AlertData]]] = {
    "decided-failed": lambda: decided(changed("Failed", "WorkloadFailed"), job(
        exclusive("Failed", "WorkloadFailed", message="boom"), workload_ref=True, status=FAILED_ON)),
    "decided-failed-no-message": lambda: decided(changed("Failed", "WorkloadFailed"), job(
        exclusive("Failed", "WorkloadFailed", message=""), checkpoint={"pvcName": "p", "maxRestarts": 2},
        workload_ref=True, status=FAILED_ON)),
    "decided-exhausted-oom": lambda: decided(changed("Failed", "WorkloadFailed", restarts=2), job(
        exclusive("Failed", "WorkloadFailed", message="boom"), checkpoint={"pvcName": "p", "maxRestarts": 2},
        restart_count=2, workload_ref=True, status={**FAILED_ON, "failureLog": OOM.model_dump(by_alias=True)})),
    "decided-failure-log-only": lambda: decided(changed("Failed", "WorkloadFailed"), job(
        exclusive("Failed", "WorkloadFailed", message="boom"), checkpoint={"pvcName": "p", "maxRestarts": 1},
        workload_ref=True, status={**FAILED_ON, "failureLog": FailureInfo(
            pod_name="", node_name="", exit_code=0, reason="PodNotFound").model_dump(by_alias=True)})),
    "decided-failed-no-nodes-no-workload": lambda: decided(changed("Failed", "JobTimedOut"), job(
        exclusive("Failed", "JobTimedOut", message="Job exceeded timeoutPerJob"),
        checkpoint={"pvcName": "p", "maxRestarts": 1})),
    "decided-succeeded-after-restart": lambda: decided(changed("Succeeded", "WorkloadCompleted", restarts=1), job(
        exclusive("Succeeded", "WorkloadCompleted"), checkpoint=CHECKPOINT, restart_count=1)),
    "decided-blocked": lambda: decided(changed("InProgress", "WorkloadSchedulingBlocked"), job(
        exclusive("InProgress", "WorkloadSchedulingBlocked", OLD, "Workload pods are unschedulable: 0/3 nodes are "
                  "available"), status={"schedulingBlockedSince": ago(400)})),
    "decided-unblocked": lambda: decided(unblocked(), job(RUNNING, status={"schedulingResumedTime": ago(10)})),
    "decided-hardware": lambda: decided(hardware(), job(
        [*RUNNING, cond("HardwareFailed", "True", "HardwareFailureDetected",
                        "Hardware failure detected on node(s): [gpu-3 gpu-4]", ltt=ago(10))], status=NODES)),
    "decided-hardware-no-nodes": lambda: decided(hardware(), job(
        [*RUNNING, cond("HardwareFailed", "True", "HardwareFailureDetected", "unhealthy", ltt=ago(10))])),
    "decided-validation-failed": lambda: decided(validation(True), job(
        [*SUCCEEDED_EARLIER, cond("ValidationFailed", "True", "ThresholdViolated", VIOLATED, ltt=ago(10))],
        status=THRESHOLD_NODES)),
    "decided-validation-failed-no-nodes": lambda: decided(validation(True), job(
        [*SUCCEEDED_EARLIER, cond("ValidationFailed", "True", "ThresholdViolated", VIOLATED, ltt=ago(10))])),
    "decided-validation-passed": lambda: decided(validation(False), job(
        [*SUCCEEDED_EARLIER, cond("ValidationFailed", "False", "ThresholdsMet", "All performance thresholds "
                                  "satisfied", ltt=ago(10))])),
    "decided-restarted": lambda: decided(restarted(2), job(
        RESTARTING, checkpoint=CHECKPOINT, restart_count=2, annotations=GRACE_END)),
    "decided-restarted-no-grace-recorded": lambda: decided(restarted(1), job(
        RESTARTING, checkpoint=CHECKPOINT, restart_count=1)),
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
