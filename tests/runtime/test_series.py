"""`functions.runtime.series`: the process's metric families, kept as plain numbers, expose exactly what
prometheus-client's own `Counter`, `Gauge` and `Histogram` expose for the same recordings, in both formats (series
in the order first used, an observation on a bucket's bound counted in that bucket, a gauge cleared); a family
refuses label values that do not match its labels, as prometheus-client does."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    enable_created_metrics,
)
from prometheus_client.exposition import generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics

from functions.runtime.metrics import DURATION_BUCKETS, ProcessMetrics
from functions.runtime.series import Family, counter, histogram

NAMES = sorted(vars(ProcessMetrics()))
Op = tuple[str, tuple[str, ...], str, float]


@pytest.fixture(autouse=True)
def no_created_series() -> Iterator[None]:
    """prometheus-client's `_created` series, which the functions never expose, off for its own metrics here."""
    disable_created_metrics()
    yield
    enable_created_metrics()


@st.composite
def recordings(draw: st.DrawFn) -> list[Op]:
    ops: list[Op] = []
    families = vars(ProcessMetrics())
    for _ in range(draw(st.integers(0, 60))):
        name = draw(st.sampled_from(NAMES))
        family: Family = families[name]
        labels = tuple(draw(st.sampled_from(["a", "b", "7", ""])) for _ in family.label_names)
        if family.kind == "histogram":
            amount = draw(st.sampled_from(DURATION_BUCKETS) | st.floats(0, 120, allow_nan=False))
            ops.append((name, labels, "observe", amount))
        elif family.kind == "gauge":
            op = draw(st.sampled_from(["set", "set", "clear"]))
            ops.append((name, labels, op, draw(st.integers(0, 10**9) | st.floats(0, 1e9))))
        else:
            ops.append((name, labels, "inc", draw(st.integers(1, 100) | st.floats(0, 1e6))))
    return ops


def theirs() -> tuple[CollectorRegistry, dict[str, Any]]:
    """The same families as prometheus-client's own metrics, in a registry of theirs."""
    registry = CollectorRegistry()
    kinds = {"counter": Counter, "gauge": Gauge}
    made: dict[str, Any] = {}
    for name, family in vars(ProcessMetrics()).items():
        if family.kind == "histogram":
            made[name] = Histogram(family.name, family.help, family.label_names, registry=registry,
                                   buckets=family.bounds)
        else:
            made[name] = kinds[family.kind](family.name, family.help, family.label_names, registry=registry)
    return registry, made


def record(metric: Any, labels: tuple[str, ...], op: str, amount: float) -> None:
    if op == "clear":
        metric.clear()
    elif op == "set":
        metric.labels(*labels).set(amount)
    else:
        getattr(metric.labels(*labels), op)(amount)


@settings(max_examples=100, deadline=None)
@given(recordings())
def test_the_families_expose_what_prometheus_client_exposes(ops: list[Op]) -> None:
    ours, (registry, made) = ProcessMetrics(), theirs()
    for name, labels, op, amount in ops:
        record(getattr(ours, name), labels, op, amount)
        record(made[name], labels, op, amount)
    exposed = CollectorRegistry(auto_describe=False)
    exposed.register(ours)
    assert generate_latest(exposed).decode() == generate_latest(registry).decode()
    assert openmetrics(exposed).decode() == openmetrics(registry).decode()


def test_an_observation_on_a_bound_is_counted_in_that_bucket_and_the_sum_is_kept() -> None:
    family = histogram("seconds", "help", ("function",), (0.5, 1.0))
    for amount in (0.5, 0.5000001, 1.0, 7.0):
        family.labels("phase").observe(amount)
    assert family.snapshot() == [(("phase",), 9.0000001, [1.0, 3.0, 4.0])]


def test_label_values_are_strings_and_their_number_is_the_familys() -> None:
    family = counter("events_total", "help", ("function", "answer"))
    family.labels("phase", 200).inc()
    family.labels("phase", "200").inc(2)
    assert family.snapshot() == [(("phase", "200"), 3.0, [])]
    with pytest.raises(ValueError, match="events_total: 1 label values for 2 labels"):
        family.labels("phase")
