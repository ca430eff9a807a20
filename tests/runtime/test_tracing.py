"""Trace context as a tracer handles it: parsing `traceparent`, one span per request whose id the
replies carry, `trace_id` on every log line, and OTLP export decoded by a loopback receiver."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from functions.runtime import tracing
from functions.runtime.client import Answer, post, send
from localstack.samples import load_sample
from localstack.serving import ServedFunction
from tests.support.helpers import Receiver
from tests.support.paths import REPO

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
TRACE_ID, PARENT_ID = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
INVALID = [
    "", "garbage", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",  # too few fields
    "00-00000000000000000000000000000000-b7ad6b7169203331-01",  # all-zero trace id
    "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",  # all-zero parent id
    "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",  # version ff is forbidden
    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",  # version 00 has exactly four fields
    "00-0af7651916cd43dd8448eb211c80319-b7ad6b7169203331-01",  # 31 hex digits
    "00-0af7651916cd43dd8448eb211c80319g-b7ad6b7169203331-01",  # not hex
]


# -- the rules, in process --------------------------------------------------------------------------


def test_a_valid_traceparent_is_the_parent() -> None:
    assert tracing.parse(TRACEPARENT) == tracing.Parent(TRACE_ID, PARENT_ID, "01")
    assert tracing.parse(TRACEPARENT.upper()) == tracing.Parent(TRACE_ID, PARENT_ID, "01")
    assert tracing.parse("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00").flags == "00"  # type: ignore[union-attr]
    later = tracing.parse("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-future")  # a later version
    assert later == tracing.Parent(TRACE_ID, PARENT_ID, "01")


@pytest.mark.parametrize("value", INVALID)
def test_an_invalid_traceparent_is_no_parent(value: str) -> None:
    assert tracing.parse(value) is None


def test_a_span_keeps_the_callers_trace_and_flags_with_an_id_of_its_own() -> None:
    first, second = tracing.begin(TRACEPARENT, "", "phase"), tracing.begin(TRACEPARENT, "", "phase")
    for span in (first, second):
        assert (span.trace_id, span.parent_id, span.flags) == (TRACE_ID, PARENT_ID, "01")
        assert span.traceparent == f"00-{TRACE_ID}-{span.span_id}-01" and tracing.parse(span.traceparent)
        tracing.end(span, {})
    assert first.span_id != second.span_id and PARENT_ID not in (first.span_id, second.span_id)


@pytest.mark.parametrize("value", INVALID[:4])
def test_without_a_valid_parent_a_new_trace_begins(value: str) -> None:
    span = tracing.begin(value, "", "phase")
    assert tracing.parse(span.traceparent) == tracing.Parent(span.trace_id, span.span_id, "01")
    assert span.trace_id != TRACE_ID and span.parent_id == ""
    tracing.end(span, {})


@pytest.mark.process
def test_without_an_endpoint_the_sdk_is_never_imported() -> None:
    code = ("import sys, functions.main, functions.runtime.tracing as t\n"
            "span = t.begin('', '', 'phase'); t.end(span, {'a': 1})\n"
            "assert span.sdk is None and not t.exporting()\n"
            "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))")
    env = {"PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         cwd=REPO)
    assert out.stdout.strip() == "[]", out.stderr


# -- over HTTP: the replies, the log, the export --------------------------------------------------------


@pytest.fixture(scope="module")
def collector() -> Iterator[Receiver]:
    receiver = Receiver(body=ExportTraceServiceRequest().SerializeToString())
    yield receiver
    receiver.close()


@pytest.fixture(scope="module")
def traced(serve: Callable[..., ServedFunction], collector: Receiver) -> ServedFunction:
    return serve("phase", OTEL_EXPORTER_OTLP_ENDPOINT=collector.url.rstrip("/"), OTEL_BSP_SCHEDULE_DELAY="50",
                 OTEL_SERVICE_NAME="crefn-phase-test")


def spans(collector: Receiver) -> list[tuple[dict[str, Any], Any]]:
    """Every span exported so far, with its resource's attributes."""
    found = []
    for _, headers, body in collector.requests:
        assert headers["content-type"] == "application/x-protobuf"
        request = ExportTraceServiceRequest.FromString(body)
        for resource_spans in request.resource_spans:
            resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                found.extend((resource, span) for span in scope_spans.spans)
    return found


def exported(collector: Receiver, span_id: str, timeout: float = 15) -> tuple[dict[str, Any], Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for resource, span in spans(collector):
            if span.span_id.hex() == span_id:
                return resource, span
        time.sleep(0.05)
    raise AssertionError(f"span {span_id} was not exported within {timeout}s: {len(spans(collector))} spans seen")


def attributes(span: Any) -> dict[str, Any]:
    values = {}
    for a in span.attributes:
        kind = a.value.WhichOneof("value")
        values[a.key] = getattr(a.value, kind)
    return values


def test_one_span_per_request_is_exported_with_the_function_event_answer_and_job(traced: ServedFunction,
                                                                               collector: Receiver) -> None:
    record = load_sample("trainjob-resource-update-failed")
    record["attributes"] |= {"traceparent": TRACEPARENT, "tracestate": "vendor=1"}
    answer = send(traced.url, record)
    assert answer.status == 200, answer.text
    _, trace_id, span_id, _ = answer.ce["traceparent"].split("-")
    assert trace_id == TRACE_ID and answer.ce["tracestate"] == "vendor=1"
    resource, span = exported(collector, span_id)
    assert resource["service.name"] == "crefn-phase-test"
    assert span.trace_id.hex() == TRACE_ID and span.parent_span_id.hex() == PARENT_ID and span.name == "phase"
    assert span.kind == span.SPAN_KIND_SERVER and span.end_time_unix_nano > span.start_time_unix_nano
    assert span.trace_state == "vendor=1"
    assert attributes(span) == {
        "crefn.function": "phase", "http.response.status_code": 200, "crefn.decision": "reply:workload.phase",
        "cloudevents.event_type": record["attributes"]["type"], "cloudevents.event_id": record["attributes"]["id"],
        "cloudevents.event_source": record["attributes"]["source"], "crefn.job": "ml-team/llama-pretrain"}


def test_a_refused_event_is_a_span_too_and_a_new_trace_without_a_parent(traced: ServedFunction,
                                                                       collector: Receiver) -> None:
    before = {span.span_id.hex() for _, span in spans(collector)}
    answer = post(traced.url, {"content-type": "application/json", "ce-specversion": "1.0"}, b"{}")
    assert answer.status == 400, answer.text
    deadline = time.monotonic() + 15
    while not (new := [s for _, s in spans(collector) if s.span_id.hex() not in before]):
        assert time.monotonic() < deadline, "the refused event's span was not exported"
        time.sleep(0.05)
    assert len(new) == 1, new
    assert attributes(new[0])["http.response.status_code"] == 400 and new[0].parent_span_id == b""
    assert "cloudevents.event_type" not in attributes(new[0])


def test_every_log_line_of_a_request_carries_its_trace_id(serve: Callable[..., ServedFunction]) -> None:
    phase = serve("phase")
    record = load_sample("trainjob-resource-update-running")
    record["attributes"] |= {"traceparent": TRACEPARENT, "id": "traced-log-line"}
    answer: Answer = send(phase.url, record)
    assert answer.status == 200, answer.text
    assert phase.log_path is not None
    lines = [json.loads(line) for line in phase.log_path.read_text().splitlines() if line.startswith("{")]
    mine = [line for line in lines if line.get("id") == "traced-log-line"]
    assert mine and all(line["trace_id"] == TRACE_ID for line in mine)
    assert all("trace_id" in line for line in lines)
