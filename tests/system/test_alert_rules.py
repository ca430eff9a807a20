"""The PrometheusRule `crefn` (`knative/components/monitoring`) run by promtool: its groups, taken from
the rendered monitoring install, are written to a rules file; `promtool check rules` accepts it, and `promtool
test rules` runs each row below (input series → the alerts expected at one time), every alert firing
in one row at least and quiet in another. CRE's alerts read the functions' copy of the Job series only (the
PodMonitors' `exporter` label): the same series from CRE's controller too is one alert. Designed waits are
not errors: a burst of them is quiet where the same 503s of a failure fire. Every alert links its runbook, a
page of `docs/runbooks/`. A missing promtool fails these tests."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from functions.runtime.metrics import JobStates, ProcessMetrics
from localstack.observability.prometheus import rule_groups, write_rules
from tests.support.paths import REPO
from tests.support.promtool import CRES, OURS, promtool, series

RUNBOOKS = REPO / "docs" / "runbooks"
RUNBOOK_BASE = "https://github.com/crefn/cre-functions/blob/main/docs/runbooks/"
GROUPS = rule_groups()
RULES = {r["alert"]: r for g in GROUPS for r in g["rules"] if "alert" in r}
RECORDS = [r["record"] for g in GROUPS for r in g["rules"] if "record" in r]

LAUNCH = {"function": "launch", "type": "dev.knative.apiserver.resource.update"}
PING = {"function": "resync", "type": "dev.knative.sources.ping"}
ALERT_POD = {"function": "alert", "pod": "crefn-alert-00001-deployment-a"}
DEAD = {"function": "dead-letters", "type": "dev.crefn.job.condition.changed", "answer": "202"}


@dataclass(frozen=True)
class Fired:
    labels: dict[str, str]
    summary: str


@dataclass(frozen=True)
class Case:
    alert: str
    input: dict[str, str]  # series → promtool's expanding notation, one value per interval
    at: str  # the evaluation time
    fired: list[Fired] = field(default_factory=list)
    interval: str = "1m"


CASES = {
    "hardware failure: failed nodes for 1m fire": Case(
        "NVCREHardwareFailure", {series("nvcre_job_failed_nodes", OURS): "2x10"}, "1m",
        [Fired(OURS, "CRE Job ml/llama has 2 failed node(s)")]),
    "hardware failure: pending before 1m": Case(
        "NVCREHardwareFailure", {series("nvcre_job_failed_nodes", OURS): "2x10"}, "30s", interval="30s"),
    "hardware failure: no failed nodes": Case(
        "NVCREHardwareFailure", {series("nvcre_job_failed_nodes", OURS): "0x10"}, "5m"),
    "hardware failure: the same series from CRE's controller too is one alert": Case(
        "NVCREHardwareFailure", {series("nvcre_job_failed_nodes", OURS): "2x10",
                                 series("nvcre_job_failed_nodes", CRES): "2x10"}, "5m",
        [Fired(OURS, "CRE Job ml/llama has 2 failed node(s)")]),
    "hardware failure: CRE's controller's series alone is not the functions' alert": Case(
        "NVCREHardwareFailure", {series("nvcre_job_failed_nodes", CRES): "2x10"}, "5m"),
    "job stuck: in progress for 6h fires": Case(
        "NVCREJobStuck", {series("nvcre_job_status", {**OURS, "status": "in_progress"}): "1x400"}, "6h",
        [Fired({**OURS, "status": "in_progress"}, "CRE Job ml/llama has been in progress for more than 6h")]),
    "job stuck: the same series from CRE's controller too is one alert": Case(
        "NVCREJobStuck", {series("nvcre_job_status", {**OURS, "status": "in_progress"}): "1x400",
                          series("nvcre_job_status", {**CRES, "status": "in_progress"}): "1x400"}, "6h",
        [Fired({**OURS, "status": "in_progress"}, "CRE Job ml/llama has been in progress for more than 6h")]),
    "job stuck: in progress for 5h59m is quiet": Case(
        "NVCREJobStuck", {series("nvcre_job_status", {**OURS, "status": "in_progress"}): "1x400"}, "5h59m"),
    "job stuck: succeeded after 5h is quiet": Case(
        "NVCREJobStuck", {series("nvcre_job_status", {**OURS, "status": "in_progress"}): "1x300 0x100",
                          series("nvcre_job_status", {**OURS, "status": "succeeded"}): "0x300 1x100"}, "6h40m"),
    "function errors: half the answers failing for 15m fire": Case(
        "CREFnFunctionErrors", {
            series("crefn_events_total", {**LAUNCH, "answer": "503", "outcome": "error"}): "0+5x30",
            series("crefn_events_total", {**LAUNCH, "answer": "200", "outcome": "ok"}): "0+5x30",
            series("crefn_events_total", {"function": "phase", "type": "t", "answer": "200", "outcome": "ok"}):
                "0+9x30"},
        "15m", [Fired({"function": "launch"}, "launch fails 50% of its events")]),
    "function errors: a burst of restarts waiting out their grace for 30m is quiet": Case(
        "CREFnFunctionErrors", {
            series("crefn_events_total", {**LAUNCH, "answer": "503", "outcome": "wait"}): "0+40x40",
            series("crefn_events_total", {**LAUNCH, "answer": "200", "outcome": "ok"}): "0+2x40"},
        "30m"),
    "function errors: the same 503s with the API server gone fire": Case(
        "CREFnFunctionErrors", {
            series("crefn_events_total", {**LAUNCH, "answer": "503", "outcome": "error"}): "0+40x40",
            series("crefn_events_total", {**LAUNCH, "answer": "200", "outcome": "ok"}): "0+2x40"},
        "30m", [Fired({"function": "launch"}, "launch fails 95.24% of its events")]),
    "function errors: a minute of failures is quiet": Case(
        "CREFnFunctionErrors", {
            series("crefn_events_total", {**LAUNCH, "answer": "503", "outcome": "error"}): "0 6x30",
            series("crefn_events_total", {**LAUNCH, "answer": "200", "outcome": "ok"}): "0+1x30"},
        "15m"),
    "function errors: 5% of failures are quiet": Case(
        "CREFnFunctionErrors", {
            series("crefn_events_total", {"function": "status", "type": "t", "answer": "503", "outcome": "error"}):
                "0+1x30",
            series("crefn_events_total", {"function": "status", "type": "t", "answer": "202", "outcome": "ok"}):
                "0+19x30"},
        "20m"),
    "dead letters: the first one, long after the recorder started, fires": Case(
        "CREFnDeadLetters", {series("crefn_events_total", DEAD): "_x20 1x20"}, "25m",
        [Fired({"type": DEAD["type"]}, "1 dev.crefn.job.condition.changed event(s) dead-lettered in the last "
                                       "10 minutes")]),
    "dead letters: growing fires": Case(
        "CREFnDeadLetters", {series("crefn_events_total", DEAD): "0+1x40",
                             series("crefn_events_total", {**DEAD, "answer": "400"}): "0+1x40"}, "30m",
        [Fired({"type": DEAD["type"]}, "10 dev.crefn.job.condition.changed event(s) dead-lettered in the last "
                                       "10 minutes")]),
    "dead letters: none for 10 minutes is quiet": Case(
        "CREFnDeadLetters", {series("crefn_events_total", DEAD): "_x5 3x40"}, "30m"),
    "dead letters: a function's own answers are not dead letters": Case(
        "CREFnDeadLetters", {series("crefn_events_total", {**DEAD, "function": "alert"}): "0+1x40"}, "30m"),
    "dead letters: what the recorder refused is not a dead letter": Case(
        "CREFnDeadLetters", {series("crefn_events_total", {**DEAD, "type": "none", "answer": "400"}): "_x20 1x20"},
        "25m"),
    "resync: ticks answered 503 for 5 minutes fire": Case(
        "CREFnResyncFailing", {series("crefn_events_total", {**PING, "answer": "202"}): "0+1x10 10x20",
                               series("crefn_events_total", {**PING, "answer": "503"}): "0x10 1+1x20"}, "16m",
        [Fired({}, "resync has not completed a tick for 5 minutes while ticks arrive")]),
    "resync: a pod that never answered 202 fires": Case(
        "CREFnResyncFailing", {series("crefn_events_total", {**PING, "answer": "400"}): "0+1x20"}, "10m",
        [Fired({}, "resync has not completed a tick for 5 minutes while ticks arrive")]),
    "resync: failing for 2 minutes is quiet": Case(
        "CREFnResyncFailing", {series("crefn_events_total", {**PING, "answer": "202"}): "0+1x10 10x20",
                               series("crefn_events_total", {**PING, "answer": "503"}): "0x10 1+1x20"}, "12m"),
    "resync: every tick answered 202 is quiet": Case(
        "CREFnResyncFailing", {series("crefn_events_total", {**PING, "answer": "202"}): "0+1x30"}, "20m"),
    "resync: no ticks arriving is quiet": Case(
        "CREFnResyncFailing", {series("crefn_events_total", {**PING, "answer": "202"}): "7x30",
                               series("crefn_events_total", {**PING, "answer": "503"}): "3x30"}, "20m"),
    "alert sink: refused once, nothing delivered, fires after 5m": Case(
        "CREFnAlertSinkFailing", {
            series("crefn_alert_deliveries_total", {"sink": "slack", "result": "refused"}): "_x20 1x20",
            series("crefn_alert_deliveries_total", {"sink": "alertmanager", "result": "delivered"}): "0+1x40"},
        "26m", [Fired({"sink": "slack"}, "alert sink slack: 1 failed, none delivered in 10 minutes")]),
    "no alert sink: a pod reporting none for 5m fires": Case(
        "CREFnNoAlertSinks", {series("crefn_alert_sinks_configured", ALERT_POD): "0x10"}, "5m",
        [Fired({"function": "alert"}, "alert has no alert sink: Job alerts reach no one")]),
    "no alert sink: still firing half an hour after that pod went away": Case(
        "CREFnNoAlertSinks", {series("crefn_alert_sinks_configured", ALERT_POD): "0x10"}, "40m",
        [Fired({"function": "alert"}, "alert has no alert sink: Job alerts reach no one")]),
    "no alert sink: pending for its first 5 minutes": Case(
        "CREFnNoAlertSinks", {series("crefn_alert_sinks_configured", ALERT_POD): "0x10"}, "4m"),
    "no alert sink: a pod with two sinks is quiet": Case(
        "CREFnNoAlertSinks", {series("crefn_alert_sinks_configured", ALERT_POD): "2x30"}, "20m"),
    "no alert sink: a new pod with a sink ends it": Case(
        "CREFnNoAlertSinks", {series("crefn_alert_sinks_configured", ALERT_POD): "0x10",
                              series("crefn_alert_sinks_configured", {**ALERT_POD, "pod": "b"}): "_x15 1x10"}, "20m"),
    "alert sink: pending for its first 5 minutes": Case(
        "CREFnAlertSinkFailing", {
            series("crefn_alert_deliveries_total", {"sink": "slack", "result": "refused"}): "_x20 1x20"}, "23m"),
    "alert sink: unavailable, then delivered by a retry, is quiet": Case(
        "CREFnAlertSinkFailing", {
            series("crefn_alert_deliveries_total", {"sink": "pagerduty", "result": "unavailable"}): "_x20 2x20",
            series("crefn_alert_deliveries_total", {"sink": "pagerduty", "result": "delivered"}): "4x21 5x20"},
        "27m"),
    "alert sink: every delivery made is quiet": Case(
        "CREFnAlertSinkFailing", {
            series("crefn_alert_deliveries_total", {"sink": "slack", "result": "delivered"}): "0+1x40"}, "30m"),
}


@pytest.fixture(scope="module")
def rules_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_rules(tmp_path_factory.mktemp("rules") / "crefn.rules.yml", GROUPS)


def test_promtool_checks_the_rules(rules_file: Path) -> None:
    result = promtool("check", "rules", rules_file)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(RULES) + len(RECORDS)} rules found" in result.stdout


def test_the_rules_are_cres_documented_alerts_and_the_projects() -> None:
    assert set(RULES) == {"NVCREHardwareFailure", "NVCREJobStuck", "CREFnFunctionErrors", "CREFnDeadLetters",
                          "CREFnResyncFailing", "CREFnAlertSinkFailing", "CREFnNoAlertSinks"}
    cre = {(a, RULES[a]["expr"], RULES[a]["for"], RULES[a]["labels"]["severity"])
           for a in ("NVCREHardwareFailure", "NVCREJobStuck")}
    # CRE's expressions, on the functions' copy of the series only (the PodMonitors' exporter label)
    assert cre == {("NVCREHardwareFailure", 'nvcre_job_failed_nodes{exporter="cre-functions"} > 0', "1m", "warning"),
                   ("NVCREJobStuck", 'nvcre_job_status{exporter="cre-functions", status="in_progress"} == 1', "6h",
                    "warning")}
    for rule in RULES.values():
        assert rule["labels"]["severity"] in ("warning", "critical")
        assert set(rule["annotations"]) == {"summary", "description", "runbook_url"}
        assert "{{" not in rule["annotations"]["description"]  # only the summary is a template


def test_every_alert_links_its_runbook_and_every_runbook_is_an_alerts() -> None:
    assert {name: rule["annotations"]["runbook_url"] for name, rule in RULES.items()} == {
        name: f"{RUNBOOK_BASE}{name}.md" for name in RULES}
    pages = {page.stem for page in RUNBOOKS.glob("*.md")} - {"README"}
    assert pages == set(RULES)
    index = (RUNBOOKS / "README.md").read_text()
    for name in RULES:
        text = (RUNBOOKS / f"{name}.md").read_text()
        headings = [line for line in text.splitlines() if line.startswith("#")]
        assert headings == [f"# {name}", "## What it means", "## What to check", "## What to do"], name
        assert f"[{name}.md]({name}.md)" in index


def test_every_metric_the_rules_read_is_one_the_functions_expose() -> None:
    exposed = {f"{m.name}_total" if m.type == "counter" else m.name
               for source in (ProcessMetrics(), JobStates(())) for m in source.collect()}
    names = re.compile(r"(?<![:\w])(?:nvcre|crefn)_[a-z_]+(?![:\w])")  # not the recorded level:name:op
    read = {name for g in GROUPS for r in g["rules"] for name in names.findall(r["expr"])}
    assert read and read <= exposed, read - exposed


def test_every_alert_has_a_row_firing_and_a_row_quiet() -> None:
    assert {c.alert for c in CASES.values() if c.fired} == set(RULES)
    assert {c.alert for c in CASES.values() if not c.fired} == set(RULES)


def unit_test(rules_file: Path, case: Case) -> dict[str, Any]:
    rule = RULES[case.alert]
    return {
        "rule_files": [str(rules_file)],
        "evaluation_interval": case.interval,
        "tests": [{
            "interval": case.interval,
            "input_series": [{"series": s, "values": v} for s, v in case.input.items()],
            "alert_rule_test": [{
                "eval_time": case.at,
                "alertname": case.alert,
                "exp_alerts": [{"exp_labels": {**f.labels, **rule["labels"]},
                                "exp_annotations": {**rule["annotations"], "summary": f.summary}}
                               for f in case.fired],
            }],
        }],
    }


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_promtool_unit_test(rules_file: Path, tmp_path: Path, case: Case) -> None:
    test_file = tmp_path / "test.yml"
    test_file.write_text(yaml.safe_dump(unit_test(rules_file, case), sort_keys=False))
    result = promtool("test", "rules", test_file)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout
