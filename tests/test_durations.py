"""Go durations as CRE's CRDs write them (`functions.durations`)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from functions.durations import parse_go_duration


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
