"""W3C trace context, and OTLP spans when asked for: the only module that imports `opentelemetry`.

Each request is one span. `begin(traceparent, tracestate)` opens it as a tracer would: the caller's
trace id is kept and a new span id made (a missing or invalid `traceparent` starts a new trace); the
events the function emits carry the span's own `traceparent` and the caller's `tracestate`, so the
next function's span is this one's child. `current_trace_id()` is the trace id of the request this
thread serves, which every log line carries (`functions.runtime.logs`).

With `OTEL_EXPORTER_OTLP_ENDPOINT` set, the span is made and exported by the OpenTelemetry SDK (OTLP
over HTTP/protobuf, batched in the background; the standard `OTEL_*` variables apply, and the
`service.name` is `OTEL_SERVICE_NAME`, else Knative's `K_SERVICE`, else `cre-functions`). Without it
the SDK is never imported and the ids are made here: nothing is exported and nothing is slower.
"""

from __future__ import annotations

import functools
import os
import random
import re
import threading
from dataclasses import dataclass
from typing import Any

TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?")
"""W3C Trace Context `traceparent`: version-traceid-parentid-flags (later versions may append fields)."""
INVALID_TRACE_ID = "0" * 32
INVALID_SPAN_ID = "0" * 16
SAMPLED = "01"
SERVICE_NAME = "cre-functions"
_local = threading.local()


@dataclass(frozen=True)
class Parent:
    trace_id: str
    span_id: str
    flags: str


@dataclass
class Span:
    """One request's span: its ids, and the SDK's span when spans are exported."""

    trace_id: str
    span_id: str
    flags: str
    parent_id: str = ""
    sdk: Any = None

    @property
    def traceparent(self) -> str:
        return f"00-{self.trace_id}-{self.span_id}-{self.flags}"


def parse(traceparent: str) -> Parent | None:
    """The caller's span from a `traceparent` header, or None when it is missing or invalid."""
    match = TRACEPARENT.fullmatch(traceparent.strip().lower()) if traceparent else None
    if match is None:
        return None
    version, trace_id, span_id, flags, rest = match.groups()
    if version == "ff" or (version == "00" and rest) or trace_id == INVALID_TRACE_ID or span_id == INVALID_SPAN_ID:
        return None
    return Parent(trace_id, span_id, flags)


def begin(traceparent: str, tracestate: str = "", name: str = "") -> Span:
    """Open this request's span, a child of the caller's (or the root of a new trace)."""
    parent = parse(traceparent)
    exporter = _tracer()
    if exporter is not None:
        span = exporter.start(name, parent, tracestate)
    elif parent is not None:
        span = Span(parent.trace_id, _new_id(8), parent.flags, parent.span_id)
    else:
        span = Span(_new_id(16), _new_id(8), SAMPLED)
    _local.trace_id = span.trace_id
    return span


def end(span: Span, attributes: dict[str, str | int], error: str = "") -> None:
    """Close the span with what the request came to; export it if spans are exported."""
    _local.trace_id = ""
    if span.sdk is not None:
        _Tracer.finish(span.sdk, attributes, error)


def current_trace_id() -> str:
    """The trace id of the request this thread is serving ("" outside a request)."""
    return str(getattr(_local, "trace_id", ""))


def _new_id(size: int) -> str:
    """A random non-zero id of `size` bytes, in hex (as the SDK's own generator makes them: `random`,
    reseeded in a forked worker; no system call per id)."""
    while not (value := random.getrandbits(8 * size)):
        pass
    return f"{value:0{2 * size}x}"


def exporting() -> bool:
    return bool(os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


@functools.cache
def _tracer() -> _Tracer | None:
    return _Tracer() if exporting() else None


def flush(timeout_millis: int = 5000) -> bool:
    """Export the spans still batched (the SDK also does it when the process exits)."""
    tracer = _tracer()
    return tracer.provider.force_flush(timeout_millis) if tracer is not None else True


class _Tracer:
    """The OpenTelemetry SDK's tracer with a batching OTLP/HTTP exporter, made on the first request."""

    def __init__(self) -> None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.trace import SpanKind
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        attributes = {} if os.environ.get("OTEL_SERVICE_NAME") else {
            "service.name": os.environ.get("K_SERVICE") or SERVICE_NAME}
        self.provider = TracerProvider(resource=Resource.create(attributes))
        self.provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        self.tracer = self.provider.get_tracer("cre-functions")
        self.propagator = TraceContextTextMapPropagator()
        self.kind = SpanKind.SERVER

    def start(self, name: str, parent: Parent | None, tracestate: str) -> Span:
        carrier = {"traceparent": f"00-{parent.trace_id}-{parent.span_id}-{parent.flags}"} if parent else {}
        if parent and tracestate:
            carrier["tracestate"] = tracestate
        sdk = self.tracer.start_span(name or SERVICE_NAME, context=self.propagator.extract(carrier), kind=self.kind)
        ctx = sdk.get_span_context()
        return Span(f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}", f"{int(ctx.trace_flags):02x}",
                    parent.span_id if parent else "", sdk)

    @staticmethod
    def finish(sdk: Any, attributes: dict[str, str | int], error: str) -> None:
        from opentelemetry.trace import Status, StatusCode

        sdk.set_attributes(attributes)
        if error:
            sdk.set_status(Status(StatusCode.ERROR, error))
        sdk.end()
