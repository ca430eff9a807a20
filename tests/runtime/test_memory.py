"""What a process remembers between events (`Context.memory`): the first time a key was seen, what was sent
once, a send that failed forgotten, and no more than its bound (the oldest dropped first)."""

from __future__ import annotations

from datetime import timedelta

from functions.runtime.context import Context
from functions.runtime.memory import Memory
from functions.runtime.settings import Settings
from tests.support.helpers import NOW


def test_the_first_sighting_is_kept() -> None:
    memory = Memory()
    assert memory.first_seen("ns/llm:restartCount", NOW) == NOW
    assert memory.first_seen("ns/llm:restartCount", NOW + timedelta(minutes=5)) == NOW


def test_a_key_is_sent_once_unless_its_send_is_forgotten() -> None:
    memory = Memory()
    assert memory.newly_sent("check-1") is True
    assert memory.newly_sent("check-1") is False
    memory.forget("check-1")
    assert memory.newly_sent("check-1") is True


def test_the_oldest_keys_go_past_the_bound() -> None:
    memory = Memory(size=2)
    for key in ("a", "b", "c"):
        assert memory.newly_sent(key)
    assert list(memory.sent) == ["b", "c"]
    assert memory.newly_sent("a") is True


def test_each_context_has_its_own_memory() -> None:
    first, second = Context(Settings()), Context(Settings())
    first.memory.newly_sent("check-1")
    assert second.memory.newly_sent("check-1") is True
