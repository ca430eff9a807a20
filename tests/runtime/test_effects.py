"""The effects a plan asks for (`functions.runtime.effects`): a wait over at a known time says the whole seconds
left, rounded up and never 0; the effects that write to the cluster are the ones observe mode leaves out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from functions.runtime import effects
from functions.runtime.effects import Wait, wait_until

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(("left", "seconds"), [(timedelta(seconds=10), 10), (timedelta(seconds=9.2), 10),
                                               (timedelta(milliseconds=1), 1), (timedelta(0), 1),
                                               (timedelta(seconds=-5), 1)])
def test_a_wait_says_the_seconds_left_rounded_up(left: timedelta, seconds: int) -> None:
    assert wait_until("grace", NOW + left, NOW) == Wait("grace", seconds)


def test_the_writes_are_the_effects_that_change_the_cluster() -> None:
    e = effects
    assert set(e.WRITES) == {e.WriteStatus, e.Annotate, e.Label, e.Finalizers, e.Create, e.Delete, e.KubeEvent}
    assert not {e.Notify, e.Send, e.Wait} & set(e.WRITES)
