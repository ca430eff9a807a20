"""Go durations (`time.ParseDuration`), as CRE's CRDs write them: `90s`, `1m30s`, `1.5h`, `300ms`."""

from __future__ import annotations

import re
from datetime import timedelta

_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_go_duration(text: str) -> timedelta:
    """A Go duration; ValueError naming the text when it is not one (a bare `0` is zero)."""
    value = text.strip()
    sign = -1 if value.startswith("-") else 1
    body = value.lstrip("+-")
    if body == "0":
        return timedelta(0)
    pos, seconds = 0, 0.0
    for match in _PART.finditer(body):
        if match.start() != pos:
            break
        seconds += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        pos = match.end()
    if not body or pos != len(body):
        raise ValueError(f"not a duration: {text!r} (e.g. 90s, 1m30s, 24h)")
    return timedelta(seconds=sign * seconds)


def positive_duration(text: str | None, fallback: timedelta) -> timedelta:
    """A positive Go duration, or `fallback` when the text is empty, not a duration, or not positive."""
    if not text:
        return fallback
    try:
        value = parse_go_duration(text)
    except ValueError:
        return fallback
    return value if value > timedelta(0) else fallback
