"""Plans as plain data (`functions.runtime.plan`): two plans decided alike compare equal, and the repr
shows one whole; a wait over at a known time says the whole seconds left, rounded up and never 0."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from functions.runtime.plan import Plan, Wait, WriteStatus, nothing, wait_until
from functions.runtime.resources import cre_jobs

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def plan() -> Plan:
    return Plan((WriteStatus(cre_jobs("nvcre.nvidia.com"), "ml", "llama", "7", {"restartCount": 1}),),
                reason="restarted")


def test_plans_decided_alike_are_equal() -> None:
    assert plan() == plan() and plan() != Plan(plan().effects, reason="other")
    assert "restartCount" in repr(plan())
    assert nothing("why") == Plan(reason="why") and nothing("why").effects == ()


@pytest.mark.parametrize(("left", "seconds"), [(timedelta(seconds=10), 10), (timedelta(seconds=9.2), 10),
                                               (timedelta(milliseconds=1), 1), (timedelta(0), 1),
                                               (timedelta(seconds=-5), 1)])
def test_a_wait_says_the_seconds_left_rounded_up(left: timedelta, seconds: int) -> None:
    assert wait_until("grace", NOW + left, NOW) == Wait("grace", seconds)
