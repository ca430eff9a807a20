"""Go's `time.Parse` with CRE's layouts and others, to the nanosecond; the kubelet's prefix; RFC 3339 as Go prints
it."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from functions.domain.gotime import NS, Unparsed, kubelet_time, parse, rfc3339

GO_PARSE = Path(__file__).parents[1] / "golden" / "gotime" / "parse.jsonl"


@pytest.mark.parametrize(("layout", "value", "printed"), [
    ("2006-01-02T15:04:05.999999999Z", "2026-01-22T18:00:05.123456789Z", "2026-01-22T18:00:05.123456789Z"),
    ("2006-01-02T15:04:05.999999999Z", "2026-01-22T18:00:06.500000000Z", "2026-01-22T18:00:06.5Z"),
    ("2006-01-02T15:04:05.999999999Z", "2026-01-22T18:00:06Z", "2026-01-22T18:00:06Z"),
    ("2006-01-02 15:04:05.999999", "2026-02-15 20:20:55.067342", "2026-02-15T20:20:55.067342Z"),
    ("2006-01-02 15:04:05.999999", "2026-02-15 20:20:55.0673421234", "2026-02-15T20:20:55.067342123Z"),
    ("2006-01-02 15:04:05", "2026-02-15 20:20:55.25", "2026-02-15T20:20:55.25Z"),
    ("2006-01-02 15:04:05.000", "2026-02-15 20:20:55.250", "2026-02-15T20:20:55.25Z"),
    ("2006-01-02T15:04:05Z07:00", "2026-08-06T09:30:31-07:00", "2026-08-06T16:30:31Z"),
    ("2006-01-02T15:04:05Z07:00", "2026-08-06T09:30:31Z", "2026-08-06T09:30:31Z"),
    ("2006-01-02 15:04:05 -0700", "2026-08-06 22:00:31 +0530", "2026-08-06T16:30:31Z"),
    ("Jan _2 2006 03:04:05 PM", "Feb  3 2026 01:02:03 PM", "2026-02-03T13:02:03Z"),
    ("Jan _2 2006 03:04:05 PM", "Feb 13 2026 12:02:03 AM", "2026-02-13T00:02:03Z"),
    ("Monday, 02-Jan-06 15:04:05 MST", "Tuesday, 03-Feb-26 01:02:03 UTC", "2026-02-03T01:02:03Z"),
    ("2006-01-02  15:04", "2024-02-29 23:59", "2024-02-29T23:59:00Z"),
    ("2006-002", "2026-060", "2026-03-01T00:00:00Z"),
    ("2006-01-02", "1969-12-31", "1969-12-31T00:00:00Z"),
    # a fraction after the seconds, taken though the layout has none: any digit after the point or comma
    ("2006-01-02 15:04:05", "2026-01-02 10:00:00.05", "2026-01-02T10:00:00.05Z"),
    ("2006-01-02 15:04:05", "2026-01-02 10:00:00,9", "2026-01-02T10:00:00.9Z"),
    ("15:04:05 2006", "10:00:00.5 2026", "2026-01-01T10:00:00.5Z"),
    # ... but not a point or a letter that the layout's own text goes on with
    ("2006-01-02 15:04:05X0", "2026-01-02 10:00:00X0", "2026-01-02T10:00:00Z"),
    ("2006-01-02 15:04:05.A", "2026-01-02 10:00:00.A", "2026-01-02T10:00:00Z"),
    ("2006-01-02 15:04:05.999X0", "2026-01-02 10:00:00X0", "2026-01-02T10:00:00Z"),
    ("15:04:05 .000 2006", "10:00:00 .250 2026", "2026-01-01T10:00:00.25Z"),
    ("03:04 PM 2006", "01:02 PM 2026", "2026-01-01T13:02:00Z"),
    ("03 PM 2006", "00 PM 2026", "2026-01-01T12:00:00Z"), ("3PM 2006", "0AM 2026", "2026-01-01T00:00:00Z"),
    ("03 PM 2006", "12 AM 2026", "2026-01-01T00:00:00Z"), ("3pm 2006", "12pm 2026", "2026-01-01T12:00:00Z"),
    ("03 2006", "12 2026", "2026-01-01T12:00:00Z"),
    # text around the elements: non-ASCII, tabs (matched as they are), letters after a run of spaces
    ("2006 1\u00e9", "2026 1\u00e9", "2026-01-01T00:00:00Z"), ("2006\u00e9", "2026\u00e9", "2026-01-01T00:00:00Z"),
    ("2006 \t01", "2026 \t02", "2026-02-01T00:00:00Z"), ("2006 X01", "2026 X02", "2026-02-01T00:00:00Z"),
    ("2006X07", "2026X07", "2026-01-01T00:00:00Z"),
    # zones: `Z` for UTC where the layout's zone starts with Z (not with seconds), or a signed offset
    ("15:04Z07:00 2006", "10:00Z 2026", "2026-01-01T10:00:00Z"), ("2006 Z0700", "2026 Z", "2026-01-01T00:00:00Z"),
    ("2006 Z07", "2026 Z", "2026-01-01T00:00:00Z"), ("2006 Z07", "2026 -03", "2026-01-01T03:00:00Z"),
    ("2006 -07:00:00", "2026 +05:30:15", "2025-12-31T18:29:45Z"),
    ("2006 -070000", "2026 -053015", "2026-01-01T05:30:15Z"),
    ("2006 Z07:00:00", "2026 -05:30:15", "2026-01-01T05:30:15Z"),
])
def test_a_layout_reads_its_value(layout: str, value: str, printed: str) -> None:
    assert rfc3339(parse(layout, value)) == printed


@pytest.mark.parametrize(("layout", "value"), [
    ("2006-01-02", "2026-02-29"), ("2006-01-02 15:04", "2026-02-01 24:00"), ("2006-01-02", "2026-1-02"),
    ("2006-01-02", "2026-01-02 extra"), ("2006-01-02 15:04:05.000", "2026-01-02 10:00:00.25"),
    ("2006-01-02T15:04:05Z07:00", "2026-08-06T09:30:31+0700"), ("Jan 2 2006", "Foo 2 2026"),
    ("2006-01-02", "\uff12\uff10\uff12\uff16-01-02"), ("03 PM", "13 PM"), ("2006", ""),
    ("2006-01-02 15:04:05.000", "2026-01-02 10:00:00X123"), ("2006 -0700", "2026 X0530"), ("2006 03", "2026 13"),
    ("2006 Z07:00:00", "2026 Z"), ("2006 Z070000", "2026 Z"), ("2006 -07:00", "2026 +0::00"),
    ("2006 -070000", "2026 +05:301"), ("2006 -07:00", "2026 +05-30"),
])
def test_what_go_does_not_parse_is_refused(layout: str, value: str) -> None:
    with pytest.raises(Unparsed):
        parse(layout, value)


def test_the_kubelet_prefix() -> None:
    assert kubelet_time("2026-01-22T18:00:05.123456789Z Training") == (1769104805123456789, "Training")
    at, rest = kubelet_time("2026-08-06T09:30:31.128034512-07:00   1073741824")
    assert at is not None and rfc3339(at) == "2026-08-06T16:30:31.128034512Z" and rest == "  1073741824"
    assert kubelet_time(" [2026-02-15 20:20:55.067342] iteration") == (None, " [2026-02-15 20:20:55.067342] iteration")
    assert kubelet_time("2026-01-22T18:00:05Z") == (None, "2026-01-22T18:00:05Z")  # no space after it


@pytest.mark.parametrize(("month", "days"), [(1, 31), (2, 28), (3, 31), (4, 30), (5, 31), (6, 30), (7, 31), (8, 31),
                                             (9, 30), (10, 31), (11, 30), (12, 31)])
def test_each_months_last_day(month: int, days: int) -> None:
    assert rfc3339(parse("2006-01-02", f"2026-{month:02d}-{days:02d}")) == f"2026-{month:02d}-{days:02d}T00:00:00Z"
    with pytest.raises(Unparsed):
        parse("2006-01-02", f"2026-{month:02d}-{days + 1:02d}")


def test_a_leap_years_february() -> None:
    assert rfc3339(parse("2006-01-02", "2028-02-29")) == "2028-02-29T00:00:00Z"
    for year in ("2100", "2027"):
        with pytest.raises(Unparsed):
            parse("2006-01-02", f"{year}-02-29")
    assert rfc3339(parse("2006-01-02", "2000-02-29")) == "2000-02-29T00:00:00Z"


@pytest.mark.parametrize(("layout", "value", "why"), [
    # Go's `cannot parse "<text>" as "<element>"`: the text left where the element could not read it
    ("2006-01-02", "2026-x1-02", "x1-02"), ("2006-01-02", "2026-1-02", "1-02"), ("2006 01", "2026x01", "x01"),
    ("2006-01-02", "2026-01x02", "x02"), ("2006 -07:00", "2026 +0530", "+0530"), ("Jan 2006", "Foo 2026", "Foo 2026"),
    ("Monday 2006", "Funday 2026", "Funday 2026"), ("2006-002", "2026-0x1", "0x1"),
    ("15:04 MST 2006", "10:00 utc 2026", "utc 2026"),
    ("2006-01-02 15:04:05.000", "2026-01-02 10:00:00.25", ".25"),
    # and its other reasons
    ("2006-01-02", "2026-01-02 x", 'extra text: " x"'), ("03 PM 2006", "13 PM 2026", "hour out of range"),
    ("2006-01-02 15:04", "2026-01-02 24:00", "hour out of range"),
    ("2006-01-02 15:04", "2026-01-02 10:60", "minute out of range"),
    ("2006-01-02 15:04:05", "2026-01-02 10:00:60", "second out of range"),
    ("2006-01-02", "2026-02-30", "day out of range"), ("2006-01-02", "2026-13-01", "month out of range"),
    ("2006-01-02", "2026-00-01", "month out of range"),
    # where Go names other text: its year names what follows the four characters, its AM/PM what follows the two
    ("2006", "20x6", "20x6"), ("03 PM 2006", "01 XM 2026", "XM 2026"),
])
def test_a_refusal_says_why_as_go_does(layout: str, value: str, why: str) -> None:
    with pytest.raises(Unparsed) as refused:
        parse(layout, value)
    assert refused.value.args == (why,)


def test_printing_does_not_depend_on_the_machines_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "IST-5:30")
    time.tzset()
    try:
        assert rfc3339(1769104805123456789) == "2026-01-22T18:00:05.123456789Z"
    finally:
        monkeypatch.undo()
        time.tzset()


def test_what_go_itself_read() -> None:
    """`tests/golden/gotime/parse.jsonl`: layouts and values as Go 1.19's `time.Parse` read them (`parse.go.txt`,
    one `[layout, value]` a line in, `[layout, value, seconds, nanoseconds]` since the epoch or `[layout, value,
    "error"]` out): the elements at the edges of their ranges, names in any case, short and long values."""
    differ = []
    for line in GO_PARSE.read_text().splitlines():
        layout, value, *go = json.loads(line)
        try:
            got: list[object] = list(divmod(parse(layout, value), NS))
        except Unparsed:
            got = ["error"]
        if got != go:
            differ.append((layout, value, go, got))
    assert differ == []
