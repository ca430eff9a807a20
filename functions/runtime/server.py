"""Serving one request: the only module that imports Flask (SPEC §4.3).

`respond()` serves a function's request: parse (`functions.runtime.codec`) → handler → answer. The handler returns
a plan (`reply` → 200 with the event, none → 202 with its `reason` logged); an error becomes its answer
through `ANSWERS`, one table looked up by class, with `Retry-After` when a temporary error knows when to
come back; anything else is a bug: 500, process kept alive. `receive()` serves an event sink's request the
same way (the dead-letter recorder: parse → keep the record → 202). One JSON log line per request, and the
request counted (`functions.runtime.metrics`): its event type, its answer, its duration and, when the handler ran,
its decision (`decision_of`). `GET /metrics` is never an event: it answers the process's metrics.
`scrape()` serves the `metrics` target. Each answer's `outcome` (`outcome_of`) tells a designed wait from a failure.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from flask import Request, Response

from events.envelope import Envelope, InvalidEvent, Outbound
from events.types import ApiServerType, EventType
from functions.runtime import tracing
from functions.runtime.codec import MAX_BODY_BYTES, Record, decode, encode, to_envelope, within_limits
from functions.runtime.errors import (
    AlreadyExists,
    Conflict,
    CrefnError,
    Forbidden,
    NotFound,
    NotYet,
    PermanentError,
    Stalled,
    TemporaryError,
    Throttled,
    TooLarge,
    Unavailable,
    Unrecorded,
    one_line,
)
from functions.runtime.logs import concern, fields, job_of, of_job
from functions.runtime.metrics import Exposition, count_decision, count_event, expose_process
from functions.runtime.replied import Replied

ANSWERS: dict[type[Exception], int] = {
    TooLarge: 413,
    Stalled: 408,
    InvalidEvent: 400,
    PermanentError: 400,
    NotFound: 202,
    AlreadyExists: 409,
    Unrecorded: 409,
    Conflict: 409,
    Throttled: 429,
    Forbidden: 503,
    NotYet: 503,
    Unavailable: 503,
    TemporaryError: 503,
}
"""Error class → HTTP answer (SPEC §4.3). An object found gone mid-way is handled: 202."""
RETRIED = frozenset({408, 409, 429})
"""Answers Knative retries that are no failure: a body that stopped arriving, a write that met another, a slow-down."""
RETRY_AFTER = frozenset({429, 503})
"""The answers that carry `Retry-After` when the error knows when to come back (Knative's delivery honours
it for these two, with the `delivery-retryafter` feature and a `retryAfterMax`)."""
METRICS_PATH = "/metrics"
SCRAPE_METHODS = frozenset({"GET", "HEAD"})
KNOWN_TYPES = frozenset({*EventType, *ApiServerType})
"""Event types counted by name in `crefn_events_total`; any other is counted as `other`."""
FOLLOW_UP_FAILED = "followup:failed"
"""The `decision` counted, besides the answer's own, when what was to follow the handler's writes failed."""
log = logging.getLogger("crefn")


class Reply(Protocol):
    """What a handler returns: the event to reply with, or why there is none."""

    @property
    def reply(self) -> Outbound | None: ...

    @property
    def reason(self) -> str: ...

    @property
    def unfinished(self) -> bool:
        """What was to follow the handler's writes failed (said in `reason`, the answer stands)."""
        ...


def parse_request(request: Request) -> tuple[Record, dict[str, str]]:
    """An HTTP request's CloudEvent as a record, with the request's headers (lower-case names); raise
    PermanentError with a one-line reason."""
    if request.method != "POST":
        raise PermanentError(f"expected a CloudEvent in a POST request, got {request.method}")
    headers = headers_of(request.environ)
    return within_limits(decode(headers, read_body(request))), headers


def read_body(request: Request) -> bytes:
    """The request's body, refused (TooLarge) past MAX_BODY_BYTES without reading it whole."""
    environ = request.environ
    length = request.content_length
    if length is not None and length > MAX_BODY_BYTES:
        raise TooLarge(f"request body of {length} bytes is over the limit of {MAX_BODY_BYTES} bytes")
    # gunicorn ends the stream itself (chunked or not) and says so: read as werkzeug's `stream` would, without
    # looking Flask's MAX_CONTENT_LENGTH up through the app context on every request
    stream = environ["wsgi.input"] if "wsgi.input_terminated" in environ else request.stream
    try:
        body = stream.read(MAX_BODY_BYTES + 1)
    except (BlockingIOError, TimeoutError):  # the connection's receive bound (`CREFN_CLIENT_STALL_SECONDS`) passed
        raise Stalled("the request's body stopped arriving (nothing for CREFN_CLIENT_STALL_SECONDS)") from None
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
    unfinished: bool = False


def respond(request: Request, handler: Callable[[Envelope], Reply], function: str) -> Response:
    """Serve one request: parse → handler → answer (SPEC §4.3); `GET /metrics`: the process's metrics.

    The request is one span (`functions.runtime.tracing`): a child of the caller's `traceparent`, and the
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
        concern(job_of(env))
    except (CrefnError, InvalidEvent) as e:
        span = tracing.begin(request.headers.get("traceparent", ""), request.headers.get("tracestate", ""), function)
        return _answer(function, None, span, started, answer_for(e) or 500, one_line(str(e)), "", error=e)
    except Exception as e:  # a bug: answer 500, keep the process alive
        span = tracing.begin(request.headers.get("traceparent", ""), request.headers.get("tracestate", ""), function)
        return _bug(function, None, span, started, e)
    try:
        outcome = act(record, env)
    except (CrefnError, InvalidEvent) as e:
        return _answer(function, env, span, started, answer_for(e) or 500, one_line(str(e)),
                       decision_of(e) if decided else "", e.retry_after if isinstance(e, TemporaryError) else None, e)
    except Exception as e:  # a bug: answer 500, keep the process alive
        return _bug(function, env, span, started, e, "error:internal" if decided else "")
    if decided and outcome.unfinished:
        count_decision(function, FOLLOW_UP_FAILED)
    if outcome.reply is None:
        return _answer(function, env, span, started, 202, outcome.reason, "nothing" if decided else "")
    headers, body = encode(outcome.reply)
    replied = f"replied {outcome.reply.type}"
    _log(function, env, span, started, 200, one_line(f"{replied}: {outcome.reason}") if outcome.reason else replied,
         decision_of(outcome.reply), "ok", outcome.reply.subject)
    return Replied(headers, body)


def _bug(function: str, env: Envelope | None, span: tracing.Span, started: float, e: Exception,
         decision: str = "") -> Response:
    _log_bug(function, e)
    return _answer(function, env, span, started, 500, one_line(f"internal error: {type(e).__name__}: {e}"), decision)


def _log_bug(function: str, e: Exception) -> None:
    log.error(one_line(f"internal error: {type(e).__name__}: {e}"),
              extra=fields(function=function, error=repr(e), trace=traceback.format_exc()))


def decision_of(made: Outbound | Exception) -> str:
    """The `decision` label of `crefn_decisions_total`: `reply:<type without dev.crefn.>`, or what an
    error means: `wait` (NotYet), `conflict`, `gone` (NotFound), else `error:<class>`."""
    if isinstance(made, Outbound):
        return f"reply:{made.type.removeprefix('dev.crefn.')}"
    for cls, word in ((NotYet, "wait"), (Conflict, "conflict"), (NotFound, "gone")):
        if isinstance(made, cls):
            return word
    return f"error:{type(made).__name__}"


def outcome_of(status: int, error: Exception | None = None) -> str:
    """The `outcome` label of `crefn_events_total`, one of five: `ok` (2xx: handled), `wait` (a designed wait,
    `NotYet`: too early, nothing is wrong), `retry` (408, 409, 429), `refused` (another 4xx: never retried) or `error`
    (every other answer: a peer down or refusing, a bug)."""
    if isinstance(error, NotYet):
        return "wait"
    if status < 300:
        return "ok"
    if status in RETRIED:
        return "retry"
    return "refused" if status < 500 else "error"


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
        log.warning(one_line(str(e)), extra=fields(function=function, status=503))
        return Response(one_line(str(e)) + "\n", status=503, mimetype="text/plain")
    except Exception as e:  # a bug: answer 500, keep the process alive
        _log_bug(function, e)
        return Response(one_line(f"internal error: {type(e).__name__}: {e}") + "\n", status=500,
                        mimetype="text/plain")
    return _exposed(exposition)


def _exposed(exposition: Exposition) -> Response:
    return Response(exposition.body, status=200, content_type=exposition.content_type)


def _answer(function: str, env: Envelope | None, span: tracing.Span, started: float, status: int, reason: str,
            decision: str, retry_after: int | None = None, error: Exception | None = None) -> Response:
    """The answer (to `error`, when there was one); a 429 or 503 whose error knows when to come back says so
    (`Retry-After`, seconds)."""
    _log(function, env, span, started, status, reason, decision, outcome_of(status, error))
    if status == 202:
        return Response(b"", status=202)
    if status in (ANSWERS[TooLarge], ANSWERS[Stalled]):  # streamed: functions-framework would read the whole body
        # (or wait for the rest of it) before a plain answer
        return Response(iter([reason + "\n"]), status=status, mimetype="text/plain")
    headers = {"Retry-After": str(retry_after)} if retry_after is not None and status in RETRY_AFTER else {}
    return Response(reason + "\n", status=status, mimetype="text/plain", headers=headers)


def _log(function: str, env: Envelope | None, span: tracing.Span, started: float, status: int, reason: str,
         decision: str, outcome: str, job: str = "") -> None:
    """One JSON log line, the request counted (its type, answer, outcome and duration; its decision if any) and
    its span ended."""
    seconds = time.monotonic() - started
    level = logging.WARNING if status >= 400 else logging.INFO
    if status >= 500 and status != 503:
        level = logging.ERROR
    where = job or (job_of(env) if env is not None else "")
    if log.isEnabledFor(level):
        log.log(level, reason, extra=fields(
            function=function, status=status, outcome=outcome, id=env.id if env else None,
            type=env.type if env else None, subject=env.subject if env else None, ms=round(seconds * 1000, 1),
            **of_job(where)))
    concern("")
    event_type = "none" if env is None else env.type if env.type in KNOWN_TYPES else "other"
    count_event(function, event_type, status, outcome, seconds)
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


