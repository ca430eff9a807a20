"""What a handler returns: an event to reply with (200), or nothing to publish (202) with a reason."""

from __future__ import annotations

from dataclasses import dataclass

from events.envelope import Envelope, Outbound


@dataclass(frozen=True)
class NoReply:
    """Handled, nothing to publish: every no-op and every "object is gone" (SPEC §4.3: 202)."""

    reason: str


Outcome = Outbound | NoReply

__all__ = ["Envelope", "NoReply", "Outbound", "Outcome"]
