"""When an event may be the one that decided a verdict, delivered again (`functions.rules.redelivery.recent`):
written within the hour, and the event seen (`observedAt`, else its `time`) no later than the write, to the
second."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from events.envelope import Envelope
from functions.rules.redelivery import recent, sent_at

WRITTEN = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(("observed", "now", "expected"), [
    (WRITTEN - timedelta(seconds=1), WRITTEN + timedelta(seconds=5), True),
    (WRITTEN + timedelta(milliseconds=900), WRITTEN + timedelta(seconds=5), True),
    (WRITTEN + timedelta(seconds=1), WRITTEN + timedelta(seconds=5), False),
    (None, WRITTEN + timedelta(seconds=5), True),
    (WRITTEN, WRITTEN + timedelta(minutes=60), True),
    (WRITTEN, WRITTEN + timedelta(minutes=60, seconds=1), False),
], ids=["seen-before", "seen-within-the-second", "seen-a-second-after", "no-time", "an-hour-on", "past-the-hour"])
def test_a_write_is_restated_for_an_event_seen_before_it_within_the_hour(observed: datetime | None, now: datetime,
                                                                        expected: bool) -> None:
    assert recent(WRITTEN, observed, now) is expected


def test_no_write_time_restates_nothing() -> None:
    assert recent(None, None, WRITTEN) is False


@pytest.mark.parametrize(("time", "expected"), [
    ("2026-03-01T12:00:00Z", WRITTEN),
    ("2026-03-01T12:00:00.250+00:00", WRITTEN + timedelta(milliseconds=250)),
    ("", None),
    ("yesterday", None),
    ("2026-03-01T12:00:00", None),
], ids=["rfc3339", "with-fraction-and-offset", "absent", "unreadable", "without-an-offset"])
def test_the_time_attribute_stands_for_when_the_event_was_seen(time: str, expected: datetime | None) -> None:
    assert sent_at(Envelope(id="d1", type="dev.crefn.job.deadline", source="/crefn/resync", time=time)) == expected
