"""A local Knative Broker: the Triggers and delivery settings of `knative/`, with Knative's semantics.

Ingress accepts CloudEvents in binary or structured mode (202). Every Trigger whose `filters` all match gets
the event (dialects `exact`, `prefix`, `suffix`, `all`, `any`, `not`; any other, CESQL included, is refused
when the Triggers are loaded). Delivery is concurrent and unordered; a 200 reply with a CloudEvent is
published back; 404, 409, 429, 5xx, timeouts and connection errors are retried with the Trigger's backoff;
anything else, or retries spent, becomes a dead letter with Knative's `knativeerror*` extensions, posted to
`functions.runtime.deadletters`' recorder on loopback. Every published event is appended to an event log (JSONL).
Drills (`duplicate`, `jitter`, `chaos`) and the deterministic mode (`workers=0`, `round()`, `drain()`):
localstack/README.md#the-broker.
"""

from __future__ import annotations

import heapq
import itertools
import json
import random
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from functions.runtime.client import Answer, send
from functions.runtime.codec import Record
from functions.runtime.deadletters import event_server, recorder
from functions.runtime.errors import Unavailable
from functions.tools.replay import read_recording
from localstack.eventing.chaos import Chaos, Fate, Fates

CLOSE_WAIT = 2.0
"""Seconds `LocalBroker.close` waits, in all, for its delivery workers (daemon threads) to end."""



class FilterError(ValueError):
    """A Trigger filter this broker cannot evaluate."""


def matches(flt: Mapping[str, Any], attrs: Mapping[str, Any]) -> bool:
    """Evaluate one filter expression of Knative's `filters` dialects."""
    if len(flt) != 1:
        raise FilterError(f"a filter has exactly one dialect, got {sorted(flt)}")
    (dialect, value), = flt.items()
    if dialect == "exact":
        return all(str(attrs.get(k, "")) == v and k in attrs for k, v in value.items())
    if dialect == "prefix":
        return all(k in attrs and str(attrs[k]).startswith(v) for k, v in value.items())
    if dialect == "suffix":
        return all(k in attrs and str(attrs[k]).endswith(v) for k, v in value.items())
    if dialect == "all":
        return all(matches(f, attrs) for f in value)
    if dialect == "any":
        return any(matches(f, attrs) for f in value)
    if dialect == "not":
        return not matches(value, attrs)
    raise FilterError(f"filter dialect {dialect!r} is not supported here")


def parse_duration(text: str) -> float:
    """ISO 8601 durations of the form Knative delivery uses (PT0.5S, PT1M, PT1M30S)."""
    m = re.fullmatch(r"PT(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?", text)
    if not m or not any(m.groups()):
        raise ValueError(f"unsupported duration {text!r}")
    h, mi, s = (float(g or 0) for g in m.groups())
    return h * 3600 + mi * 60 + s


@dataclass(frozen=True)
class Delivery:
    retry: int = 0
    backoff_policy: str = "exponential"
    backoff_delay: float = 0.5
    timeout: float = 30.0

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any] | None, default: Delivery | None = None) -> Delivery:
        base = default or cls()
        if not spec:
            return base
        return cls(
            retry=int(spec.get("retry", base.retry)),
            backoff_policy=str(spec.get("backoffPolicy", base.backoff_policy)),
            backoff_delay=parse_duration(spec["backoffDelay"]) if "backoffDelay" in spec else base.backoff_delay,
            timeout=parse_duration(spec["timeout"]) if "timeout" in spec else base.timeout,
        )

    def delay(self, attempt: int) -> float:
        """Wait before retry number `attempt` (1-based)."""
        if self.backoff_policy == "linear":
            return self.backoff_delay * attempt
        return float(self.backoff_delay * 2 ** (attempt - 1))


@dataclass(frozen=True)
class Trigger:
    name: str
    filters: tuple[Mapping[str, Any], ...]
    subscriber: str
    delivery: Delivery

    def matches(self, attrs: Mapping[str, Any]) -> bool:
        return all(matches(f, attrs) for f in self.filters)


def triggers_from_manifests(docs: list[dict[str, Any]], urls: Mapping[str, str]) -> tuple[list[Trigger], Delivery]:
    """Triggers of rendered manifests, subscribers resolved through `urls` (Service name → URL)."""
    broker_spec: dict[str, Any] = next((d["spec"] for d in docs if d["kind"] == "Broker"), {})
    default = Delivery.from_spec(broker_spec.get("delivery"))
    triggers = []
    for doc in docs:
        if doc["kind"] != "Trigger":
            continue
        spec = doc["spec"]
        filters = list(spec.get("filters") or [])
        if not filters and (spec.get("filter") or {}).get("attributes"):
            filters = [{"exact": spec["filter"]["attributes"]}]
        for f in filters:
            matches(f, {})  # refuse unsupported dialects now, not at the first event
        service = spec["subscriber"]["ref"]["name"]
        if service not in urls:
            continue
        triggers.append(Trigger(doc["metadata"]["name"], tuple(filters), urls[service],
                                Delivery.from_spec(spec.get("delivery"), default)))
    return triggers, default


@dataclass(order=True)
class _Pending:
    due: float
    seq: int
    record: Record = field(compare=False)
    trigger: Trigger = field(compare=False)
    attempt: int = field(compare=False, default=0)


@dataclass
class DeliveryAttempt:
    """One delivery attempt, for timelines and tests."""

    record: Record
    trigger: str
    status: int
    text: str
    reply: Record | None
    attempt: int
    final: bool


class LocalBroker:
    def __init__(self, triggers: list[Trigger], dead_letters: Path | None = None, event_log: Path | None = None,
                 workers: int = 4, duplicate: bool = False, jitter: float = 0.0, seed: int = 0, swap: bool = False,
                 on_outcome: Callable[[DeliveryAttempt], None] | None = None,
                 on_publish: Callable[[Record], None] | None = None, chaos: Chaos | None = None) -> None:
        self.triggers = triggers
        self.fates = Fates(chaos) if chaos else None
        self.duplicate = duplicate
        self.jitter = jitter
        self.swap = swap
        self._rng = random.Random(seed)
        self.on_outcome = on_outcome
        self.on_publish = on_publish
        self.outcomes: list[DeliveryAttempt] = []
        self.published = 0
        self.dead_letters_lost = 0
        """Dead letters the sink never took (its retries spent): lost, as in Knative."""
        self._scratch = None if dead_letters else Path(tempfile.mkdtemp(prefix="crefn-dead-letters-"))
        self.dead_letters = dead_letters or Path(str(self._scratch)) / "dead-letters.jsonl"
        self.dead_letters.touch()  # no dead letters: an empty file
        self._closed_dead: list[Record] | None = None
        self._sink = event_server(0, recorder(None, str(self.dead_letters)), "127.0.0.1")
        self.dead_letter_sink = f"http://127.0.0.1:{self._sink.server_address[1]}/"
        threading.Thread(target=self._sink.serve_forever, daemon=True).start()
        self._log_file: IO[str] | None = event_log.open("a") if event_log else None
        self._heap: list[_Pending] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._in_flight = 0
        self._stopped = False
        self._closed = False
        self._threads = [threading.Thread(target=self._work, daemon=True) for _ in range(workers)]
        for t in self._threads:
            t.start()
        self._server: Any = None
        self.url = ""

    # -- ingress ------------------------------------------------------------------------------

    def serve(self, port: int, host: str = "127.0.0.1") -> str:
        self._server = event_server(port, self.publish, host)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.url = f"http://{host}:{port}/"
        return self.url

    def publish(self, record: Record) -> None:
        with self._cond:
            if self._stopped:
                return  # a source's last watch event after the stack stopped: nothing left to deliver it to
            self.published += 1
            if self._log_file:
                self._log_file.write(json.dumps(record, separators=(",", ":")) + "\n")
                self._log_file.flush()
            now = time.monotonic()
            attrs = record["attributes"]
            for trigger in self.triggers:
                if trigger.matches(attrs):
                    fate = self.fates.decide(trigger.name, str(attrs.get("type")), str(attrs.get("subject"))) \
                        if self.fates else Fate(1, 0.0)
                    for _ in range(fate.copies * (2 if self.duplicate else 1)):
                        due = now + fate.delay + (self._rng.uniform(0, self.jitter) if self.jitter else 0.0)
                        heapq.heappush(self._heap, _Pending(due, next(self._seq), record, trigger))
            self._cond.notify_all()
        if self.on_publish:
            self.on_publish(record)

    # -- delivery -----------------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._stopped and (not self._heap or self._heap[0].due > time.monotonic()):
                    timeout = self._heap[0].due - time.monotonic() if self._heap else None
                    self._cond.wait(timeout=timeout)
                if self._stopped:
                    return
                pending = heapq.heappop(self._heap)
                self._in_flight += 1
            try:
                self._deliver(pending)
            finally:
                with self._cond:
                    self._in_flight -= 1
                    self._cond.notify_all()

    def _deliver(self, p: _Pending) -> None:
        try:
            answer = send(p.trigger.subscriber, p.record, timeout=p.trigger.delivery.timeout)
        except Unavailable as e:  # connection refused, timeout: Knative retries these
            answer = Answer.unreachable(e)
        reply = answer.event()
        retry = answer.retried and p.attempt < p.trigger.delivery.retry
        final = not retry
        outcome = DeliveryAttempt(p.record, p.trigger.name, answer.status, answer.text if answer.status >= 300 else "",
                          reply, p.attempt, final)
        with self._cond:
            self.outcomes.append(outcome)
        if self.on_outcome:
            self.on_outcome(outcome)
        if reply is not None:
            self.publish(reply)
        elif retry:
            with self._cond:
                due = time.monotonic() + p.trigger.delivery.delay(p.attempt + 1)
                heapq.heappush(self._heap, _Pending(due, next(self._seq), p.record, p.trigger, p.attempt + 1))
                self._cond.notify_all()
        elif answer.status >= 300:
            self._dead_letter(p, answer)

    def _dead_letter(self, p: _Pending, answer: Answer) -> None:
        attrs = {**p.record["attributes"], "knativeerrorcode": str(answer.status),
                 "knativeerrordest": p.trigger.subscriber, "knativeerrordata": answer.text[:1024]}
        record = {"attributes": attrs, "data": p.record.get("data")}
        delivery = p.trigger.delivery
        for attempt in range(delivery.retry + 1):
            if attempt and self._threads:  # deterministic mode does not wait for backoff
                time.sleep(delivery.delay(attempt))
            try:
                if send(self.dead_letter_sink, record, structured=True, timeout=delivery.timeout).accepted:
                    return
            except Unavailable:
                continue
        with self._cond:
            self.dead_letters_lost += 1

    @property
    def dead(self) -> list[Record]:
        """The dead letters, as the sink's file holds them (as it held them at `close`, for a file of
        the Broker's own, removed then)."""
        if self._closed_dead is not None:
            return self._closed_dead
        return read_recording(self.dead_letters)

    # -- deterministic mode -------------------------------------------------------------------

    def round(self) -> int:
        """Deliver everything queued now, in order; return how many deliveries were made."""
        with self._cond:
            batch = sorted(self._heap, key=lambda p: p.seq)
            self._heap.clear()
        if self.swap:
            for i in range(0, len(batch) - 1, 2):
                batch[i], batch[i + 1] = batch[i + 1], batch[i]
        for pending in batch:
            self._deliver(pending)
        return len(batch)

    def drain(self, max_rounds: int = 50) -> None:
        for _ in range(max_rounds):
            if not self.round():
                return
        raise RuntimeError(f"broker did not settle in {max_rounds} rounds: {self.summary()[-10:]}")

    def summary(self) -> list[tuple[str, str, int, str]]:
        """(type, trigger, status, reason or reply type) of every delivery so far."""
        with self._cond:
            return [(o.record["attributes"]["type"], o.trigger, o.status,
                     o.text or (o.reply["attributes"]["type"] if o.reply else "")) for o in self.outcomes]

    # -- control ------------------------------------------------------------------------------

    def idle(self) -> bool:
        with self._cond:
            return not self._heap and self._in_flight == 0

    def wait_idle(self, timeout: float = 60, quiet: float = 0.0) -> bool:
        """Wait until nothing is queued or in flight (retries included), staying so for `quiet` seconds."""
        deadline = time.monotonic() + timeout
        calm_since: float | None = None
        while time.monotonic() < deadline:
            if self.idle():
                calm_since = calm_since or time.monotonic()
                if time.monotonic() - calm_since >= quiet:
                    return True
            else:
                calm_since = None
            time.sleep(0.05)
        return False

    def close(self) -> None:
        """Stop delivering, stop serving, remove the Broker's own dead-letter file; a second call does nothing."""
        with self._cond:
            if self._closed:
                return
            self._closed = self._stopped = True
            self._cond.notify_all()
        deadline = time.monotonic() + CLOSE_WAIT  # one wait for all: a worker may be in a delivery as long as
        for t in self._threads:                  # the Trigger's timeout, to a function stopping beside it
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        for server in (self._server, self._sink):
            if server:
                server.shutdown()
                server.server_close()
        if self._log_file:
            self._log_file.close()
        if self._scratch:
            self._closed_dead = read_recording(self.dead_letters)
            shutil.rmtree(self._scratch, ignore_errors=True)
