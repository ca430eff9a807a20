"""Series as promtool's unit tests write them, and promtool itself: the Job series scraped from the functions
(the PodMonitor crefn-metrics: `exporter="cre-functions"`) and the same from CRE's controller in observe mode."""

from __future__ import annotations

import subprocess
from pathlib import Path

from localstack.observability.prometheus import find_promtool

JOB = {"namespace": "ml", "job": "llama"}
OURS = {**JOB, "workflow": "nightly-cert", "exporter": "cre-functions", "service": "crefn-metrics",
        "instance": "10.0.0.7:8080"}
"""A Job series as the PodMonitor crefn-metrics scrapes it."""
CRES = {**JOB, "workflow": "nightly-cert", "service": "cre-controller-manager-metrics-service",
        "instance": "10.0.0.9:8443"}
"""The same series from CRE's controller (observe mode), as a ServiceMonitor with honorLabels scrapes it."""


def series(name: str, labels: dict[str, str]) -> str:
    return name + "{" + ", ".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def promtool(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """promtool's answer (a missing promtool raises, naming how to install it)."""
    return subprocess.run([find_promtool(), *map(str, args)], capture_output=True, text=True, check=False)
