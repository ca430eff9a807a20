"""HTTP ⇄ CloudEvents: the only module that imports the CloudEvents SDK and Flask (SPEC §4.3).

In: binary or structured CloudEvents (batch mode is refused). Out: binary mode, `datacontenttype:
application/json`, `traceparent`/`tracestate` carried over from the input (both as CloudEvents
extensions and as the W3C `traceparent` header Knative propagates). Errors become HTTP statuses here
and nowhere else: PermanentError → 400, TemporaryError → 409/429/503, anything else → 500. One JSON
log line per handled request.
"""

from __future__ import annotations

import json
import logging
import time
import traceback
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from cloudevents import exceptions as ce_exceptions
from cloudevents.http import CloudEvent, from_http, to_binary, to_structured
from flask import Request, Response

from events.envelope import Envelope, InvalidEvent, Outbound
from functions.errors import PermanentError, TemporaryError
from functions.outcome import NoReply, Outcome

Handler = Callable[[Envelope], Outcome]

_CORE_ATTRIBUTES = {"id", "type", "source", "subject", "specversion", "datacontenttype", "dataschema", "time"}
_TRACE_ATTRIBUTES = ("traceparent", "tracestate")
log = logging.getLogger("crefn")


def parse_request(request: Request) -> Envelope:
    """Turn an HTTP request into an `Envelope`; raise PermanentError with a one-line reason."""
    if request.method != "POST":
        raise PermanentError(f"expected a CloudEvent in a POST request, got {request.method}")
    content_type = (request.headers.get("content-type") or "").lower()
    if content_type.startswith("application/cloudevents-batch"):
        raise PermanentError("batch mode is not supported: send one CloudEvent per request")
    try:
        event = from_http(dict(request.headers), request.get_data())
    except ce_exceptions.GenericException as e:
        raise PermanentError(f"not a CloudEvent: {_one_line(str(e))}") from e
    except (ValueError, TypeError, UnicodeDecodeError) as e:
        raise PermanentError(f"not a CloudEvent: {_one_line(str(e))}") from e
    attrs: dict[str, Any] = dict(event.get_attributes())
    for required in ("id", "source", "type"):
        if not isinstance(attrs.get(required), str) or not attrs[required]:
            raise PermanentError(f"not a CloudEvent: attribute {required!r} is missing or empty")
    extensions = {
        k: str(v) for k, v in attrs.items() if k not in _CORE_ATTRIBUTES and k not in _TRACE_ATTRIBUTES
    }
    return Envelope(
        id=attrs["id"],
        type=attrs["type"],
        source=attrs["source"],
        subject=str(attrs.get("subject") or ""),
        extensions=extensions,
        data=event.data,
        traceparent=str(attrs.get("traceparent") or request.headers.get("traceparent") or ""),
        tracestate=str(attrs.get("tracestate") or request.headers.get("tracestate") or ""),
    )


def to_cloudevent(out: Outbound) -> CloudEvent:
    attrs: dict[str, Any] = {
        "id": str(uuid.uuid4()),
        "type": out.type,
        "source": out.source,
        "subject": out.subject,
        "specversion": "1.0",
        "time": datetime.now(UTC).isoformat(),
        "datacontenttype": "application/json",
        **out.extensions,
    }
    for name in _TRACE_ATTRIBUTES:
        if value := getattr(out, name):
            attrs[name] = value
    return CloudEvent(attrs, out.data_json())


def to_http(out: Outbound, structured: bool = False) -> tuple[dict[str, str], bytes]:
    """Render an outbound event as HTTP headers and body (binary mode unless asked otherwise)."""
    event = to_cloudevent(out)
    headers, body = to_structured(event) if structured else to_binary(event)
    headers = {k: str(v) for k, v in headers.items()}
    if not structured:
        headers["content-type"] = "application/json"
    if out.traceparent:
        headers["traceparent"] = out.traceparent
    return headers, body if isinstance(body, bytes) else str(body).encode()


def send_event(url: str, out: Outbound, timeout: float = 10) -> int:
    """POST an event in binary mode (to a broker or K_SINK); TemporaryError unless it is accepted (2xx)."""
    headers, body = to_http(out)
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as e:
        with e:
            raise TemporaryError(f"sink {url} answered {e.code}", 503) from e
    except (urllib.error.URLError, OSError) as e:
        raise TemporaryError(f"sink {url} unreachable: {e}", 503) from e


def respond(request: Request, handler: Handler, function: str) -> Response:
    """Serve one request: parse → handler → answer, with the §4.3 status mapping."""
    started = time.monotonic()
    env: Envelope | None = None
    try:
        env = parse_request(request)
        outcome = handler(env)
    except (PermanentError, InvalidEvent) as e:
        return _answer(function, env, started, 400, _one_line(str(e)))
    except TemporaryError as e:
        return _answer(function, env, started, e.status, _one_line(str(e)))
    except Exception as e:  # a bug: answer 500, keep the process alive
        log.error(json.dumps({"function": function, "error": repr(e), "trace": traceback.format_exc()}))
        return _answer(function, env, started, 500, _one_line(f"internal error: {type(e).__name__}: {e}"))
    if isinstance(outcome, NoReply):
        return _answer(function, env, started, 202, outcome.reason)
    headers, body = to_http(outcome)
    _log(function, env, started, 200, f"replied {outcome.type}")
    return Response(body, status=200, headers=headers)


def _answer(function: str, env: Envelope | None, started: float, status: int, reason: str) -> Response:
    _log(function, env, started, status, reason)
    if status == 202:
        return Response(b"", status=202)
    return Response(reason + "\n", status=status, mimetype="text/plain")


def _log(function: str, env: Envelope | None, started: float, status: int, reason: str) -> None:
    level = logging.INFO if status < 500 else logging.ERROR
    if status in (400, 409, 429, 503):
        level = logging.WARNING
    record = {
        "function": function,
        "status": status,
        "reason": reason,
        "id": env.id if env else None,
        "type": env.type if env else None,
        "subject": env.subject if env else None,
        "ms": round((time.monotonic() - started) * 1000, 1),
    }
    log.log(level, json.dumps(record))


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
