"""The CloudEvents codec: the only module that imports `cloudevents` (SPEC §4).

`decode(headers, body)` turns a binary or structured CloudEvent (batch mode is refused) into a record
`{"attributes": {...}, "data": ...}`, the format of recordings, samples and dead letters: binary mode, what
a Broker delivers, is read here directly, structured mode through the SDK. `to_envelope(record)` checks the
required attributes; `encode(event)` renders binary (or structured) mode, `datacontenttype:
application/json`. Outbound events get a fresh `id` and `time` here (`to_record`), and carry
`traceparent`/`tracestate` from their cause (as CloudEvents extensions and as the W3C `traceparent` header
Knative propagates). What is taken at most: `MAX_BODY_BYTES`, `MAX_EXTENSIONS`.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from cloudevents import exceptions as ce_exceptions
from cloudevents.http import from_http

from events.envelope import Envelope, Outbound
from functions.runtime.errors import PermanentError, one_line

Record = dict[str, Any]
CORE_ATTRIBUTES = frozenset({"id", "type", "source", "subject", "specversion", "datacontenttype", "dataschema",
                             "time"})
TRACE_ATTRIBUTES = ("traceparent", "tracestate")
SPEC_VERSIONS = frozenset({"1.0", "0.3"})
MAX_BODY_BYTES = 4 * 1024 * 1024
"""The largest body read: a Kubernetes object (etcd keeps at most 1.5 MiB) in an event, with room to spare."""
MAX_EXTENSIONS = 100
"""The most extension attributes an event may carry (ours carry fewer than 10, ApiServerSource's 4)."""
UUID4_CLEAR = ~(0xF000 << 64 | 0xC000 << 48)
UUID4_SET = 0x4000 << 64 | 0x8000 << 48
"""The version (4) and variant (RFC 4122) bits of a random UUID."""


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
    server passes the span of the request being served)."""
    attrs = record["attributes"]
    for required in ("id", "source", "type"):
        if not isinstance(attrs.get(required), str) or not attrs[required]:
            raise PermanentError(f"not a CloudEvent: attribute {required!r} is missing or empty")
    headers = headers or {}
    return Envelope(
        id=attrs["id"], type=attrs["type"], source=attrs["source"], subject=str(attrs.get("subject") or ""),
        time=str(attrs.get("time") or ""),
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
    """A fresh event id: a random (version 4) UUID from `random`, no system call per event, formatted as
    `str(uuid.UUID(int=..., version=4))` formats it without building the UUID."""
    value = random.getrandbits(128) & UUID4_CLEAR | UUID4_SET
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


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


def within_limits(record: Record) -> Record:
    """The record, or PermanentError when it carries more than MAX_EXTENSIONS extension attributes."""
    if len(record["attributes"]) > MAX_EXTENSIONS + len(CORE_ATTRIBUTES):
        raise PermanentError(f"not a CloudEvent we take: {len(record['attributes'])} attributes, "
                             f"over the limit of {MAX_EXTENSIONS} extensions")
    return record


