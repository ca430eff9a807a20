"""The two error kinds, which are Knative's retry API (SPEC §4.3).

`PermanentError` → 400, never retried. `TemporaryError` → 409/429/503, retried by Knative's delivery
spec with backoff. The transport maps them to HTTP in one place; nothing else picks status codes.
"""

from __future__ import annotations


class PermanentError(Exception):
    """The event can never succeed: bad input, wrong kind, invalid data."""

    status = 400


class TemporaryError(Exception):
    """The event may succeed later: conflict (409), throttled (429), unavailable or not yet (503)."""

    def __init__(self, message: str, status: int = 503, reason: str = "") -> None:
        super().__init__(message)
        self.status = status if status in (409, 429, 503) else 503
        self.reason = reason


class NotFound(Exception):
    """The object does not exist (not an HTTP answer by itself: callers decide what gone means)."""
