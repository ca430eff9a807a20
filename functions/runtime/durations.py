"""Go durations (`time.ParseDuration`), as CRE's CRDs write them: `90s`, `1m30s`, `1.5h`, `300ms`.

A Go duration is a count of nanoseconds in an int64: like Go, a text past 2562047h47m16.854775807s (either
way) is not a duration, and fractions of a nanosecond are dropped; the timedelta keeps whole microseconds."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

_PART = re.compile(r"(\d*)(?:\.(\d*))?(ns|us|µs|μs|ms|s|m|h)")
_UNIT_NANOS = {"ns": 1, "us": 10**3, "µs": 10**3, "μs": 10**3, "ms": 10**6, "s": 10**9, "m": 60 * 10**9,
               "h": 3600 * 10**9}
MAX_NANOS = 2**63 - 1
"""Go's `time.Duration` maximum (2562047h47m16.854775807s); its minimum is one nanosecond further."""


def parse_go_duration(text: str) -> timedelta:
    """A Go duration; ValueError naming the text when it is not one (a bare `0` is zero), or is out of Go's
    range."""
    value = text.strip()
    sign = -1 if value.startswith("-") else 1
    body = value.lstrip("+-")
    if body == "0":
        return timedelta(0)
    pos, nanos = 0, 0
    for match in _PART.finditer(body):
        whole, fraction, unit = match.groups()
        if match.start() != pos or not (whole or fraction):
            break
        scale, digits = _UNIT_NANOS[unit], (fraction or "")[:18]  # as Go, digits past a nanosecond's are dropped
        whole = whole.lstrip("0")
        nanos += (int(whole or "0") * scale if len(whole) <= 19 else MAX_NANOS + 2) + int(digits or "0") * scale \
            // 10 ** len(digits)
        pos = match.end()
    if not body or pos != len(body):
        raise ValueError(f"not a duration: {text!r} (e.g. 90s, 1m30s, 24h)")
    if nanos > MAX_NANOS + (sign < 0):
        raise ValueError(f"not a duration: {text!r} is longer than Go's longest (2562047h47m16.854775807s)")
    return timedelta(microseconds=sign * (nanos // 1000))


def positive_duration(text: str | None, fallback: timedelta) -> timedelta:
    """A positive Go duration, or `fallback` when the text is empty, not a duration (out of Go's range
    included), or not positive."""
    if not text:
        return fallback
    try:
        value = parse_go_duration(text)
    except ValueError:
        return fallback
    return value if value > timedelta(0) else fallback


_GO_FLOAT = re.compile(r"\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)")


def go_float(value: Any) -> float:
    """A status string as CRE reads it (`fmt.Sscanf(s, "%f")`): the leading number, 0 when there is none."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    match = _GO_FLOAT.match(value) if isinstance(value, str) else None
    return float(match.group(1)) if match else 0.0
