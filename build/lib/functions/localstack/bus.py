"""A small in-process broker for the test suite and the local stack: Knative's delivery, on loopback.

Events (`{"attributes", "data"}` records) enter through `publish()` or an HTTP ingress (binary or
structured mode, as a Knative Broker accepts them); each is delivered to every route whose filter
matches (exact attribute values, any of a set), in order. A 200 reply is re-published, like a
Knative reply; 409/429/503 (and 500/connection errors) are retried on a later round, up to
`max_attempts`; 400 and exhausted retries go to the dead letters. `duplicate` delivers every event
twice and `swap` exchanges neighbouring events in each round: the at-least-once and reordering drills.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from functions.localstack.client import Answer, send

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
    _server: ThreadingHTTPServer | None = None

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

    # -- HTTP ingress (what K_SINK points at) --------------------------------------------------

    def serve(self, port: int) -> str:
        bus = self

        class Ingress(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                try:
                    bus.publish(parse_record(headers, body))
                    self.send_response(202)
                except (ValueError, KeyError) as e:
                    self.send_response(400)
                    print(e)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Ingress)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{port}/"

    def close(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()


def parse_record(headers: Mapping[str, str], body: bytes) -> dict[str, Any]:
    """An HTTP CloudEvent (binary or structured) as a `{"attributes", "data"}` record."""
    if headers.get("content-type", "").startswith("application/cloudevents+json"):
        envelope = json.loads(body)
        data = envelope.pop("data", None)
        return {"attributes": envelope, "data": data}
    attrs = {k[3:]: v for k, v in headers.items() if k.startswith("ce-")}
    if not {"id", "type", "source", "specversion"} <= set(attrs):
        raise ValueError("not a CloudEvent")
    attrs["datacontenttype"] = headers.get("content-type", "application/json")
    return {"attributes": attrs, "data": json.loads(body) if body else None}


def reply_record(answer: Answer) -> dict[str, Any]:
    return parse_record(answer.headers, answer.body)
