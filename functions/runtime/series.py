"""A process's metric families as plain numbers; `functions.runtime.metrics` names them and exposes them.

Kept as prometheus-client's `Counter`, `Gauge` and `Histogram` keep theirs: label values made `str`, a series made
on its first use and listed in that order, an observation counted in the first bucket whose bound is not below it
(the last bound +Inf). The library itself is loaded by a scrape only: a function answers its first event before
anyone scrapes it, and importing prometheus-client was about 12 ms of every cold start (docs/cost.md).
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from itertools import accumulate
from typing import Any, Literal

Kind = Literal["counter", "gauge", "histogram"]


class Series:
    """One series: its value (a histogram's: the sum of its observations) and a histogram's count per bucket."""

    __slots__ = ("bounds", "counts", "lock", "value")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.value = 0.0
        self.bounds = bounds
        self.counts = [0.0] * len(bounds)
        self.lock = threading.Lock()

    def inc(self, amount: float = 1.0) -> None:
        with self.lock:
            self.value += amount

    def set(self, value: float) -> None:
        self.value = float(value)

    def observe(self, amount: float) -> None:
        with self.lock:
            self.counts[bisect_left(self.bounds, amount)] += 1.0
            self.value += amount


class Family:
    """A metric family: its series by label values."""

    __slots__ = ("bounds", "help", "kind", "label_names", "lock", "name", "series")

    def __init__(self, kind: Kind, name: str, help: str, label_names: tuple[str, ...],
                 buckets: tuple[float, ...] = ()) -> None:
        self.kind, self.name, self.help, self.label_names = kind, name, help, label_names
        self.bounds = (*buckets, float("inf")) if kind == "histogram" else ()
        self.series: dict[tuple[str, ...], Series] = {}
        self.lock = threading.Lock()

    def labels(self, *values: Any) -> Series:
        key = tuple(str(v) for v in values)
        if (series := self.series.get(key)) is None:
            if len(key) != len(self.label_names):
                raise ValueError(f"{self.name}: {len(key)} label values for {len(self.label_names)} labels")
            with self.lock:
                series = self.series.setdefault(key, Series(self.bounds))
        return series

    def clear(self) -> None:
        with self.lock:
            self.series.clear()

    def snapshot(self) -> list[tuple[tuple[str, ...], float, list[float]]]:
        """Each series now: its label values, its value and a histogram's cumulative counts, bucket by bucket."""
        with self.lock:
            series = list(self.series.items())
        taken = []
        for key, one in series:
            with one.lock:
                taken.append((key, one.value, list(accumulate(one.counts))))
        return taken


def counter(name: str, help: str, labels: tuple[str, ...]) -> Family:
    return Family("counter", name, help, labels)


def gauge(name: str, help: str, labels: tuple[str, ...]) -> Family:
    return Family("gauge", name, help, labels)


def histogram(name: str, help: str, labels: tuple[str, ...], buckets: tuple[float, ...]) -> Family:
    return Family("histogram", name, help, labels, buckets)
