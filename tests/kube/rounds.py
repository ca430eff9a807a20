"""A deterministic, round-based broker for the lifecycle tests (the local stack uses `LocalBroker`).

Events (`{"attributes", "data"}` records) enter through `publish()`; each is delivered to every
route whose filter matches (exact attribute values, any of a set), in order. A 200 reply is re-published, like a
Knative reply; 409/429/503 (and 500/connection errors) are retried on a later round, up to
`max_attempts`; 400 and exhausted retries go to the dead letters. `duplicate` delivers every event
twice and `swap` exchanges neighbouring events in each round: the at-least-once and reordering drills.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from functions.transport import Answer, decode, send

RETRIED = {409, 429, 500, 502, 503, 504}


@dataclass(frozen=True)
class Route:
    function: str
    filters: Mapping[str, frozenset[str]]

    def matches(self, attrs: Mapping[str, Any]) -> bool:
        return all(str(attrs.get(k, "")) in allowed for k, allowed in self.filters.items())


def route(function: str, **filters: str | Iterable[str]) -> Route:
    return Route(function, {k: frozenset([v] if isinstance(v, str) else v) for k, v in filters.items()})


@dataclass
class Delivery:
    record: dict[str, Any]
    function: str
    status: int
    reason: str
    reply_type: str = ""


@dataclass
class Pending:
    record: dict[str, Any]
    route: Route
    attempts: int = 0


@dataclass
class Bus:
    urls: dict[str, str]
    routes: list[Route]
    duplicate: bool = False
    swap: bool = False
    max_attempts: int = 10
    log: list[Delivery] = field(default_factory=list)
    dead_letters: list[Delivery] = field(default_factory=list)
    _queue: list[Pending] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def publish(self, record: dict[str, Any]) -> None:
        with self._lock:
            for r in self.routes:
                if r.function in self.urls and r.matches(record["attributes"]):
                    self._queue.append(Pending(record, r))

    @property
    def idle(self) -> bool:
        with self._lock:
            return not self._queue

    def round(self) -> int:
        """Deliver everything queued now (replies and retries wait for the next round); return how many."""
        with self._lock:
            batch, self._queue = self._queue, []
        if self.swap:
            for i in range(0, len(batch) - 1, 2):
                batch[i], batch[i + 1] = batch[i + 1], batch[i]
        for pending in batch:
            for _ in range(2 if self.duplicate else 1):
                self._deliver(pending)
        return len(batch)

    def drain(self, max_rounds: int = 50) -> None:
        for _ in range(max_rounds):
            if not self.round():
                return
        raise RuntimeError(f"bus did not settle in {max_rounds} rounds: {self.summary()}")

    def _deliver(self, pending: Pending) -> None:
        try:
            answer = send(self.urls[pending.route.function], pending.record)
        except OSError as e:
            answer = Answer(503, {}, str(e).encode())
        entry = Delivery(pending.record, pending.route.function, answer.status, answer.text,
                         answer.ce.get("type", "") if answer.status == 200 else "")
        self.log.append(entry)
        if answer.status == 200:
            self.publish(reply_record(answer))
        elif answer.status in RETRIED and pending.attempts + 1 < self.max_attempts:
            with self._lock:
                self._queue.append(Pending(pending.record, pending.route, pending.attempts + 1))
        elif answer.status != 202:
            self.dead_letters.append(entry)

    def summary(self) -> list[tuple[str, str, int, str]]:
        return [(d.record["attributes"]["type"], d.function, d.status, d.reason or d.reply_type) for d in self.log]


def reply_record(answer: Answer) -> dict[str, Any]:
    return decode(answer.headers, answer.body)
