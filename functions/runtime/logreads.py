"""The reads of the measurement producer (`measure`), which the handlers never make themselves: the
GoodputMeasurements, a LogProfile, the pods of a Job's workload (JobSet's `jobset-name` label), and a window of a
container's log with the kubelet's timestamps, as CRE's fetcher asks for it (`sinceTime`, at most 8 MiB)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from functions.domain.gotime import NS, kubelet_time, rfc3339
from functions.domain.measurement_objects import bandwidth_measurements
from functions.runtime.context import Context
from functions.runtime.errors import PermanentError
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


def list_bandwidths(ctx: Context) -> list[dict[str, Any]]:
    return ctx.gateway.list_all(bandwidth_measurements(ctx.settings.cre_group))


def read_bandwidth(ctx: Context, namespace: str, name: str) -> dict[str, Any] | None:
    return ctx.gateway.get(bandwidth_measurements(ctx.settings.cre_group), namespace, name)


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


PAGES = 64
"""CRE's `ReadAll`: at most 64 pages of 8 MiB."""


class Unpageable(PermanentError):
    """A log that cannot be read in full, in CRE's words (`log cannot be read in full: …`)."""


def second_of(line: str) -> str:
    """The kubelet time's second of a line read with timestamps ("" without one)."""
    at, _ = kubelet_time(line + " ")
    return "" if at is None else rfc3339(at - at % NS)


def read_log_all(ctx: Context, pod: Mapping[str, Any], container: str, page: int = LOG_BYTES) -> list[str]:
    """A container's whole log, page by page as CRE's `ReadAll` reads it: each page after the first from the second
    of the last complete line, the lines of that second already read skipped by count, a line cut by the limit
    read again whole, a page that is all one second read with twice the limit (up to four times)."""
    meta, since, limit = pod["metadata"], "", page
    lines: list[str] = []
    for _ in range(PAGES):
        text = ctx.gateway.read_log_since(meta["namespace"], meta["name"], container, since, limit, READ_SECONDS)
        full = len(text.encode()) >= limit
        got = text.split("\n")
        got = got[:-1] if full or not got[-1] else got  # the cut line (or the empty tail) is left out
        seen = len([line for line in lines if since and second_of(line) == since])
        fresh = got[seen:] if since else got
        if not full:
            return lines + fresh
        if not fresh or not (last := second_of(fresh[-1])):
            if fresh and not second_of(fresh[-1]):
                raise Unpageable("log cannot be read in full: line without a timestamp in a truncated page")
            if limit >= 4 * page:
                raise Unpageable(f"log cannot be read in full: more than {limit} bytes logged within one second")
            limit *= 2
            continue
        lines, since, limit = lines + fresh, last, page
    raise Unpageable(f"log cannot be read in full: more than {PAGES} pages")
