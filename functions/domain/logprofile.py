"""A LogProfile compiled as CRE's goodput parser compiles it (`NewProfileParser`): its patterns in CRE's order, each
a Go RE2 pattern (`functions.runtime.patterns`) whose `example`, when given, it must match, with the units of its
timings; and the typed reads of a capture (Go's `Atoi` and `ParseFloat`, 0 when they fail). Errors are CRE's
texts: `pattern <key>: invalid regex: <err>`, `pattern <key>: example does not match regex\\n  regex:   <regex>\\n
example: <example>`. Pure. How the functions read the logs: docs/functions.md#measurements-from-the-logs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from functions.runtime.patterns import BadPattern, Pattern, compile_go

GOODPUT_KEYS = ("trainingStep", "checkpointSave", "checkpointDone", "checkpointRestore", "checkpointLoaded",
                "applicationStart", "warmupStep")
"""The GoodputMeasurement's patterns, in the order CRE compiles them."""
UNITS = {"s": 1.0, "ms": 1e3, "us": 1e6}
"""A timing capture's unit → its divisor to seconds (CRE divides: 34356.5 ms is 34.3565 s, not 34.356500000000004)."""


class ProfileError(ValueError):
    """A LogProfile the parser cannot use, in CRE's words."""


@dataclass(frozen=True)
class EventPattern:
    pattern: Pattern
    units: Mapping[str, str] = field(default_factory=dict)

    def seconds(self, captured: Mapping[str, str], name: str) -> float:
        """A timing capture in seconds, by the pattern's `units` (seconds when unset)."""
        return go_float(captured.get(name)) / UNITS[self.units.get(name, "s")]


@dataclass(frozen=True)
class Profile:
    name: str
    layout: str
    patterns: Mapping[str, EventPattern]
    warmup_steps: int = 0
    log_interval: int = 0
    container: str = ""
    multi: bool = False
    replicated_job: str = ""


def compile_pattern(key: str, spec: Mapping[str, Any]) -> EventPattern:
    regex, example = str(spec["regex"]), str(spec.get("example") or "")
    try:
        pattern = compile_go(regex)
    except BadPattern as e:
        raise ProfileError(f"pattern {key}: invalid regex: {e}") from None
    if example and pattern.search(example) is None:
        raise ProfileError(f"pattern {key}: example does not match regex\n  regex:   {regex}\n  example: {example}")
    return EventPattern(pattern, {str(k): str(v) for k, v in (spec.get("units") or {}).items()})


def goodput_profile(raw: Mapping[str, Any]) -> Profile:
    """The profile (a LogProfile object as read) for a GoodputMeasurement; ProfileError as CRE's parser says."""
    spec = raw.get("spec") or {}
    given = spec.get("patterns") or {}
    patterns = {key: compile_pattern(key, given[key]) for key in GOODPUT_KEYS if given.get(key)}
    strategy = spec.get("workerStrategy") or {}
    return Profile(name=raw["metadata"]["name"], layout=str(spec["timestamp"]["layout"]), patterns=patterns,
                   warmup_steps=int(spec.get("warmupSteps") or 0), log_interval=int(spec.get("logInterval") or 0),
                   container=str(spec.get("containerName") or ""), multi=strategy.get("type") == "Multi",
                   replicated_job=str(strategy.get("replicatedJobName") or ""))


def parse_int(text: str | None) -> int | None:
    """Go's `strconv.Atoi` (a 64-bit integer, an optional sign) of the trimmed text; None when it fails (or there
    is no text: a capture that took no part)."""
    text = (text or "").strip()
    digits = text[1:] if text[:1] in "+-" else text
    if not digits or not digits.isascii() or not digits.isdigit():
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def parse_float(text: str | None) -> float | None:
    """Go's `strconv.ParseFloat(…, 64)` of the trimmed text; None when it fails (out of range included, or no
    text)."""
    text = (text or "").strip()
    if not text or "_" in text or not text.isascii():
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return None if math.isinf(value) and text.lstrip("+-").lower() not in ("inf", "infinity") else value


def go_int(text: str | None) -> int:
    """A capture as CRE's `getIntField` reads it: `parse_int`, 0 when it fails."""
    return parse_int(text) or 0


def go_float(text: str | None) -> float:
    """A capture as CRE's `getFloatField` reads it: `parse_float`, 0 when it fails."""
    return parse_float(text) or 0.0
