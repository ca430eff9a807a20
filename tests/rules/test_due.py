"""Which clock-driven checks a resync tick asks for (`functions.rules.due`), as a truth table: node
health while a non-terminal Job with a CEL check has a workload, validation while a succeeded Job with
thresholds has no verdict yet."""

from __future__ import annotations

from typing import Any

import pytest

from functions.rules.due import due_on_tick
from tests.support.helpers import cond, job

CEL = {"nodeHealthMonitor": {"cel": {"expression": "node.spec.unschedulable == true"}}}
THRESHOLDS = {"thresholds": {"busBandwidthGBps": "value >= 400"}}
RUNNING = [cond("InProgress", "True", "WorkloadRunning", "running")]
SUCCEEDED = [cond("InProgress", "False", "Succeeded", "done"), cond("Succeeded", "True", "WorkloadSucceeded", "done")]
FAILED = [cond("Failed", "True", "WorkloadFailed", "failed")]
VERDICT = [*SUCCEEDED, cond("ValidationFailed", "False", "ThresholdsMet", "All performance thresholds satisfied")]


@pytest.mark.parametrize(("spec", "conditions", "workload", "due"), [
    pytest.param(CEL, RUNNING, True, ["nodehealth"], id="nodes-of-a-running-workload"),
    pytest.param(CEL, RUNNING, False, [], id="nodes-no-workload-yet"),
    pytest.param({}, RUNNING, True, [], id="nodes-no-monitor"),
    pytest.param({"nodeHealthMonitor": {}}, RUNNING, True, [], id="nodes-monitor-without-cel"),
    pytest.param({"nodeHealthMonitor": {"cel": {"expression": "  "}}}, RUNNING, True, [], id="nodes-blank-expression"),
    pytest.param(CEL, FAILED, True, [], id="nodes-failed-job"),
    pytest.param(CEL, SUCCEEDED, True, [], id="nodes-succeeded-job"),
    pytest.param(THRESHOLDS, SUCCEEDED, True, ["validation"], id="validation-succeeded"),
    pytest.param(THRESHOLDS, SUCCEEDED, False, ["validation"], id="validation-without-workload-ref"),
    pytest.param(THRESHOLDS, VERDICT, True, [], id="validation-verdict-written"),
    pytest.param(THRESHOLDS, RUNNING, True, [], id="validation-still-running"),
    pytest.param(THRESHOLDS, FAILED, True, [], id="validation-failed-job"),
    pytest.param({}, SUCCEEDED, True, [], id="validation-no-thresholds"),
    pytest.param({**CEL, **THRESHOLDS}, SUCCEEDED, True, ["validation"], id="succeeded-with-both"),
])
def test_due_on_tick(spec: dict[str, Any], conditions: list[dict[str, Any]], workload: bool, due: list[str]) -> None:
    assert due_on_tick(job(conditions, workload_ref=workload, spec=spec)) == due
