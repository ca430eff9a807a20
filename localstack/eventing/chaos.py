"""Chaos for the local Broker: `python -m localstack dev --chaos drop=0.1,dup=0.2,reorder=0.2,delay=0-500ms,seed=7`.

Each delivery (an event matched by a Trigger) is, independently:
- dropped with probability `drop` (lost for good: neither delivered nor retried nor dead-lettered,
  and counted; only the resync tick can make up for it);
- duplicated with probability `dup` (delivered twice, the same event id, as a Broker redelivers);
- held back with probability `reorder` by one more `delay` maximum, so later events overtake it;
- delayed by a uniform draw from `delay` (`0-500ms`, `1s`, `0.2-2s`; a bare number is milliseconds,
  and a range's unit applies to both ends).
The draws are made from `seed` and the delivery's trigger, type, subject and how many such
deliveries came before it: the same event stream under the same seed meets the same fate, however the
threads interleave.
"""

from __future__ import annotations

import hashlib
import random
import re
import threading
from collections import Counter
from dataclasses import dataclass, field

DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s)?")
KEYS = ("drop", "dup", "reorder", "delay", "seed")


class ChaosError(ValueError):
    """A chaos spec that cannot be read: one line saying why."""


@dataclass(frozen=True)
class Fate:
    copies: int
    """0 (dropped), 1 or 2 (duplicated)."""
    delay: float
    reordered: bool = False


@dataclass(frozen=True)
class Chaos:
    drop: float = 0.0
    dup: float = 0.0
    reorder: float = 0.0
    delay: tuple[float, float] = (0.0, 0.0)
    seed: int = 0

    @classmethod
    def parse(cls, spec: str) -> Chaos:
        values: dict[str, object] = {}
        for part in filter(None, (p.strip() for p in spec.split(","))):
            key, sep, value = part.partition("=")
            if not sep or key not in KEYS:
                raise ChaosError(f"chaos: {part!r} is not one of {', '.join(k + '=' for k in KEYS)}")
            if key in values:
                raise ChaosError(f"chaos: {key} is given twice")
            values[key] = parse_value(key, value)
        return cls(**values)  # type: ignore[arg-type]

    def __str__(self) -> str:
        low, high = self.delay
        return (f"drop={self.drop:g},dup={self.dup:g},reorder={self.reorder:g},"
                f"delay={low * 1000:g}-{high * 1000:g}ms,seed={self.seed}")


def parse_value(key: str, value: str) -> object:
    if key == "seed":
        if not value.lstrip("-").isdigit():
            raise ChaosError(f"chaos: seed={value!r} is not an integer")
        return int(value)
    if key == "delay":
        low, _, high = value.partition("-")
        high = high or low
        unit = DURATION.fullmatch(high.strip())
        if unit and unit.group(2) and DURATION.fullmatch(low.strip()) and not low.strip().endswith(("s", "ms")):
            low += unit.group(2)  # 0.2-2s: the unit of the range's end applies to both
        bounds = (seconds(low), seconds(high))
        if bounds[0] > bounds[1]:
            raise ChaosError(f"chaos: delay={value!r} runs backwards")
        return bounds
    try:
        share = float(value)
    except ValueError:
        raise ChaosError(f"chaos: {key}={value!r} is not a probability") from None
    if not 0 <= share <= 1:
        raise ChaosError(f"chaos: {key}={value!r} is not between 0 and 1")
    return share


def seconds(text: str) -> float:
    match = DURATION.fullmatch(text.strip())
    if match is None:
        raise ChaosError(f"chaos: {text!r} is not a duration such as 500ms or 2s")
    number, unit = float(match.group(1)), match.group(2) or "ms"
    return number / 1000 if unit == "ms" else number


@dataclass
class ChaosCounts:
    """What the chaos did, for summaries: deliveries decided, dropped, duplicated, held back."""

    decided: int = 0
    dropped: int = 0
    duplicated: int = 0
    reordered: int = 0
    dropped_types: Counter[str] = field(default_factory=Counter)


class Fates:
    """The fate of each delivery, drawn from the seed and the delivery's identity."""

    def __init__(self, chaos: Chaos) -> None:
        self.chaos = chaos
        self.counts = ChaosCounts()
        self._seen: Counter[tuple[str, str, str]] = Counter()
        self._lock = threading.Lock()

    def decide(self, trigger: str, event_type: str, subject: str) -> Fate:
        with self._lock:
            key = (trigger, event_type, subject)
            self._seen[key] += 1
            nth = self._seen[key]
        digest = hashlib.blake2b(f"{self.chaos.seed}|{trigger}|{event_type}|{subject}|{nth}".encode(),
                                 digest_size=8).digest()
        rng = random.Random(int.from_bytes(digest, "big"))
        c = self.chaos
        drop, dup, reorder, delay = rng.random(), rng.random(), rng.random(), rng.uniform(*c.delay)
        with self._lock:
            self.counts.decided += 1
            if drop < c.drop:
                self.counts.dropped += 1
                self.counts.dropped_types[event_type] += 1
                return Fate(0, 0.0)
            reordered = reorder < c.reorder
            if reordered:
                self.counts.reordered += 1
                delay += c.delay[1] + max(c.delay[1], 0.05)
            copies = 2 if dup < c.dup else 1
            if copies == 2:
                self.counts.duplicated += 1
            return Fate(copies, delay, reordered)
