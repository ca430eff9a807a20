"""What a served function remembers between events, in its process: `Context.memory`, one per process
(a test's context, one per test). Nothing a decision needs is kept here: only what spares a repeat."""

from __future__ import annotations

import threading
from collections import OrderedDict
from datetime import datetime
from typing import Any


class Memory:
    """What this process remembers between events, bounded (a restarted process starts afresh): when each key
    was first seen (`parity`: a difference, which waits its settle window), and what was sent once already
    (`parity`: a check, sent again by a restarted process)."""

    def __init__(self, size: int = 10_000) -> None:
        self.size, self.lock = size, threading.Lock()
        self.first: OrderedDict[str, datetime] = OrderedDict()
        self.sent: OrderedDict[str, None] = OrderedDict()

    def first_seen(self, key: str, now: datetime) -> datetime:
        with self.lock:
            seen = self.first.setdefault(key, now)
            self._trim(self.first)
            return seen

    def newly_sent(self, key: str) -> bool:
        with self.lock:
            if key in self.sent:
                return False
            self.sent[key] = None
            self._trim(self.sent)
            return True

    def forget(self, key: str) -> None:
        """A key claimed (`newly_sent`) whose sending failed: it is sent again."""
        with self.lock:
            self.sent.pop(key, None)

    def _trim(self, kept: OrderedDict[str, Any]) -> None:
        while len(kept) > self.size:
            kept.popitem(last=False)
