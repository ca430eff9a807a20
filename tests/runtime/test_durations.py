"""Go durations as CRE's CRDs write them (`functions.runtime.durations`)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from functions.runtime.durations import go_float, parse_go_duration


@pytest.mark.parametrize(("text", "expected"), [
    ("60s", timedelta(seconds=60)), ("1m30s", timedelta(seconds=90)), ("1.5h", timedelta(minutes=90)),
    ("300ms", timedelta(milliseconds=300)), ("24h", timedelta(hours=24)), ("0", timedelta(0)),
    ("2h45m", timedelta(hours=2, minutes=45)), ("-5s", timedelta(seconds=-5)), (".5s", timedelta(seconds=0.5)),
], ids=["seconds", "minutes-seconds", "fraction", "milliseconds", "hours", "zero", "hours-minutes", "negative",
        "leading-dot"])
def test_go_durations(text: str, expected: timedelta) -> None:
    assert parse_go_duration(text) == expected


@pytest.mark.parametrize("text", ["", "60", "1d", "s", "1m 30s", "PT1M", "abc"])
def test_not_durations_say_so(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_go_duration(text)


@pytest.mark.parametrize(("text", "expected"), [
    ("2562047h47m16.854775807s", timedelta(days=106751, seconds=85636, microseconds=854775)),
    ("-2562047h47m16.854775808s", -timedelta(days=106751, seconds=85636, microseconds=854775)),
    ("9223372036854775807ns", timedelta(days=106751, seconds=85636, microseconds=854775)),
], ids=["longest", "most-negative", "longest-in-ns"])
def test_go_durations_reach_go_s_limits(text: str, expected: timedelta) -> None:
    assert parse_go_duration(text) == expected


@pytest.mark.parametrize("text", ["2562047h47m16.854775808s", "9223372036854775808ns", "99999999999999h",
                                  "-99999999999999h", "1" * 5000 + "h"],
                         ids=["just-past", "just-past-in-ns", "huge", "huge-negative", "5000-digits"])
def test_durations_past_go_s_range_are_not_durations(text: str) -> None:
    """Go's ParseDuration refuses them (an int64 of nanoseconds), so an annotation holding one is as good as
    none: the default applies."""
    from functions.runtime.durations import positive_duration

    with pytest.raises(ValueError, match=r"is longer than Go's longest \(2562047h47m16\.854775807s\)"):
        parse_go_duration(text)
    assert positive_duration(text, timedelta(hours=24)) == timedelta(hours=24)


@pytest.mark.parametrize(("value", "expected"), [
    ("389.21", 389.21), (" 2.5e1GB/s", 25.0), ("-3", -3.0), (".5", 0.5), ("", 0.0), ("n/a", 0.0), (None, 0.0),
    (7, 7.0),
], ids=["plain", "leading-number", "negative", "no-integer-part", "empty", "not-a-number", "absent", "int"])
def test_go_float(value: Any, expected: float) -> None:
    assert go_float(value) == expected
