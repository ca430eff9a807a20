"""HTTP in and out: the only module that imports `cloudevents` and Flask (SPEC §4, §4.3).

- The codec. `decode(headers, body)` turns binary or structured CloudEvents (batch mode is refused)
  into a record `{"attributes": {...}, "data": ...}`, the format of recordings, samples and dead
  letters; `to_envelope(record)` checks the required attributes; `encode(record)` renders binary (or
  structured) mode, `datacontenttype: application/json`. Outbound events get a fresh `id` and `time`
  here (`to_record`), and carry `traceparent`/`tracestate` from their cause (as CloudEvents
  extensions and as the W3C `traceparent` header Knative propagates).
- The answers. `respond()` serves one request: parse → handler → answer. The handler returns a plan
  (`reply` → 200 with the event, none → 202 with its `reason` logged); an error becomes its answer
  through `ANSWERS`, one table looked up by class, with `Retry-After` when a temporary error knows
  when to come back; anything else is a bug: 500, process kept alive. `receive()` serves an event
  sink's request the same way (the dead-letter recorder: parse → keep the record → 202).
  One JSON log line per request, and the request counted (`functions.metrics`): its event type, its
  answer, its duration and, when the handler ran, its decision (`decision_of`). `GET /metrics` is
  never an event: it answers the process's metrics. `scrape()` serves the `metrics` target.
- The outbound HTTP client. `post()` for raw answers (replay counts them), `deliver()` for a
  CloudEvent that must be accepted (`K_SINK`, a CloudEvents alert sink) and `post_json()` for the
  alert sinks' JSON APIs; answers that are not accepted become the errors of `functions.errors` by
  `error_for()`, the HTTP twin of the gateway's table. A CloudEvent sent with a token file carries
  `Authorization: Bearer` (Knative's OIDC sender identity), the file read at each send (`bearer()`).
- A `Peer` is a sink whose URL and credentials are secrets (an alert sink): its requests carry them,
  its errors name it (`slack`) and never hold them, and its redirects are not followed.
"""

from __future__ import annotations

import base64
import functools
import http.client
import json
import logging
import os
import random
import ssl
import time
import traceback
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import SplitResult, unquote, urlsplit, urlunsplit

from cloudevents import exceptions as ce_exceptions
from cloudevents.http import from_http
from flask import Request, Response

from events.envelope import Envelope, InvalidEvent, Outbound
from events.types import ApiServerType, EventType
from functions import tracing
from functions.errors import (
    AlreadyExists,
    Conflict,
    CrefnError,
    Forbidden,
    NotFound,
    NotYet,
    PermanentError,
    TemporaryError,
    Throttled,
    TooLarge,
    Unavailable,
)
from functions.metrics import Exposition, count_decision, count_event, expose_process

Record = dict[str, Any]
ANSWERS: dict[type[Exception], int] = {
    TooLarge: 413,
    InvalidEvent: 400,
    PermanentError: 400,
    NotFound: 202,
    AlreadyExists: 409,
    Conflict: 409,
    Throttled: 429,
    Forbidden: 503,
    NotYet: 503,
    Unavailable: 503,
    TemporaryError: 503,
}
"""Error class → HTTP answer (SPEC §4.3). An object found gone mid-way is handled: 202."""
RETRIED = frozenset({404, 408, 409, 429, 500, 502, 503, 504})
"""Answers Knative's delivery retries."""
TEMPORARY = frozenset({409, 429, 503})
"""The transient answers of SPEC §4.3 (a 500 is retried too, but it is a bug)."""
RETRY_AFTER = frozenset({429, 503})
"""The answers that carry `Retry-After` when the error knows when to come back (Knative's delivery honours
it for these two, with the `delivery-retryafter` feature and a `retryAfterMax`)."""
CORE_ATTRIBUTES = frozenset({"id", "type", "source", "subject", "specversion", "datacontenttype", "dataschema",
                             "time"})
TRACE_ATTRIBUTES = ("traceparent", "tracestate")
SPEC_VERSIONS = frozenset({"1.0", "0.3"})
MAX_BODY_BYTES = 4 * 1024 * 1024
"""The largest body read: a Kubernetes object (etcd keeps at most 1.5 MiB) in an event, with room to spare."""
MAX_EXTENSIONS = 100
"""The most extension attributes an event may carry (ours carry fewer than 10, ApiServerSource's 4)."""
METRICS_PATH = "/metrics"
SCRAPE_METHODS = frozenset({"GET", "HEAD"})
KNOWN_TYPES = frozenset({*EventType, *ApiServerType})
"""Event types counted by name in `crefn_events_total`; any other is counted as `other`."""
log = logging.getLogger("crefn")


class Reply(Protocol):
    """What a handler returns: the event to reply with, or why there is none."""

    @property
    def reply(self) -> Outbound | None: ...

    @property
    def reason(self) -> str: ...


# -- the codec ----------------------------------------------------------------------------------


def decode(headers: Mapping[str, str], body: bytes) -> Record:
    """A CloudEvent in binary or structured mode as a record; PermanentError with a one-line reason.

    Binary mode, what a Broker delivers, is read here directly (attributes from `ce-*` headers, JSON
    data decoded, anything else kept as bytes); structured mode goes through the SDK."""
    headers = {k.lower(): v for k, v in headers.items()}
    content_type = (headers.get("content-type") or "").lower()
    if content_type.startswith("application/cloudevents-batch"):
        raise PermanentError("batch mode is not supported: send one CloudEvent per request")
    if not content_type.startswith("application/cloudevents") and "ce-specversion" in headers:
        return decode_binary(headers, body)
    try:
        event = from_http(headers, body)
    except ce_exceptions.GenericException as e:
        raise PermanentError(f"not a CloudEvent: {one_line(str(e))}") from e
    except (ValueError, TypeError, AttributeError, UnicodeDecodeError) as e:
        raise PermanentError(f"not a CloudEvent: {one_line(str(e))}") from e
    except RecursionError:
        raise PermanentError("not a CloudEvent: its JSON is nested too deeply") from None
    attrs = {k: v if isinstance(v, str) else str(v) for k, v in event.get_attributes().items() if v is not None}
    return {"attributes": attrs, "data": event.data}


def decode_binary(headers: Mapping[str, str], body: bytes) -> Record:
    attrs = {k[3:]: v for k, v in headers.items() if k.startswith("ce-")}
    if attrs["specversion"] not in SPEC_VERSIONS:
        raise PermanentError(f"not a CloudEvent: Found invalid specversion {attrs['specversion']}")
    if headers.get("content-type"):
        attrs["datacontenttype"] = headers["content-type"]
    data: Any = None
    if body:
        try:
            data = json.loads(body)
        except ValueError:  # not JSON (or not UTF-8): the bytes, as they came
            data = body
        except RecursionError:
            raise PermanentError("the event's data is JSON nested too deeply") from None
    return {"attributes": attrs, "data": data}


def to_envelope(record: Record, headers: Mapping[str, str] | None = None, traceparent: str = "") -> Envelope:
    """The Envelope of a decoded record; `traceparent`, when given, replaces the event's own (the
    transport passes the span of the request being served)."""
    attrs = record["attributes"]
    for required in ("id", "source", "type"):
        if not isinstance(attrs.get(required), str) or not attrs[required]:
            raise PermanentError(f"not a CloudEvent: attribute {required!r} is missing or empty")
    headers = headers or {}
    return Envelope(
        id=attrs["id"], type=attrs["type"], source=attrs["source"], subject=str(attrs.get("subject") or ""),
        extensions={k: str(v) for k, v in attrs.items() if k not in CORE_ATTRIBUTES and k not in TRACE_ATTRIBUTES},
        data=record.get("data"),
        traceparent=traceparent or str(attrs.get("traceparent") or headers.get("traceparent") or ""),
        tracestate=str(attrs.get("tracestate") or headers.get("tracestate") or ""),
    )


def to_record(out: Outbound) -> Record:
    """An outbound event as a record, with a fresh id and the current time."""
    return {"attributes": {**_attributes(out), "datacontenttype": "application/json"}, "data": out.data_json()}


def _attributes(out: Outbound) -> dict[str, str]:
    """An outbound event's attributes but `datacontenttype`: a fresh id, the current time, its trace."""
    attrs: dict[str, str] = {"specversion": "1.0", "id": new_id(), "type": out.type, "source": out.source,
                             "subject": out.subject, "time": datetime.now(UTC).isoformat(), **out.extensions}
    if out.traceparent:
        attrs["traceparent"] = out.traceparent
    if out.tracestate:
        attrs["tracestate"] = out.tracestate
    return attrs


def new_id() -> str:
    """A fresh event id: a random (version 4) UUID from `random`, no system call per event."""
    return str(uuid.UUID(int=random.getrandbits(128), version=4))


def encode(event: Record | Outbound, structured: bool = False) -> tuple[dict[str, str], bytes]:
    """HTTP headers and body of a CloudEvent: binary mode (`ce-*` headers), or structured."""
    if isinstance(event, Outbound) and not structured:
        headers = {f"ce-{k}": v for k, v in _attributes(event).items()}
        headers["content-type"] = "application/json"
        if event.traceparent:
            headers["traceparent"] = event.traceparent
        return headers, event.data.model_dump_json(by_alias=True).encode()
    record = to_record(event) if isinstance(event, Outbound) else event
    attrs = dict(record["attributes"])
    data = record.get("data")
    if structured:
        payload = {**attrs, "data": data.decode(errors="replace") if isinstance(data, bytes) else data}
        return {"content-type": "application/cloudevents+json"}, json.dumps(payload).encode()
    content_type = str(attrs.pop("datacontenttype", "application/json"))
    headers = {f"ce-{k}": str(v) for k, v in attrs.items()}
    headers["content-type"] = content_type
    if attrs.get("traceparent"):
        headers["traceparent"] = str(attrs["traceparent"])
    body = data if isinstance(data, bytes) else (b"" if data is None else json.dumps(data).encode())
    return headers, body


# -- serving ------------------------------------------------------------------------------------


def parse_request(request: Request) -> tuple[Record, dict[str, str]]:
    """An HTTP request's CloudEvent as a record, with the request's headers (lower-case names); raise
    PermanentError with a one-line reason."""
    if request.method != "POST":
        raise PermanentError(f"expected a CloudEvent in a POST request, got {request.method}")
    headers = headers_of(request.environ)
    record = decode(headers, read_body(request))
    if len(record["attributes"]) > MAX_EXTENSIONS + len(CORE_ATTRIBUTES):
        raise PermanentError(f"not a CloudEvent we take: {len(record['attributes'])} attributes, "
                             f"over the limit of {MAX_EXTENSIONS} extensions")
    return record, headers


def read_body(request: Request) -> bytes:
    """The request's body, refused (TooLarge) past MAX_BODY_BYTES without reading it whole."""
    length = request.content_length
    if length is not None and length > MAX_BODY_BYTES:
        raise TooLarge(f"request body of {length} bytes is over the limit of {MAX_BODY_BYTES} bytes")
    body = request.stream.read(MAX_BODY_BYTES + 1)
    if len(body) > MAX_BODY_BYTES:
        raise TooLarge(f"request body is over the limit of {MAX_BODY_BYTES} bytes")
    return body


def headers_of(environ: Mapping[str, Any]) -> dict[str, str]:
    """A WSGI request's headers, lower-case, read from the environ directly (not through werkzeug's view)."""
    headers = {key[5:].lower().replace("_", "-"): value for key, value in environ.items()
               if key.startswith("HTTP_")}
    for key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        if environ.get(key):
            headers[key.lower().replace("_", "-")] = environ[key]
    return headers


def answer_for(error: Exception) -> int | None:
    """The HTTP answer of an error class (the nearest listed base), or None for a bug."""
    for cls in type(error).__mro__:
        if cls in ANSWERS:
            return ANSWERS[cls]
    return None


@dataclass(frozen=True)
class Taken:
    """What a sink made of an event: nothing to reply, and what it did (the 202's logged reason)."""

    reason: str
    reply: None = None


def respond(request: Request, handler: Callable[[Envelope], Reply], function: str) -> Response:
    """Serve one request: parse → handler → answer (SPEC §4.3); `GET /metrics`: the process's metrics.

    The request is one span (`functions.tracing`): a child of the caller's `traceparent`, and the
    parent of every event the handler emits (the Envelope it gets carries the span's own)."""
    return _serve(request, function, lambda record, env: handler(env), decided=True)


def receive(request: Request, take: Callable[[Record], str], function: str) -> Response:
    """Serve one request of an event sink (`cre-fn record`) as `respond()` serves a function's, with the
    same limits and answers: the record to `take`, which says what it did (202) or raises (its answer).
    No decision is counted: a sink decides nothing."""
    return _serve(request, function, lambda record, env: Taken(take(record)), decided=False)


def _serve(request: Request, function: str, act: Callable[[Record, Envelope], Reply], decided: bool) -> Response:
    if request.method in SCRAPE_METHODS and request.path == METRICS_PATH:
        return _exposed(expose_process(request.headers.get("Accept", "")))
    started = time.monotonic()
    try:
        record, headers = parse_request(request)
        attrs = record["attributes"]
        span = tracing.begin(str(attrs.get("traceparent") or headers.get("traceparent") or ""),
                             str(attrs.get("tracestate") or headers.get("tracestate") or ""), function)
        env = to_envelope(record, headers, span.traceparent)
    except (CrefnError, InvalidEvent) as e:
        span = tracing.begin(request.headers.get("traceparent", ""), request.headers.get("tracestate", ""), function)
        return _answer(function, None, span, started, answer_for(e) or 500, one_line(str(e)), "")
    except Exception as e:  # a bug: answer 500, keep the process alive
        span = tracing.begin(request.headers.get("traceparent", ""), request.headers.get("tracestate", ""), function)
        return _bug(function, None, span, started, e)
    try:
        outcome = act(record, env)
    except (CrefnError, InvalidEvent) as e:
        return _answer(function, env, span, started, answer_for(e) or 500, one_line(str(e)),
                       decision_of(e) if decided else "", e.retry_after if isinstance(e, TemporaryError) else None)
    except Exception as e:  # a bug: answer 500, keep the process alive
        return _bug(function, env, span, started, e, "error:internal" if decided else "")
    if outcome.reply is None:
        return _answer(function, env, span, started, 202, outcome.reason, "nothing" if decided else "")
    headers, body = encode(outcome.reply)
    _log(function, env, span, started, 200, f"replied {outcome.reply.type}", decision_of(outcome.reply),
         outcome.reply.subject)
    return Response(body, status=200, headers=headers)


def _bug(function: str, env: Envelope | None, span: tracing.Span, started: float, e: Exception,
         decision: str = "") -> Response:
    log.error(tracing.log_line({"function": function, "error": repr(e), "trace": traceback.format_exc()}))
    return _answer(function, env, span, started, 500, one_line(f"internal error: {type(e).__name__}: {e}"), decision)


def decision_of(made: Outbound | Exception) -> str:
    """The `decision` label of `crefn_decisions_total`: `reply:<type without dev.crefn.>`, or what an
    error means: `wait` (NotYet), `conflict`, `gone` (NotFound), else `error:<class>`."""
    if isinstance(made, Outbound):
        return f"reply:{made.type.removeprefix('dev.crefn.')}"
    for cls, word in ((NotYet, "wait"), (Conflict, "conflict"), (NotFound, "gone")):
        if isinstance(made, cls):
            return word
    return f"error:{type(made).__name__}"


def scrape(request: Request, collect: Callable[[str], Exposition], function: str) -> Response:
    """Serve a scrape target: `GET /metrics` → what `collect(accept)` renders; an error of ours (the API
    unreachable, or refusing) → 503 with one line; another path → 404; another method → 405."""
    if request.method not in SCRAPE_METHODS:
        return Response(f"{request.method} is not allowed: scrape with GET {METRICS_PATH}\n", status=405,
                        mimetype="text/plain", headers={"Allow": ", ".join(sorted(SCRAPE_METHODS))})
    if request.path != METRICS_PATH:
        return Response(f"not found: {one_line(request.path, 100)} (the metrics are at {METRICS_PATH})\n",
                        status=404, mimetype="text/plain")
    try:
        exposition = collect(request.headers.get("Accept", ""))
    except CrefnError as e:
        log.warning(tracing.log_line({"function": function, "status": 503, "reason": one_line(str(e))}))
        return Response(one_line(str(e)) + "\n", status=503, mimetype="text/plain")
    except Exception as e:  # a bug: answer 500, keep the process alive
        log.error(tracing.log_line({"function": function, "error": repr(e), "trace": traceback.format_exc()}))
        return Response(one_line(f"internal error: {type(e).__name__}: {e}") + "\n", status=500,
                        mimetype="text/plain")
    return _exposed(exposition)


def _exposed(exposition: Exposition) -> Response:
    return Response(exposition.body, status=200, content_type=exposition.content_type)


def _answer(function: str, env: Envelope | None, span: tracing.Span, started: float, status: int, reason: str,
            decision: str, retry_after: int | None = None) -> Response:
    """The answer; a 429 or 503 whose error knows when to come back says so (`Retry-After`, seconds)."""
    _log(function, env, span, started, status, reason, decision)
    if status == 202:
        return Response(b"", status=202)
    if status == ANSWERS[TooLarge]:  # streamed: functions-framework would read the whole body before a plain answer
        return Response(iter([reason + "\n"]), status=status, mimetype="text/plain")
    headers = {"Retry-After": str(retry_after)} if retry_after is not None and status in RETRY_AFTER else {}
    return Response(reason + "\n", status=status, mimetype="text/plain", headers=headers)


def _log(function: str, env: Envelope | None, span: tracing.Span, started: float, status: int, reason: str,
         decision: str, job: str = "") -> None:
    """One JSON log line, the request counted (its type, answer and duration; its decision if any) and
    its span ended."""
    seconds = time.monotonic() - started
    level = logging.WARNING if status >= 400 else logging.INFO
    if status >= 500 and status != 503:
        level = logging.ERROR
    if log.isEnabledFor(level):
        record = {"function": function, "status": status, "reason": reason, "id": env.id if env else None,
                  "type": env.type if env else None, "subject": env.subject if env else None,
                  "ms": round(seconds * 1000, 1), "trace_id": span.trace_id}
        log.log(level, json.dumps(record))
    event_type = "none" if env is None else env.type if env.type in KNOWN_TYPES else "other"
    count_event(function, event_type, status, seconds)
    if decision:
        count_decision(function, decision)
    if span.sdk is not None:
        attributes: dict[str, str | int] = {"crefn.function": function, "http.response.status_code": status,
                                            "crefn.decision": decision or "none"}
        if env is not None:
            attributes |= {"cloudevents.event_type": env.type, "cloudevents.event_id": env.id,
                           "cloudevents.event_source": env.source, "crefn.job": job or job_of(env)}
        tracing.end(span, attributes, reason if status >= 500 else "")
    else:
        tracing.end(span, {})


def job_of(env: Envelope) -> str:
    """`namespace/name` of the CRE Job an event concerns, as far as the event itself says."""
    if env.extensions.get("namespace") and env.extensions.get("job"):
        return f"{env.extensions['namespace']}/{env.extensions['job']}"
    obj: dict[str, Any] = env.data if isinstance(env.data, dict) else {}
    meta: dict[str, Any] = obj["metadata"] if isinstance(obj.get("metadata"), dict) else {}
    namespace, labels = str(meta.get("namespace") or ""), meta.get("labels")
    if obj.get("kind") == "Job" and namespace and meta.get("name"):
        return f"{namespace}/{meta['name']}"
    for key, value in (labels.items() if isinstance(labels, dict) else ()):
        if key.endswith("/job") and namespace:
            return f"{namespace}/{value}"
    return ""


def one_line(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


# -- the outbound HTTP client -------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def ce(self) -> dict[str, str]:
        """The answer's CloudEvent attributes (binary mode)."""
        return {k[3:]: v for k, v in self.headers.items() if k.startswith("ce-")}

    @property
    def text(self) -> str:
        return self.body.decode(errors="replace").strip()

    @property
    def accepted(self) -> bool:
        return 200 <= self.status < 300

    @property
    def temporary(self) -> bool:
        """A transient answer of SPEC §4.3: the event is fine, try again later."""
        return self.status in TEMPORARY

    @property
    def retried(self) -> bool:
        """Whether Knative's delivery would retry this answer."""
        return self.status in RETRIED

    def json(self) -> Any:
        return json.loads(self.body)

    @classmethod
    def unreachable(cls, error: Exception) -> Answer:
        """What a peer that could not be reached amounts to: a 503, as Knative counts it."""
        return cls(503, {}, str(error).encode())

    def event(self) -> Record | None:
        """The CloudEvent of a 200 answer (a Knative reply), if it carries one."""
        return decode(self.headers, self.body) if self.status == 200 and self.ce else None


def post(url: str, headers: Mapping[str, str], body: bytes, timeout: float = 30,
         opener: urllib.request.OpenerDirector | None = None) -> Answer:
    """One POST (through `opener`, a Peer's, when given); the answer whatever its status. Unavailable when the
    peer cannot be reached."""
    request = urllib.request.Request(url, data=body, headers=dict(headers), method="POST")
    try:
        with (opener.open if opener else urllib.request.urlopen)(request, timeout=timeout) as resp:
            return Answer(resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read())
    except urllib.error.HTTPError as e:
        with e:
            return Answer(e.code, {k.lower(): v for k, v in e.headers.items()}, e.read())
    except (urllib.error.URLError, OSError) as e:
        raise Unavailable(f"{url} unreachable: {getattr(e, 'reason', e)}") from e
    except http.client.HTTPException as e:  # the peer went away mid-answer (a killed pod)
        raise Unavailable(f"{url} answered incompletely: {type(e).__name__}") from e


def send(url: str, event: Record | Outbound, structured: bool = False, timeout: float = 30,
         token_file: str | None = None) -> Answer:
    """POST one CloudEvent, with the token of `token_file` if given; the answer whatever its status."""
    headers, body = encode(event, structured)
    return post(url, {**headers, **bearer(token_file)}, body, timeout)


def bearer(token_file: str | None) -> dict[str, str]:
    """The `Authorization` header of the OIDC token in `token_file`, read now (a projected token is rotated
    by the kubelet), or none without a file. TemporaryError, naming the file and never its content, when
    it cannot be read or holds no token (one line of visible ASCII)."""
    if not token_file:
        return {}
    try:
        raw = Path(token_file).read_bytes()
    except OSError as e:
        raise TemporaryError(f"OIDC token file {token_file} cannot be read: {e.strerror or type(e).__name__}") \
            from e
    token = raw.strip()
    if not token or not all(0x21 <= b <= 0x7E for b in token):
        raise TemporaryError(f"OIDC token file {token_file} holds no token (want one line of visible ASCII, "
                             f"got {len(raw)} bytes)")
    return {"authorization": f"Bearer {token.decode()}"}


def error_for(what: str, answer: Answer) -> CrefnError:
    """The error a peer's answer that is not accepted means: 429 throttled, 5xx unavailable, else refused."""
    if answer.status == 429:
        after = answer.headers.get("retry-after", "")
        seconds = int(after) if after.isascii() and after.isdigit() else None  # an HTTP-date: not known here
        return Throttled(f"{what}: throttled (429{f', retry after {after}s' if after else ''})", seconds)
    if answer.status >= 500:
        return Unavailable(f"{what}: answered {answer.status}: {one_line(answer.text, 200)}")
    return PermanentError(f"{what}: answered {answer.status}: {one_line(answer.text, 200)}")


def deliver(url: str | Peer, event: Record | Outbound, what: str = "", timeout: float = 10,
            token_file: str | None = None) -> Answer:
    """POST one CloudEvent that must be accepted (2xx); otherwise the error its answer means."""
    if isinstance(url, Peer):
        headers, body = encode(event)
        answer = url.post(headers, body, timeout)
        if not answer.accepted:
            raise error_for(url.name, answer)
        return answer
    try:
        answer = send(url, event, timeout=timeout, token_file=token_file)
    except Unavailable as e:
        raise Unavailable(f"{what or 'sink'}: {e}") from e
    if not answer.accepted:
        raise error_for(what or f"sink {url}", answer)
    return answer


def post_json(peer: Peer, payload: Any, timeout: float = 10, expect: Sequence[int] = ()) -> Answer:
    """POST a JSON document to an HTTP API; the error its answer means unless it is accepted."""
    answer = peer.post({"content-type": "application/json"}, json.dumps(payload).encode(), timeout)
    if not answer.accepted or (expect and answer.status not in expect):
        raise error_for(peer.name, answer)
    return answer


# -- a peer whose URL and credentials are secrets -----------------------------------------------

SHORTEST_SECRET = 4
"""Secrets shorter than this are not cut out of error texts: cutting them would cut words."""


@dataclass(frozen=True)
class Peer:
    """An HTTP peer whose URL and credentials are secrets: a webhook's path, a token in the query, a user and
    password in the URL (sent as basic auth, the URL without them), a bearer token, a password; a credential
    in a file is read at each send (it may be rotated). Errors name the peer (`name`) and never hold a secret:
    every text they carry, the peer's answer included, has them cut out (`scrub`), and no cause is chained.
    Redirects are not followed (a 3xx answer is refused): the credentials go to the configured host only.
    `ca_file`: PEM certificates verifying the peer's TLS certificate, instead of the system's."""

    name: str
    url: str = field(repr=False)
    bearer_token: str = field(default="", repr=False)
    bearer_token_file: str = ""
    username: str = ""
    password: str = field(default="", repr=False)
    password_file: str = ""
    ca_file: str = ""
    secrets: tuple[str, ...] = field(default=(), repr=False)
    """More text to cut out of errors (what the body carries: a routing key)."""

    def at(self, path: str) -> Peer:
        """The same peer, `path` appended to its URL's path."""
        parts = urlsplit(self.url)
        return replace(self, url=urlunsplit(parts._replace(path=parts.path.rstrip("/") + path)))

    def post(self, headers: Mapping[str, str], body: bytes, timeout: float) -> Answer:
        """One POST with the peer's credentials; the answer whatever its status (scrubbed unless 2xx). Unavailable
        when the peer cannot be reached, or a credential or CA file cannot be read; PermanentError when its URL
        or a credential cannot be sent (a character HTTP does not carry)."""
        parts = urlsplit(self.url)
        authorization, said = self._authorization(parts)
        secrets = self._secret_texts(parts, said)
        url = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
        try:
            answer = post(url, {**headers, **authorization}, body, timeout, self._opener())
        except Unavailable as e:
            reason = getattr(e.__cause__, "reason", e.__cause__)
            raise Unavailable(scrub(f"{self.name}: unreachable ({reason})", secrets)) from None
        except ValueError as e:  # urllib and http.client quote the URL or the header they refuse
            raise PermanentError(f"{self.name}: its URL or credentials cannot be sent ({type(e).__name__})") \
                from None
        return answer if answer.accepted else replace(answer, body=scrub(answer.text, secrets).encode())

    def _authorization(self, parts: SplitResult) -> tuple[dict[str, str], list[str]]:
        """The Authorization header, and the credentials it says (to scrub)."""
        if self.bearer_token or self.bearer_token_file:
            token = self.bearer_token or self._read(self.bearer_token_file, "bearer token")
            return {"authorization": f"Bearer {token}"}, [token]
        username = self.username or unquote(parts.username or "")
        if not username:
            return {}, []
        password = (self.password or (self._read(self.password_file, "password") if self.password_file else "")
                    if self.username else unquote(parts.password or ""))
        basic = base64.b64encode(f"{username}:{password}".encode()).decode()
        return {"authorization": f"Basic {basic}"}, [password, basic]

    def _read(self, path: str, what: str) -> str:
        """A credential from its file, read now; Unavailable naming the file, never its content."""
        try:
            text = Path(path).read_text(errors="replace").strip()
        except OSError as e:
            raise Unavailable(f"{self.name}: its {what} file {path} cannot be read "
                              f"({e.strerror or type(e).__name__})") from None
        if not text:
            raise Unavailable(f"{self.name}: its {what} file {path} is empty")
        return text

    def _secret_texts(self, parts: SplitResult, said: list[str]) -> list[str]:
        path = parts.path if parts.path not in ("", "/") else ""
        userinfo = parts.netloc.rpartition("@")[0]
        found = [self.url, userinfo, unquote(parts.password or ""), path, parts.query, unquote(path),
                 self.bearer_token, self.password, *said, *self.secrets]
        return sorted({s for s in found if len(s) >= SHORTEST_SECRET}, key=len, reverse=True)

    def _opener(self) -> urllib.request.OpenerDirector:
        try:
            return _opener(self.ca_file, os.stat(self.ca_file).st_mtime_ns if self.ca_file else 0)
        except OSError as e:  # ssl.SSLError too: not PEM
            raise Unavailable(f"{self.name}: its CA file {self.ca_file} cannot be used "
                              f"({getattr(e, 'strerror', None) or type(e).__name__})") from None


def scrub(text: str, secrets: Sequence[str]) -> str:
    """`text` with every secret (longest first) cut out."""
    for secret in secrets:
        text = text.replace(secret, "[redacted]")
    return text


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any) -> None:
        return None  # the 3xx becomes the answer


@functools.lru_cache(maxsize=16)
def _opener(ca_file: str, stamp: int) -> urllib.request.OpenerDirector:
    """An opener following no redirect, verifying TLS with `ca_file` when given (made again when the file
    changes: `stamp` is its modification time)."""
    handlers: list[urllib.request.BaseHandler] = [_NoRedirect()]
    if ca_file:
        handlers.append(urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=ca_file)))
    return urllib.request.build_opener(*handlers)
