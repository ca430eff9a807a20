"""The reads of the measurement producer (`measure`), which the handlers never make themselves: the
GoodputMeasurements, a LogProfile, the pods of a Job's workload (JobSet's `jobset-name` label), and a window of a
container's log with the kubelet's timestamps, as CRE's fetcher asks for it (`sinceTime`, at most 8 MiB)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from functions.domain.gotime import NS, rfc3339
from functions.runtime.context import Context
from functions.runtime.resources import PODS, cre_goodput, cre_logprofiles

LOG_BYTES = 8 << 20
"""CRE's `DefaultMaxLogBytes`: a window's head, 8 MiB."""
READ_SECONDS = 30
"""A window's read, bounded (CRE's 2 minutes would outlast a Knative request's time)."""
JOBSET = "jobset.sigs.k8s.io/jobset-name"


def list_goodputs(ctx: Context) -> list[dict[str, Any]]:
    return ctx.gateway.list_all(cre_goodput(ctx.settings.cre_group))


def read_goodput(ctx: Context, namespace: str, name: str) -> dict[str, Any] | None:
    return ctx.gateway.get(cre_goodput(ctx.settings.cre_group), namespace, name)


def read_logprofile(ctx: Context, name: str) -> dict[str, Any] | None:
    return ctx.gateway.get(cre_logprofiles(ctx.settings.cre_group), None, name)


def read_workload_pods(ctx: Context, namespace: str, workload: str) -> list[dict[str, Any]]:
    return ctx.gateway.list_all(PODS, namespace, f"{JOBSET}={workload}")


def read_log_window(ctx: Context, pod: Mapping[str, Any], container: str, since: int) -> list[str]:
    """The lines a container logged at or after `since` (ns), each with the kubelet's time."""
    meta = pod["metadata"]
    since_text = rfc3339(since - since % NS) if since > 0 else ""
    return ctx.gateway.read_log_since(meta["namespace"], meta["name"], container, since_text, LOG_BYTES,
                                      READ_SECONDS).splitlines()
