"""The Grafana dashboard as the monitoring install ships it (the ConfigMap `crefn-dashboard`): every panel has its
unit, and what reads CRE's series (`nvcre_*`: the Job panels, the namespace variable) reads the functions' copy only,
`exporter="cre-functions"`, the label the PodMonitors give their targets. In observe mode CRE's controller
exports the same series: promtool evaluates each such panel's query over both copies, and each Job is counted
once. The queries against a live Prometheus: tests/localstack/test_prometheus.py."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from localstack.observability.dashboard import dashboard, expression
from tests.support.promtool import CRES, OURS, promtool, series

BOARD = dashboard()
PANELS = {p["title"]: p for p in BOARD["panels"]}
CRE_SERIES = re.compile(r"\bnvcre_[a-z_]+(?:\{([^}]*)\})?")


def test_every_panel_has_its_unit() -> None:
    units = {title: ((panel.get("fieldConfig") or {}).get("defaults") or {}).get("unit")
             for title, panel in PANELS.items()}
    assert units == {
        "Jobs by state": "short", "Restarts per Job": "short", "Failed nodes (hardware)": "short",
        "Scheduling-blocked Jobs": "short", "Job verdicts by reason": "short", "Function answers": "reqps",
        "Answer latency p99": "s", "Decisions": "ops", "Dead letters": "short", "Alert deliveries": "short",
        "Kubernetes API calls": "reqps", "Kubernetes API errors": "reqps", "Parity with CRE": "short"}


def queries() -> list[str]:
    """Every PromQL of the dashboard: its panels' and its variables'."""
    variables = [str((v.get("query") or {}).get("query", "")) for v in BOARD["templating"]["list"]
                 if v.get("type") == "query"]
    return [t["expr"] for p in BOARD["panels"] for t in p.get("targets") or ()] + variables


def test_every_query_of_cres_series_selects_the_functions_copy() -> None:
    read = [(m.group(0), m.group(1) or "") for q in queries() for m in CRE_SERIES.finditer(q)]
    assert len(read) == 3  # Jobs by state, Failed nodes, the namespace variable
    assert [name for name, selector in read if 'exporter="cre-functions"' not in selector] == []


EVALUATED = {
    "Jobs by state": [('{status="in_progress"}', 1)],
    "Failed nodes (hardware)": [(series("nvcre_job_failed_nodes", OURS), 2)],
}
"""What each panel reading CRE's series answers for one Job, in progress with two failed nodes."""


@pytest.mark.process
def test_each_job_is_counted_once_when_cre_exports_the_same_series(tmp_path: Path) -> None:
    inputs = [{"series": series("nvcre_job_status", {**labels, "status": status}), "values": f"{value}x10"}
              for labels in (OURS, CRES) for status, value in (("in_progress", 1), ("succeeded", 0), ("failed", 0))]
    inputs += [{"series": series("nvcre_job_failed_nodes", labels), "values": "2x10"} for labels in (OURS, CRES)]
    reading = {title: panel for title, panel in PANELS.items()
               if any(CRE_SERIES.search(t["expr"]) for t in panel["targets"])}
    assert set(reading) == set(EVALUATED)
    tests: list[dict[str, Any]] = [
        {"expr": expression(target["expr"]), "eval_time": "5m",
         "exp_samples": [{"labels": labels, "value": value} for labels, value in EVALUATED[title]]}
        for title, panel in reading.items() for target in panel["targets"]]
    test_file = tmp_path / "dashboard.test.yml"
    test_file.write_text(yaml.safe_dump({"rule_files": [], "evaluation_interval": "1m", "tests": [
        {"interval": "1m", "input_series": inputs, "promql_expr_test": tests}]}, sort_keys=False))
    result = promtool("test", "rules", test_file)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout
