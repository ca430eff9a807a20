"""One fault, one page (docs/operating.md#one-fault-one-page): the inhibit rule the documentation gives, in a real
Alertmanager. A Job stored with a hardware failure; the real `alert` function sends `CREJobHardwareFailed` for it
(its decision event), and a real Prometheus, scraping the served `metrics` target as its ServiceAccount, fires
CRE's `NVCREHardwareFailure` (the PrometheusRule's, its `for` cut to a second) and sends it to the same
Alertmanager. Both arrive, the twin is held back by the function's alert, one notification goes out. Missing
prometheus or alertmanager fails this test."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from functions.runtime.client import send
from functions.runtime.gateway import Gateway
from functions.runtime.resources import cre_jobs
from localstack.cluster.apiserver import LocalCluster
from localstack.manifests import NAMESPACE, service_account_user
from localstack.observability.alertmanager import LocalAlertmanager
from localstack.observability.prometheus import LocalPrometheus, rule_groups
from localstack.serving import ServedFunction
from localstack.trainer import wait_until
from tests.support.docs import section
from tests.support.helpers import Receiver

JOBS = cre_jobs("nvcre.nvidia.com")
TWIN = next(r for g in rule_groups() for r in g["rules"] if r.get("alert") == "NVCREHardwareFailure")


def documented_inhibit_rules() -> list[dict[str, Any]]:
    """The `inhibit_rules` of the YAML block docs/operating.md gives."""
    text = section("operating.md", "### One fault, one page")
    (block,) = [part.split("```", 1)[0] for part in text.split("```yaml\n")[1:]]
    rules: list[dict[str, Any]] = yaml.safe_load(block)["inhibit_rules"]
    return rules


def test_the_documented_rule_names_the_function_sent_alert_and_its_twin() -> None:
    assert documented_inhibit_rules() == [{"source_matchers": ['alertname="CREJobHardwareFailed"'],
                                           "target_matchers": ['alertname="NVCREHardwareFailure"'],
                                           "equal": ["namespace", "job"]}]


def store_hardware_failure(gateway: Gateway, ns: str, name: str) -> None:
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    gateway.create(JOBS, ns, {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                              "metadata": {"name": name, "labels": {"crefn.dev/managed": "true"}},
                              "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "t"}}}}})
    failure = "Hardware failure detected on node(s): [gpu-3]"
    conditions = [("InProgress", "True", "WorkloadRunning", "running"), ("Succeeded", "False", "NotApplicable", ""),
                  ("Failed", "False", "NotApplicable", ""),
                  ("HardwareFailed", "True", "HardwareFailureDetected", failure)]
    gateway.patch(JOBS, ns, name, {"status": {
        "conditions": [{"type": t, "status": s, "reason": r, "message": m, "observedGeneration": 1,
                        "lastTransitionTime": stamp} for t, s, r, m in conditions],
        "failedNodes": [{"name": "gpu-3", "reason": "HardwareFailureDetected", "message": "unhealthy"}]}},
        status=True)


def test_one_hardware_failure_is_one_notification(serve: Callable[..., ServedFunction], cluster: LocalCluster,
                                                 gateway: Gateway, namespace: str, tmp_path: Path) -> None:
    webhook = Receiver()
    alertmanager = LocalAlertmanager(tmp_path / "alertmanager", webhook.url,
                                     inhibit_rules=documented_inhibit_rules()).start()
    prometheus = None
    try:
        store_hardware_failure(gateway, namespace, "gpu")
        alert = serve("alert", CREFN_KUBECONFIG=str(cluster.kubeconfig_for(service_account_user("crefn-alert"))),
                      CREFN_ALERTMANAGER_URL=alertmanager.url, CREFN_LOG_LEVEL="WARNING")
        decided = {"attributes": {"specversion": "1.0", "id": "h1", "source": "/crefn/nodehealth",
                                  "type": "dev.crefn.job.hardware.failed", "subject": f"{namespace}/gpu",
                                  "namespace": namespace, "job": "gpu"},
                   "data": {"job": {"name": "gpu", "namespace": namespace}, "nodes": ["gpu-3"],
                            "message": "Hardware failure detected on node(s): [gpu-3]"}}
        assert send(alert.url, decided).status == 202

        def notified() -> list[str]:
            return [a["labels"]["alertname"] for body in webhook.bodies for a in body["alerts"]
                    if a["labels"].get("namespace") == namespace]

        assert wait_until(lambda: notified() == ["CREJobHardwareFailed"], 15), webhook.bodies
        metrics = serve("metrics", CREFN_KUBECONFIG=str(cluster.service_account_kubeconfig(NAMESPACE, "crefn-metrics")),
                        CREFN_LOG_LEVEL="WARNING")
        quick = {"name": "nvcre-quick", "rules": [{**TWIN, "for": "1s"}]}
        prometheus = LocalPrometheus(tmp_path / "prometheus", {"metrics": metrics.url}, groups=[quick],
                                     interval=0.5, alertmanager=alertmanager.url).start()

        def received() -> dict[str, dict[str, Any]]:
            return {a["labels"]["alertname"]: a for a in alertmanager.alerts()
                    if a["labels"].get("namespace") == namespace}

        assert wait_until(lambda: "NVCREHardwareFailure" in received(), 30), prometheus.alerts()
        source, twin = received()["CREJobHardwareFailed"], received()["NVCREHardwareFailure"]
        assert (twin["labels"]["job"], twin["labels"]["exporter"]) == ("gpu", "cre-functions")
        assert twin["status"] == {"state": "suppressed", "inhibitedBy": [source["fingerprint"]], "silencedBy": []}
        assert source["status"]["state"] == "active"
        time.sleep(3)  # three of the route's group intervals: a notification of the twin would have gone out
        assert notified() == ["CREJobHardwareFailed"]
    finally:
        if prometheus is not None:
            prometheus.stop()
        alertmanager.stop()
        webhook.close()
