"""What a served function counted of its answers (`crefn_events_total` on its own `GET /metrics`), by answer and
outcome, and what one request moved: a designed wait is `("503", "wait")`, a failure `("503", "error")`; and what
the test process's own counters hold for one series, as a scrape of them exposes it."""

from __future__ import annotations

import urllib.request
from collections.abc import Callable
from typing import TypeVar

from prometheus_client.parser import text_string_to_metric_families

T = TypeVar("T")
Counted = dict[tuple[str, str], float]


def answers(url: str, function: str) -> Counted:
    """The function's answers so far, (answer, outcome) → count, summed over event types."""
    with urllib.request.urlopen(url.rstrip("/") + "/metrics", timeout=10) as resp:
        text = resp.read().decode()
    counted: Counted = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "crefn_events_total" and s.labels["function"] == function:
                where = (s.labels["answer"], s.labels["outcome"])
                counted[where] = counted.get(where, 0) + s.value
    return counted


def moved(url: str, function: str, request: Callable[[], T]) -> tuple[T, Counted]:
    """`request()`'s result, and the answers the function counted meanwhile (what changed, by how much)."""
    before = answers(url, function)
    result = request()
    after = answers(url, function)
    return result, {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}


def counted_here(name: str, labels: dict[str, str]) -> float:
    """What this process's own counters (`functions.runtime.metrics.process`, the functions run in it) hold for the
    series `name{labels}`: 0 before its first count."""
    from functions.runtime.metrics import expose_process

    for family in text_string_to_metric_families(expose_process().body.decode()):
        for s in family.samples:
            if s.name == name and s.labels == labels:
                return s.value
    return 0.0
