"""Go's `time.Parse` with CRE's layouts and others, to the nanosecond; the kubelet's prefix; RFC 3339 as Go prints
it."""

from __future__ import annotations

import pytest

from functions.domain.gotime import Unparsed, kubelet_time, parse, rfc3339


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
])
def test_a_layout_reads_its_value(layout: str, value: str, printed: str) -> None:
    assert rfc3339(parse(layout, value)) == printed


@pytest.mark.parametrize(("layout", "value"), [
    ("2006-01-02", "2026-02-29"), ("2006-01-02 15:04", "2026-02-01 24:00"), ("2006-01-02", "2026-1-02"),
    ("2006-01-02", "2026-01-02 extra"), ("2006-01-02 15:04:05.000", "2026-01-02 10:00:00.25"),
    ("2006-01-02T15:04:05Z07:00", "2026-08-06T09:30:31+0700"), ("Jan 2 2006", "Foo 2 2026"),
    ("2006-01-02", "\uff12\uff10\uff12\uff16-01-02"), ("03 PM", "13 PM"), ("2006", ""),
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
