"""The local Prometheus (`localstack.observability.prometheus`) against the real API server: it scrapes a served
function, the served `metrics` target (as its ServiceAccount) and the dead-letter recorder; the Job
gauges keep the CRE Job's `namespace` and `job` labels; every rule of the PrometheusRule evaluates; the
recorder's first dead letter fires CREFnDeadLetters; a copy of CRE's NVCREHardwareFailure with a 1s
`for` in a test-only group fires while the real one (1m) and NVCREJobStuck (6h) are pending; the demo
summary's lines show them; the Grafana dashboard's panels have data or say why they can be empty, and a
misspelt metric fails. A missing prometheus fails these tests."""

from __future__ import annotations

import io
import json
import re
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from functions.runtime.client import send
from functions.runtime.gateway import Gateway
from functions.runtime.resources import cre_jobs
from localstack.cluster.apiserver import LocalCluster
from localstack.manifests import NAMESPACE, render, service_account_user
from localstack.observability.dashboard import check_dashboard, dashboard
from localstack.observability.prometheus import LocalPrometheus, print_summary, rule_groups
from localstack.samples import load_sample
from localstack.serving import ServedFunction
from localstack.trainer import wait_until

JOBS = cre_jobs("nvcre.nvidia.com")
GROUPS = rule_groups()
HARDWARE = next(r for g in GROUPS for r in g["rules"] if r.get("alert") == "NVCREHardwareFailure")
SHORT_FOR = {"name": "test-short-for",
             "rules": [{**HARDWARE, "for": "1s", "labels": {**HARDWARE["labels"], "group": "test-short-for"}}]}


def metrics_kubeconfig(cluster: LocalCluster) -> str:
    """A kubeconfig of the ServiceAccount crefn-metrics (bound as knative/base binds it)."""
    return str(cluster.service_account_kubeconfig(NAMESPACE, "crefn-metrics"))


def create_job(gateway: Gateway, ns: str, name: str, status: dict[str, Any]) -> None:
    gateway.create(JOBS, ns, {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                              "metadata": {"name": name, "labels": {"crefn.dev/managed": "true"}},
                              "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "t"}}}}})
    gateway.patch(JOBS, ns, name, {"status": status}, status=True)


def condition(type_: str, reason: str, status: str = "True") -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": "m", "observedGeneration": 1,
            "lastTransitionTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}


@pytest.fixture
def prometheus(serve: Callable[..., ServedFunction], cluster: LocalCluster, gateway: Gateway, namespace: str,
               recorder: tuple[str, Path], tmp_path: Path) -> Iterator[LocalPrometheus]:
    """Prometheus scraping `phase` (after one event), `metrics`, with a Job in `namespace` running with
    a hardware failure recorded on two nodes, and the dead-letter recorder (`cre-fn record`), after its
    first dead letter."""
    create_job(gateway, namespace, "train", {"conditions": [
        condition("InProgress", "WorkloadRunning"), condition("Succeeded", "NotApplicable", "False"),
        condition("Failed", "NotApplicable", "False"),
        condition("HardwareFailed", "HardwareFailureDetected")],
        "failedNodes": [{"name": "gpu-1", "reason": "HardwareFailureDetected"},
                        {"name": "gpu-2", "reason": "HardwareFailureDetected"}]})
    phase = serve("phase", CREFN_KUBECONFIG=str(cluster.kubeconfig_for(service_account_user("crefn-phase"))),
                  CREFN_LOG_LEVEL="ERROR")
    sample = load_sample("trainjob-resource-add")
    sample["attributes"]["id"] = str(uuid.uuid4())
    assert send(phase.url, sample).status == 200
    assert send(recorder[0], load_sample("trainjob-resource-update-failed")).status == 202
    metrics = serve("metrics", CREFN_KUBECONFIG=metrics_kubeconfig(cluster), CREFN_LOG_LEVEL="ERROR")
    targets = {"phase": phase.url, "metrics": metrics.url, "dead-letters": recorder[0]}
    local = LocalPrometheus(tmp_path / "prometheus", targets, groups=[*GROUPS, SHORT_FOR], interval=0.5).start()
    try:
        yield local
    finally:
        local.stop()


def test_scrapes_a_function_and_the_job_gauges_with_their_own_labels(prometheus: LocalPrometheus,
                                                                     namespace: str) -> None:
    def up() -> set[tuple[str, str, str]]:
        return {(s["metric"]["job"], s["metric"]["service"], s["value"][1]) for s in prometheus.query("up")}

    # the first scrape of `metrics` also builds its Kubernetes connection: it may time out once
    assert wait_until(lambda: up() == {("crefn-functions", "crefn-phase", "1"), ("crefn-metrics", "crefn-metrics", "1"),
                                       ("crefn-functions", "crefn-dead-letters", "1")}, 20, interval=0.5), [
        (t["scrapeUrl"], t["lastError"]) for t in prometheus.api("targets")["activeTargets"]]
    status = prometheus.query(f'nvcre_job_status{{namespace="{namespace}"}}')
    assert {(s["metric"]["job"], s["metric"]["status"], s["value"][1]) for s in status} == {
        ("train", "in_progress", "1"), ("train", "succeeded", "0"), ("train", "failed", "0")}
    # labelled as the PodMonitors label their targets: the rules and the dashboard select the functions' copy by it
    assert {(s["metric"]["service"], s["metric"]["exporter"]) for s in status} == {("crefn-metrics", "cre-functions")}
    nodes = prometheus.query(f'nvcre_job_failed_nodes{{namespace="{namespace}", job="train"}}')
    assert [s["value"][1] for s in nodes] == ["2"]
    answered = prometheus.query('crefn_events_total{function="phase"}')
    assert {(s["metric"]["type"], s["metric"]["answer"], s["metric"]["job"]) for s in answered} >= {
        ("dev.knative.apiserver.resource.add", "200", "crefn-functions")}
    dead = prometheus.query('crefn_events_total{function="dead-letters"}')
    assert [(s["metric"]["type"], s["metric"]["answer"], s["value"][1]) for s in dead] == [
        ("dev.knative.apiserver.resource.update", "202", "1")]


def test_every_rule_evaluates_and_a_short_for_copy_of_cres_alert_fires(prometheus: LocalPrometheus,
                                                                        namespace: str) -> None:
    def ours() -> list[dict[str, Any]]:
        return [a for a in prometheus.alerts() if a["labels"].get("namespace") == namespace]

    assert wait_until(lambda: any(a["state"] == "firing" for a in ours()), 30, interval=0.5), prometheus.alerts()
    states = {(a["labels"]["alertname"], a["labels"].get("group", ""), a["state"]) for a in ours()}
    assert states == {("NVCREHardwareFailure", "test-short-for", "firing"), ("NVCREHardwareFailure", "", "pending"),
                      ("NVCREJobStuck", "", "pending")}
    fired = next(a for a in ours() if a["state"] == "firing")
    assert fired["labels"]["job"] == "train" and fired["labels"]["severity"] == "warning"
    assert fired["annotations"]["summary"] == f"CRE Job {namespace}/train has 2 failed node(s)"
    dead_letters = [(a["labels"]["type"], a["state"], a["annotations"]["summary"])
                    for a in prometheus.alerts() if a["labels"]["alertname"] == "CREFnDeadLetters"]
    assert dead_letters == [("dev.knative.apiserver.resource.update", "firing",  # the first one counts, for: 0
                             "1 dev.knative.apiserver.resource.update event(s) dead-lettered in the last 10 minutes")]
    groups = prometheus.api("rules")["groups"]
    assert sorted(g["name"] for g in groups) == sorted([*(g["name"] for g in GROUPS), "test-short-for"])
    assert wait_until(lambda: all(r["health"] == "ok" for g in prometheus.api("rules")["groups"] for r in g["rules"]),
                      10, interval=0.5), prometheus.api("rules")

    out = io.StringIO()
    print_summary(prometheus, namespace, out)
    text = out.getvalue()
    assert f"   Prometheus ({prometheus.url}):" in text
    assert 'nvcre_job_status{job="train", status="in_progress"} 1' in text
    assert 'nvcre_job_failed_nodes{job="train"} 2' in text
    assert re.search(r"crefn_events_total: .*phase 200x[1-9]", text)  # the served phase is the session's
    assert f"NVCREHardwareFailure (warning, firing) {namespace}/train" in text
    assert text.count("NVCRE") == 3  # this namespace's three, none of another's


def test_the_dashboards_panels_have_data_or_say_why_not_and_a_misspelt_metric_fails(
        prometheus: LocalPrometheus, namespace: str) -> None:
    board = dashboard()
    # a rate needs two scrapes with samples: wait until every panel's query has had them, or time runs out
    # (the assertions below then say which panel has no data)
    wait_until(lambda: prometheus.query(f'nvcre_job_failed_nodes{{namespace="{namespace}"}}') != [] and
               not [c for c in check_dashboard(prometheus, board) if c.problem], 30, interval=0.5)
    checks = {c.title: c for c in check_dashboard(prometheus, board)}
    assert [(t, c.problem) for t, c in checks.items() if c.problem] == []
    assert checks["Failed nodes (hardware)"].series >= 1  # this module's Jobs, and other tests' too
    assert checks["Dead letters"].problem == ""  # a query Prometheus answers; data only where a test dead-lettered
    assert checks["Jobs by state"].series >= 1
    misspelt = {"title": "typo", "description": "Can be empty: never", "targets": [{"expr": "crefn_event_total"}]}
    silent = {"title": "silent", "description": "", "targets": [{"expr": 'crefn_job_info{reason="NoSuchReason"}'}]}
    got = check_dashboard(prometheus, {"panels": [misspelt, silent]})
    assert [(c.title, c.problem) for c in got] == [
        ("typo", "unknown metric crefn_event_total"),
        ("silent", "no data, and its description does not say it can be empty")]


def test_the_monitoring_component_installs_the_dashboard_for_grafanas_sidecar() -> None:
    [cm] = [d for d in render("installs/monitoring") if d["kind"] == "ConfigMap" and
            d["metadata"]["name"] == "crefn-dashboard"]
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    board = json.loads(cm["data"]["cre-functions.json"])
    assert board["uid"] == "cre-functions" and len(board["panels"]) == 13
    parity = [p for p in board["panels"] if p["title"] == "Parity with CRE"]
    assert [t["expr"] for p in parity for t in p["targets"]] == [
        "sum by (field, result) (increase(crefn_parity_checks_total[1h]))"]
    assert all(p["targets"] and p["datasource"]["uid"] == "${datasource}" for p in board["panels"])
