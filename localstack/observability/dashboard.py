"""The Grafana dashboard of the monitoring component (`knative/components/monitoring/dashboards/`), read from
the monitoring install as rendered (the ConfigMap `crefn-dashboard`), and every panel's queries evaluated against a
local Prometheus: a query returns data, or its panel's description starts with "Can be empty:" and says
when; every metric a query names must be one Prometheus has scraped (a misspelt name fails even when
the panel may be empty). Grafana's variables are given the values a user sees first: every namespace,
a 5m rate interval."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, TextIO

from localstack.manifests import render
from localstack.observability.prometheus import LocalPrometheus, PrometheusError

INSTALL = "installs/monitoring"
DASHBOARDS = "components/monitoring/dashboards"
CONFIGMAP = "crefn-dashboard"
MAY_BE_EMPTY = "Can be empty:"
VARIABLES = {"$namespace": ".*", "$__rate_interval": "5m"}
SUFFIXES = ("_total", "_bucket", "_sum", "_count")
_METRIC = re.compile(r"\b((?:crefn|nvcre)_[a-z_]+)\b")


@dataclass(frozen=True)
class PanelCheck:
    title: str
    series: int
    may_be_empty: bool
    problem: str = ""
    """Why the panel fails ("" when it passes)."""


def dashboard() -> dict[str, Any]:
    """The dashboard as the monitoring install installs it."""
    for doc in render(INSTALL):
        if doc.get("kind") == "ConfigMap" and doc["metadata"]["name"] == CONFIGMAP:
            [text] = doc["data"].values()
            loaded: dict[str, Any] = json.loads(text)
            return loaded
    raise LookupError(f"{INSTALL} renders no ConfigMap {CONFIGMAP}")


def expression(expr: str) -> str:
    for name, value in VARIABLES.items():
        expr = expr.replace(name, value)
    return expr


def scraped_metrics(prometheus: LocalPrometheus) -> set[str]:
    """The names of every metric family Prometheus has scraped (from the targets' metadata, so a family
    with no sample yet counts)."""
    return set(prometheus.api("metadata"))


def family(name: str) -> set[str]:
    """The names a series' metric family can be listed under (OpenMetrics drops `_total`; a histogram's
    series add `_bucket`, `_sum` and `_count`)."""
    return {name, *(name.removesuffix(s) for s in SUFFIXES if name.endswith(s))}


def check_panel(prometheus: LocalPrometheus, panel: dict[str, Any], known: set[str]) -> PanelCheck:
    title = str(panel.get("title", ""))
    may_be_empty = str(panel.get("description", "")).startswith(MAY_BE_EMPTY)
    targets = panel.get("targets") or []
    if not targets:
        return PanelCheck(title, 0, may_be_empty, "no query")
    series = 0
    for target in targets:
        expr = str(target.get("expr", ""))
        if unknown := sorted(m for m in _METRIC.findall(expr) if not family(m) & known):
            return PanelCheck(title, series, may_be_empty, f"unknown metric {', '.join(unknown)}")
        try:
            series += len(prometheus.query(expression(expr)))
        except PrometheusError as e:
            return PanelCheck(title, series, may_be_empty, str(e))
    if series == 0 and not may_be_empty:
        return PanelCheck(title, 0, may_be_empty, "no data, and its description does not say it can be empty")
    return PanelCheck(title, series, may_be_empty)


def check_dashboard(prometheus: LocalPrometheus, board: dict[str, Any] | None = None) -> list[PanelCheck]:
    board = dashboard() if board is None else board
    known = scraped_metrics(prometheus)
    return [check_panel(prometheus, panel, known) for panel in board.get("panels") or []]


def print_dashboard(prometheus: LocalPrometheus | None, out: TextIO) -> bool:
    """The demo summary's dashboard lines; False when a panel fails."""
    if prometheus is None:
        return True
    try:
        checks = check_dashboard(prometheus)
    except PrometheusError as e:
        print(f"   dashboard: {e}", file=out)
        return False
    with_data = sum(1 for c in checks if c.series and not c.problem)
    print(f"   Grafana dashboard ({DASHBOARDS}): {len(checks)} panels, {with_data} with data, "
          f"{sum(1 for c in checks if not c.series and not c.problem)} empty as their description allows", file=out)
    for c in checks:
        said = f"!! {c.problem}" if c.problem else (f"{c.series} series" if c.series else "empty (allowed)")
        print(f"     {c.title}: {said}", file=out)
    return not any(c.problem for c in checks)
