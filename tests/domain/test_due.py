"""Which clock-driven checks a resync tick asks for (`functions.domain.due`), as a truth table: node
health while a non-terminal Job with a CEL check has a workload, validation while a succeeded Job with
thresholds has no verdict yet, measurements while CRE's `reconcileWorkload` ensures them (a non-terminal
Job with a workload; the BandwidthMeasurement of a succeeded Job awaiting validation)."""

from __future__ import annotations

from typing import Any

import pytest

from functions.domain.due import due_on_tick, ensured_measurements
from tests.support.helpers import cond, job

CEL = {"nodeHealthMonitor": {"cel": {"expression": "node.spec.unschedulable == true"}}}
THRESHOLDS = {"thresholds": {"busBandwidthGBps": "value >= 400"}}
RUNNING = [cond("InProgress", "True", "WorkloadRunning", "running")]
SUCCEEDED = [cond("InProgress", "False", "Succeeded", "done"), cond("Succeeded", "True", "WorkloadSucceeded", "done")]
FAILED = [cond("Failed", "True", "WorkloadFailed", "failed")]
GOODPUT = {"goodputMeasurement": {"logProfileRef": "nemo"}}
BANDWIDTH = {"bandwidthMeasurement": {"logProfileRef": "nccl"}}
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
    pytest.param(GOODPUT, RUNNING, True, ["measurements"], id="measurements-running"),
    pytest.param(BANDWIDTH, [], True, ["measurements"], id="measurements-no-condition-yet"),
    pytest.param(GOODPUT, RUNNING, False, [], id="measurements-no-workload-yet"),
    pytest.param({}, RUNNING, True, [], id="measurements-none-asked"),
    pytest.param(GOODPUT, FAILED, True, [], id="measurements-failed-job"),
    pytest.param({**GOODPUT, **THRESHOLDS}, SUCCEEDED, True, ["validation"],
                 id="measurements-goodput-not-after-success"),
    pytest.param({**BANDWIDTH, **THRESHOLDS}, SUCCEEDED, True, ["validation", "measurements"],
                 id="measurements-bandwidth-awaiting-validation"),
    pytest.param({**BANDWIDTH, **THRESHOLDS}, VERDICT, True, [], id="measurements-bandwidth-verdict-written"),
    pytest.param(BANDWIDTH, SUCCEEDED, True, [], id="measurements-bandwidth-no-thresholds"),
    pytest.param({**CEL, **GOODPUT, **BANDWIDTH}, RUNNING, True, ["nodehealth", "measurements"], id="running-with-all"),
])
def test_due_on_tick(spec: dict[str, Any], conditions: list[dict[str, Any]], workload: bool, due: list[str]) -> None:
    assert due_on_tick(job(conditions, workload_ref=workload, spec=spec)) == due


@pytest.mark.parametrize(("spec", "conditions", "ensured"), [
    pytest.param({**GOODPUT, **BANDWIDTH}, RUNNING, ("goodput", "bandwidth"), id="running-both"),
    pytest.param(BANDWIDTH, RUNNING, ("bandwidth",), id="running-bandwidth"),
    pytest.param({**GOODPUT, **BANDWIDTH, **THRESHOLDS}, SUCCEEDED, ("bandwidth",), id="awaiting-bandwidth-only"),
    pytest.param({**GOODPUT, **BANDWIDTH, **THRESHOLDS}, FAILED, (), id="failed-none"),
])
def test_ensured_measurements(spec: dict[str, Any], conditions: list[dict[str, Any]], ensured: tuple[str, ...]) -> None:
    assert ensured_measurements(job(conditions, workload_ref=True, spec=spec)) == ensured
