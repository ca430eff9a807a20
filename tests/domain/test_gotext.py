"""Go's texts as CRE prints them: `time.Duration.String()`, `%v` of a slice and `%q`, against Go's own output."""

from __future__ import annotations

from datetime import timedelta

import pytest

from functions.domain.gotext import go_duration, go_list, go_quote


@pytest.mark.parametrize(("duration", "text"), [
    (timedelta(0), "0s"), (timedelta(minutes=5), "5m0s"), (timedelta(hours=1), "1h0m0s"),
    (timedelta(seconds=90), "1m30s"), (timedelta(seconds=1.5), "1.5s"), (timedelta(milliseconds=300), "300ms"),
    (timedelta(microseconds=1500), "1.5ms"), (timedelta(microseconds=2), "2µs"),
    (timedelta(hours=26, minutes=3, seconds=4.5), "26h3m4.5s"), (timedelta(seconds=-90), "-1m30s"),
    (timedelta(seconds=1), "1s"), (timedelta(milliseconds=1), "1ms"), (timedelta(microseconds=1), "1µs"),
    (timedelta(microseconds=999), "999µs"), (timedelta(microseconds=1001), "1.001ms"),
    (timedelta(milliseconds=1050), "1.05s"), (timedelta(hours=1, milliseconds=50), "1h0m0.05s"),
    (timedelta(microseconds=-1), "-1µs"),
], ids=["zero", "5m", "1h", "90s", "fraction", "ms", "fraction-ms", "us", "days", "negative", "one-second",
        "one-millisecond", "one-microsecond", "just-under-a-millisecond", "leading-zero-ms", "leading-zero-s",
        "leading-zero-under-hours", "negative-microsecond"])
def test_go_duration(duration: timedelta, text: str) -> None:
    assert go_duration(duration) == text


@pytest.mark.parametrize(("text", "quoted"), [
    ("\a\b\f\r\v", '"\\a\\b\\f\\r\\v"'),
    ("a b", '"a b"'),
    ("\x7f\x80", '"\\x7f\\u0080"'),
    ("\u00a0\u00ad\u2028", '"\\u00a0\\u00ad\\u2028"'),
    ("\uffff", '"\\uffff"'),
    ("\U00010000", '"\U00010000"'),
    ("\U000e0001", '"\\U000e0001"'),
], ids=["c-escapes", "space-kept", "ascii-byte-then-rune", "unprintable-runes", "last-of-the-bmp",
        "printable-beyond-the-bmp", "unprintable-beyond-the-bmp"])
def test_go_quote_matches_go(text: str, quoted: str) -> None:
    """Threshold keys and expressions appear in CRE's messages as Go's `%q` spells them: the C escapes,
    `\\x` below U+0080 only, `\\u` up to U+FFFF, `\\U` beyond, printable runes kept."""
    assert go_quote(text) == quoted


def test_go_formatting() -> None:
    assert go_list(["a", "b"]) == "[a b]" and go_list([]) == "[]"
    assert go_quote('value > double("x")') == '"value > double(\\"x\\")"'
    assert go_quote("a\\b\n\tc\x01é") == '"a\\\\b\\n\\tc\\x01é"'
