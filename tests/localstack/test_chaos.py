"""The local Broker's chaos: the spec, the fates drawn from a seed, and what the Broker does with them."""

from __future__ import annotations

import pytest

from localstack.eventing.broker import Delivery, LocalBroker, Trigger
from localstack.eventing.chaos import Chaos, ChaosError, Fates
from tests.support.helpers import Receiver


def test_a_spec_reads_as_written() -> None:
    chaos = Chaos.parse("drop=0.1,dup=0.2,reorder=0.2,delay=0-500ms,seed=7")
    assert chaos == Chaos(drop=0.1, dup=0.2, reorder=0.2, delay=(0.0, 0.5), seed=7)
    assert str(chaos) == "drop=0.1,dup=0.2,reorder=0.2,delay=0-500ms,seed=7"
    assert Chaos.parse("delay=1s").delay == (1.0, 1.0) and Chaos.parse("delay=0.2-2s").delay == (0.2, 2.0)
    assert Chaos.parse("") == Chaos()


@pytest.mark.parametrize(("spec", "says"), [
    ("drop=2", "drop='2' is not between 0 and 1"), ("dup=x", "dup='x' is not a probability"),
    ("loss=0.1", "'loss=0.1' is not one of drop=, dup=, reorder=, delay=, seed="),
    ("delay=500ms-1ms", "delay='500ms-1ms' runs backwards"), ("delay=soon", "'soon' is not a duration"),
    ("seed=x", "seed='x' is not an integer"), ("drop=0.1,drop=0.2", "drop is given twice"), ("drop", "'drop' is not"),
])
def test_a_bad_spec_says_why_in_one_line(spec: str, says: str) -> None:
    with pytest.raises(ChaosError) as e:
        Chaos.parse(spec)
    assert says in str(e.value) and "\n" not in str(e.value)


def fates(chaos: Chaos, n: int = 2000) -> list[tuple[int, float, bool]]:
    drawn = Fates(chaos)
    return [(f.copies, f.delay, f.reordered) for f in
            (drawn.decide(f"t{i % 3}", "dev.crefn.workload.phase", f"ns/job-{i % 50}") for i in range(n))]


def test_fates_follow_the_seed_and_the_shares() -> None:
    chaos = Chaos(drop=0.1, dup=0.2, reorder=0.2, delay=(0.0, 0.5), seed=7)
    other_seed = Chaos(drop=0.1, dup=0.2, reorder=0.2, delay=(0, 0.5), seed=8)
    first, again, other = fates(chaos), fates(chaos), fates(other_seed)
    assert first == again and first != other
    dropped = sum(c == 0 for c, _, _ in first) / len(first)
    duplicated = sum(c == 2 for c, _, _ in first) / len(first)
    assert 0.07 < dropped < 0.13 and 0.15 < duplicated < 0.25
    held = [d for c, d, r in first if r]
    assert held and min(held) >= 0.5  # held back past every delay a delivery not held can get
    assert all(0 <= d <= 0.5 for c, d, r in first if c and not r)


def test_no_chaos_is_no_change() -> None:
    assert set(fates(Chaos(), 200)) == {(1, 0.0, False)}


def test_the_broker_drops_and_duplicates_as_decided_and_counts_it() -> None:
    receiver = Receiver(202)
    trigger = Trigger("t", ({"exact": {"type": "x.y"}},), receiver.url, Delivery())
    broker = LocalBroker([trigger], chaos=Chaos(drop=0.3, dup=0.3, seed=3))
    try:
        for i in range(100):
            broker.publish({"attributes": {"specversion": "1.0", "id": f"e{i}", "source": "/s", "type": "x.y",
                                           "subject": f"s{i}"}, "data": {}})
        assert broker.wait_idle(timeout=30, quiet=0.2)
        counts = broker.fates.counts if broker.fates else None
        assert counts is not None and counts.decided == 100 and counts.dropped and counts.duplicated
        assert len(receiver.requests) == 100 - counts.dropped + counts.duplicated
        ids = [h["ce-id"] for _, h, _ in receiver.requests]
        assert len(set(ids)) == 100 - counts.dropped  # a duplicate is the same event id
        assert not broker.dead  # a dropped delivery is lost, not a dead letter
    finally:
        broker.close()
        receiver.close()
