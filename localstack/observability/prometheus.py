"""A Prometheus on loopback (Debian's `prometheus`, with its `promtool`): for the test suite and the
local stack. It scrapes every served function's `GET /metrics` (job `crefn-functions`) and the metrics
target's (job `crefn-metrics`, with `honor_labels`, as the monitoring component's PodMonitor does: the Job
gauges carry their own `namespace` and `job` labels), each target with the fixed labels the PodMonitors give
theirs (`exporter`, which the rules and the dashboard select on), and evaluates the rule groups of the
PrometheusRule `crefn` in `knative/components/monitoring`, the same groups the promtool tests check. Its alerts
are read from its API, and sent to an Alertmanager only when it is given one. Stopped by PID.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

import yaml

from localstack.cluster.apiserver import free_port
from localstack.manifests import render
from localstack.processes import spawn, stop_process
from localstack.serving import wait_ready

MONITORING_INSTALL = "installs/monitoring"
RULE_NAME = "crefn"
HONOR_LABELS = frozenset({"metrics"})  # targets whose series carry their own `namespace` and `job`


class PrometheusError(RuntimeError):
    """Prometheus (or promtool) is missing, or could not be started or asked."""


def find_binary(name: str, env: str) -> str:
    path = os.environ.get(env) or shutil.which(name)
    if not path:
        raise PrometheusError(f"{name} not found: install Debian's prometheus (make deps), or set {env}")
    return path


def find_prometheus() -> str:
    return find_binary("prometheus", "PROMETHEUS")


def find_promtool() -> str:
    return find_binary("promtool", "PROMTOOL")


def rule_groups() -> list[dict[str, Any]]:
    """The `spec.groups` of the PrometheusRule `crefn`, as the monitoring install renders it."""
    for doc in render(MONITORING_INSTALL):
        if doc["kind"] == "PrometheusRule" and doc["metadata"]["name"] == RULE_NAME:
            groups: list[dict[str, Any]] = doc["spec"]["groups"]
            return groups
    raise PrometheusError(f"no PrometheusRule {RULE_NAME} in knative/{MONITORING_INSTALL}")


def fixed_labels() -> dict[str, str]:
    """The labels the monitoring install's PodMonitors give every target they scrape (a relabeling without a
    source: `targetLabel` set to `replacement`)."""
    fixed: dict[str, str] = {}
    for doc in render(MONITORING_INSTALL):
        if doc["kind"] == "PodMonitor":
            for endpoint in doc["spec"]["podMetricsEndpoints"]:
                fixed |= {r["targetLabel"]: r["replacement"] for r in endpoint.get("relabelings") or ()
                          if not r.get("sourceLabels") and "replacement" in r}
    return fixed


def write_rules(path: Path, groups: Sequence[Mapping[str, Any]]) -> Path:
    """A Prometheus rules file holding `groups`."""
    path.write_text(yaml.safe_dump({"groups": list(groups)}, sort_keys=False))
    return path


def host_port(url: str) -> str:
    return urllib.parse.urlsplit(url).netloc


class LocalPrometheus:
    """`targets` maps a function target's name to its base URL; `groups` defaults to the PrometheusRule's."""

    def __init__(self, work_dir: Path, targets: Mapping[str, str], groups: Sequence[Mapping[str, Any]] | None = None,
                 interval: float = 1.0, honor_labels: Collection[str] = HONOR_LABELS, alertmanager: str = "") -> None:
        """`alertmanager`: the base URL of the Alertmanager its alerts go to (none when empty)."""
        self.work_dir = Path(work_dir)
        self.alertmanager = alertmanager
        self.targets = dict(targets)
        self.groups = list(groups) if groups is not None else rule_groups()
        self.labels = fixed_labels()
        self.interval = interval
        self.honor_labels = frozenset(honor_labels)
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def config(self, rules_file: Path) -> dict[str, Any]:
        every = f"{max(1, round(self.interval * 1000))}ms"

        def job(name: str, targets: dict[str, str], honor: bool) -> dict[str, Any]:
            return {"job_name": name, "honor_labels": honor, "metrics_path": "/metrics",
                    "static_configs": [{"targets": [host_port(url)],
                                        "labels": {**self.labels, "service": f"crefn-{target}"}}
                                       for target, url in sorted(targets.items())]}

        functions = {t: u for t, u in self.targets.items() if t not in self.honor_labels}
        metrics = {t: u for t, u in self.targets.items() if t in self.honor_labels}
        jobs = [job("crefn-functions", functions, False)] if functions else []
        jobs += [job("crefn-metrics", metrics, True)] if metrics else []
        alerting = {"alerting": {"alertmanagers": [{"static_configs": [{"targets": [host_port(self.alertmanager)]}]}]}}
        return {"global": {"scrape_interval": every, "scrape_timeout": every, "evaluation_interval": every},
                "rule_files": [str(rules_file)], "scrape_configs": jobs, **(alerting if self.alertmanager else {})}

    def start(self, timeout: float = 30) -> LocalPrometheus:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        rules_file = write_rules(self.work_dir / "rules.yml", self.groups)
        config_file = self.work_dir / "prometheus.yml"
        config_file.write_text(yaml.safe_dump(self.config(rules_file), sort_keys=False))
        self.port = free_port()
        log_path = self.work_dir / "prometheus.log"
        with log_path.open("ab") as log:
            self._proc = spawn([
                find_prometheus(), f"--config.file={config_file}", f"--storage.tsdb.path={self.work_dir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn",
            ], stdout=log, stderr=subprocess.STDOUT)
        if why := wait_ready(self._proc, f"{self.url}/-/ready", timeout, log_path, "prometheus"):
            self.stop()
            raise PrometheusError(why)
        return self

    def api(self, path: str, **params: str) -> Any:
        """The `data` of an HTTP API answer (`/api/v1/<path>`)."""
        query = urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/{path}{'?' + query if query else ''}", timeout=5) as resp:
                body = json.loads(resp.read())
        except (urllib.error.URLError, OSError, ValueError) as e:
            raise PrometheusError(f"prometheus API {path}: {e}") from e
        if body.get("status") != "success":
            raise PrometheusError(f"prometheus API {path}: {body.get('error')}")
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant vector: [{"metric": {labels}, "value": [time, "value"]}, ...]."""
        result: list[dict[str, Any]] = self.api("query", query=expr)["result"]
        return result

    def alerts(self) -> list[dict[str, Any]]:
        """The alerts of the rules, pending or firing."""
        found: list[dict[str, Any]] = self.api("alerts")["alerts"]
        return found

    def scraped_since(self, since: float) -> bool:
        """Whether every target has been scraped (successfully or not) after the Unix time `since`."""
        return len(self.query(f"timestamp(up) > {since:.3f}")) == len(self.targets)

    def wait_for_scrape(self, since: float | None = None, timeout: float = 10) -> bool:
        since = time.time() if since is None else since
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.scraped_since(since):
                return True
            time.sleep(min(self.interval, 0.5))
        return False

    def children(self) -> list[subprocess.Popen[bytes]]:
        """Its process, while it runs (for `localstack.processes.stop_together`)."""
        return [self._proc] if self._proc else []

    def stop(self) -> None:
        if self._proc:
            stop_process(self._proc)
        self._proc = None


def print_summary(prometheus: LocalPrometheus | None, namespace: str, out: TextIO) -> None:
    """The demo summary's lines from Prometheus: the namespace's Job series after a fresh scrape, the
    functions' answers (a 503 says whether it was a designed wait or an error), and the alerts of the rules
    pending or firing for that namespace or for none."""
    if prometheus is None:
        return
    try:
        prometheus.wait_for_scrape()
        status = prometheus.query(f'nvcre_job_status{{namespace="{namespace}"}} == 1')
        nodes = prometheus.query(f'nvcre_job_failed_nodes{{namespace="{namespace}"}} > 0')
        answers = prometheus.query("sum by (function, answer, outcome) (crefn_events_total)")
        alerts = prometheus.alerts()
    except PrometheusError as e:
        print(f"   Prometheus ({prometheus.url}): {e}", file=out)
        return
    print(f"   Prometheus ({prometheus.url}):", file=out)
    for s in sorted(status, key=lambda s: str(s["metric"].get("job"))):
        print(f"     nvcre_job_status{{job=\"{s['metric'].get('job')}\", status=\"{s['metric'].get('status')}\"}} 1",
              file=out)
    for s in sorted(nodes, key=lambda s: str(s["metric"].get("job"))):
        print(f"     nvcre_job_failed_nodes{{job=\"{s['metric'].get('job')}\"}} {s['value'][1]}", file=out)
    counts = ", ".join(f"{s['metric'].get('function')} {s['metric'].get('answer')}x{s['value'][1]}"
                       + (f" ({s['metric']['outcome']})" if s["metric"].get("outcome") in ("wait", "error") else "")
                       for s in sorted(answers, key=lambda s: (str(s["metric"].get("function")),
                                                               str(s["metric"].get("answer")),
                                                               str(s["metric"].get("outcome")))))
    print(f"     crefn_events_total: {counts or 'none'}", file=out)
    said = [f"{a['labels'].get('alertname')} ({a['labels'].get('severity')}, {a['state']})"
            + (f" {a['labels']['namespace']}/{a['labels']['job']}" if "job" in a["labels"] else "")
            for a in alerts if a["labels"].get("namespace") in (None, namespace)]
    print(f"     alerts of the rules: {', '.join(said) or 'none pending or firing'}", file=out)
