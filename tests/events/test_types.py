"""The event types and the enums of the catalog."""

from __future__ import annotations

from events.types import Phase


def test_phase_enum_is_closed() -> None:
    assert [p.value for p in Phase] == ["Pending", "Running", "Succeeded", "Failed"]
