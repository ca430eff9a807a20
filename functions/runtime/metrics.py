"""Prometheus metrics: the only module that imports `prometheus_client`, and only when scraped.

Two kinds, because a Knative function scaled to zero keeps no numbers:
- The process's counters (`ProcessMetrics`), which every function target answers `GET /metrics` with; made on
  first use and kept for the process's life, one set per gunicorn worker (so `WORKERS=1`), as plain numbers
  (`functions.runtime.series`) that a scrape collects as prometheus-client's metric families.
- The Jobs' state (`expose_jobs`), computed at scrape time by the `metrics` target from one LIST of the managed
  Jobs. Names, labels and help texts are CRE's (`pkg/controller/metrics.go`, `metrics_status.go`), so CRE's
  dashboards and alerts read them unchanged; `crefn_job_restarts` and `crefn_job_info` are the project's own.
Each scrape exposes them in a registry of its own, in the format of the scraper's `Accept` header (Prometheus text
or OpenMetrics). Each metric and how it is read: docs/operating.md#metrics
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from events.types import CRE_GROUP_DEFAULT, workflow_label
from functions.domain.conditions import true_exclusive
from functions.runtime.series import counter, gauge, histogram

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""Seconds; the last bucket is the Services' request timeout."""
JOB_STATES = (("in_progress", "InProgress"), ("succeeded", "Succeeded"), ("failed", "Failed"))
"""`nvcre_job_status`'s `status` label values (CRE's) and the exclusive condition each stands for."""


class Exposition(NamedTuple):
    body: bytes
    content_type: str


class ProcessMetrics:
    """The counters of one process; a collector of prometheus-client's (`collect`) for a scrape's registry."""

    def __init__(self) -> None:
        self.events = counter(
            "crefn_events_total", "Requests a function answered (GET /metrics is not one), by event type, HTTP "
            "answer and outcome: ok, wait (a designed wait), retry, refused or error.",
            ("function", "type", "answer", "outcome"))
        self.duration = histogram(
            "crefn_request_duration_seconds", "Time from a request's arrival to its answer.", ("function",),
            DURATION_BUCKETS)
        self.decisions = counter(
            "crefn_decisions_total", "What the handler made of an event: reply:<type>, nothing, wait, conflict, "
            "gone or error:<class>.", ("function", "decision"))
        self.kube_requests = counter(
            "crefn_kube_requests_total", "Kubernetes API calls, by verb, resource (plural[/subresource]) and "
            "HTTP status (error when the API server could not be reached).", ("verb", "resource", "code"))
        self.deliveries = counter(
            "crefn_alert_deliveries_total", "Batches of alerts sent to a sink, by result: delivered, refused, "
            "unavailable or throttled.", ("sink", "result"))
        self.alert_sinks = gauge(
            "crefn_alert_sinks_configured", "Alert sinks the function sends Job alerts to (Alertmanager, Slack, "
            "PagerDuty, a CloudEvents sink); 0: its alerts reach no one.", ("function",))
        self.journal_bytes = gauge(
            "crefn_dead_letters_file_bytes", "Size in bytes of the dead-letter file the recorder appends to, by "
            "path (absent when it writes no file).", ("path",))
        self.dropped = counter(
            "crefn_dead_letters_dropped_total", "Dead letters the recorder dropped with its oldest rotated file "
            "(the file at its cap, --keep rotated files kept), by path of the file.", ("path",))
        self.restarts_refused = counter(
            "crefn_restarts_refused_total", "Failures of a Job the restart rule did not restart, by why: "
            "no-checkpoint, exhausted (maxRestarts reached) or no-evidence (no GoodputMeasurement reports a "
            "checkpoint, while CREFN_REQUIRE_CHECKPOINT_EVIDENCE is true).", ("why",))
        self.parity = counter(
            "crefn_parity_checks_total", "Observe mode: verdict fields of CRE's compared with the functions', by "
            "field and result (agree, differ); each check counted once in the process.", ("field", "result"))
        self.build_info = gauge(
            "crefn_build_info", "1: the release this process runs (version), the git commit it was built from "
            "(revision, `unknown` when the build did not say) and its CREFN_MODE.", ("version", "revision", "mode"))
        self.dropped_bytes = counter(
            "crefn_dead_letters_dropped_bytes_total", "Bytes of the oldest rotated dead-letter files the recorder "
            "dropped, by path of the file.", ("path",))

    def collect(self) -> Iterator[Metric]:
        """Each family as prometheus-client's `Counter`, `Gauge` or `Histogram` collects it."""
        from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
        from prometheus_client.utils import floatToGoString

        kinds = {"counter": CounterMetricFamily, "gauge": GaugeMetricFamily, "histogram": HistogramMetricFamily}
        for family in vars(self).values():
            metric = kinds[family.kind](family.name, family.help, labels=family.label_names)
            bounds = [floatToGoString(b) for b in family.bounds]
            for key, value, counts in family.snapshot():
                if family.kind == "histogram":  # its value is the sum of its observations
                    metric.add_metric(list(key), list(zip(bounds, counts, strict=True)), value)
                else:
                    metric.add_metric(list(key), value)
            yield metric


_made = threading.Lock()
_metrics: list[ProcessMetrics] = []
_children: dict[tuple[str, ...], tuple[Any, ...]] = {}
"""Labelled series by label values, so a request does not look them up (under the family's lock) again."""


def process() -> ProcessMetrics:
    """This process's counters, made on first use (once, whichever thread asks first)."""
    if not _metrics:
        with _made:
            if not _metrics:
                _metrics.append(ProcessMetrics())
    return _metrics[0]


def count_event(function: str, event_type: str, answer: int, outcome: str, seconds: float) -> None:
    key = ("event", function, event_type, str(answer), outcome)
    if (series := _children.get(key)) is None:
        metrics = process()
        series = _children[key] = (metrics.events.labels(*key[1:]), metrics.duration.labels(function))
    series[0].inc()
    series[1].observe(seconds)


def count_decision(function: str, decision: str) -> None:
    key = ("decision", function, decision)
    if (series := _children.get(key)) is None:
        series = _children[key] = (process().decisions.labels(function, decision),)
    series[0].inc()


def count_restart_refused(why: str) -> None:
    process().restarts_refused.labels(why).inc()


def count_kube_request(verb: str, resource: str, code: str) -> None:
    process().kube_requests.labels(verb, resource, code).inc()


def count_delivery(sink: str, result: str) -> None:
    process().deliveries.labels(sink, result).inc()


def set_alert_sinks(function: str, count: int) -> None:
    process().alert_sinks.labels(function).set(count)


def set_build_info(version: str, revision: str, mode: str) -> None:
    """What this process runs: one series, 1 (a process serves one target, in one mode)."""
    gauge = process().build_info
    gauge.clear()
    gauge.labels(version, revision, mode).set(1)


def set_journal_bytes(path: str, size: int) -> None:
    process().journal_bytes.labels(path).set(size)


def count_parity(fields: Iterable[tuple[str, str]]) -> None:
    """A parity check's fields, by result."""
    for field, result in fields:
        process().parity.labels(field, result).inc()


def count_dropped(path: str, lines: int, size: int) -> None:
    """A rotated file of `lines` dead letters and `size` bytes dropped (the oldest, past `--keep`)."""
    metrics = process()
    metrics.dropped.labels(path).inc(lines)
    metrics.dropped_bytes.labels(path).inc(size)


def expose_process(accept: str = "") -> Exposition:
    """The process's counters in the format the scraper accepts."""
    return expose((process(),), accept)


def expose_jobs(jobs: Iterable[Mapping[str, Any]], accept: str = "", cre_group: str = CRE_GROUP_DEFAULT) -> Exposition:
    """The Jobs' state (from a LIST, read now), then this process's own counters."""
    return expose((JobStates(tuple(jobs), workflow_label(cre_group)), process()), accept)


def expose(collectors: Iterable[Any], accept: str) -> Exposition:
    """What the collectors collect, in a registry of this scrape, in the format the scraper accepts."""
    from prometheus_client import CollectorRegistry
    from prometheus_client.exposition import choose_encoder

    registry = CollectorRegistry(auto_describe=False)
    for collector in collectors:
        registry.register(collector)
    encoder, content_type = choose_encoder(accept)
    return Exposition(encoder(registry), content_type)


class JobStates:
    """The Jobs' state gauges, from the Jobs as listed (only what is read here: name, namespace, the
    workflow label, `status.conditions`, `status.restartCount`, `status.failedNodes`)."""

    def __init__(self, jobs: tuple[Mapping[str, Any], ...],
                 workflow_key: str = workflow_label(CRE_GROUP_DEFAULT)) -> None:
        self.jobs = jobs
        self.workflow_key = workflow_key

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.metrics_core import GaugeMetricFamily

        status = GaugeMetricFamily(
            "nvcre_job_status", "Current status of NVCRE jobs (1 = current status, 0 = not current status)",
            labels=("namespace", "job", "workflow", "status"))
        failed_nodes = GaugeMetricFamily(
            "nvcre_job_failed_nodes", "Number of nodes with detected hardware failures per job",
            labels=("namespace", "job", "workflow"))
        restarts = GaugeMetricFamily(
            "crefn_job_restarts", "The CRE Job's status.restartCount.", labels=("namespace", "job"))
        info = GaugeMetricFamily(
            "crefn_job_info", "1 per CRE Job: the reason of its True exclusive condition and its attempt "
            "(restartCount).", labels=("namespace", "job", "reason", "attempt"))
        for job in self.jobs:
            meta, st = _mapping(job.get("metadata")), _mapping(job.get("status"))
            where = [str(meta.get("namespace", "")), str(meta.get("name", ""))]
            workflow = str(_mapping(meta.get("labels")).get(self.workflow_key, ""))
            conditions = [dict(c) for c in st.get("conditions") or () if isinstance(c, Mapping)]
            true = true_exclusive(conditions)
            if true is not None:
                for label, cond_type in JOB_STATES:
                    status.add_metric([*where, workflow, label], 1.0 if true.type == cond_type else 0.0)
            if any(c.get("type") == "HardwareFailed" and c.get("status") == "True" for c in conditions):
                failed_nodes.add_metric([*where, workflow], float(len(_node_names(st.get("failedNodes")))))
            attempt = _count(st.get("restartCount"))
            restarts.add_metric(where, float(attempt))
            info.add_metric([*where, true.reason if true is not None else "", str(attempt)], 1.0)
        yield from (status, failed_nodes, restarts, info)


def _node_names(nodes: Any) -> set[str]:
    """The distinct node names of `status.failedNodes` (CRE's `FailedNodeNames`: empty names skipped)."""
    entries = nodes if isinstance(nodes, list) else []
    return {str(n["name"]) for n in entries if isinstance(n, Mapping) and n.get("name")}


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
