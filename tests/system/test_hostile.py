"""Hostile requests against a served function (functions-framework under gunicorn, real sockets): a
body too large, JSON nested too deeply, a flood of headers, an event with thousands of extensions
and clients that stall. Each gets its one-line 4xx and the process stays small and answering."""

from __future__ import annotations

import json
import socket
import time
import urllib.request
from collections.abc import Callable

import pytest

from functions.runtime.client import post
from functions.runtime.codec import MAX_BODY_BYTES, encode
from localstack.samples import load_sample
from localstack.serving import ServedFunction
from tests.support.rawhttp import ce_head, peak_mib, raw

BIG = 50 * 1024 * 1024


@pytest.fixture(scope="module")
def phase(serve: Callable[..., ServedFunction]) -> ServedFunction:
    served = serve("phase", CREFN_LOG_LEVEL="ERROR")
    headers, body = encode(load_sample("trainjob-resource-update-failed"))
    assert post(served.url, headers, body).status == 200  # the first request imports the handler: not measured
    return served


def test_a_body_over_the_limit_is_413_without_being_read(phase: ServedFunction) -> None:
    before = peak_mib(phase.pid or 0)
    status, body = raw(phase.port, ce_head(BIG), (b"x" * 1024 * 1024 for _ in range(50)))
    assert status == 413
    assert body == f"request body of {BIG} bytes is over the limit of {MAX_BODY_BYTES} bytes\n".encode()
    assert peak_mib(phase.pid or 0) - before < 20


def test_a_chunked_body_over_the_limit_is_413_with_the_process_kept_small(phase: ServedFunction) -> None:
    before = peak_mib(phase.pid or 0)
    chunk = b"x" * (1024 * 1024)
    chunks = (b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(50))
    status, body = raw(phase.port, ce_head(None), chunks)
    assert status == 413 and body == f"request body is over the limit of {MAX_BODY_BYTES} bytes\n".encode()
    assert peak_mib(phase.pid or 0) - before < 20


@pytest.mark.parametrize("structured", [False, True], ids=["binary", "structured"])
def test_json_nested_too_deeply_is_400(phase: ServedFunction, structured: bool) -> None:
    nested = "[" * 200_000 + "]" * 200_000
    record = load_sample("trainjob-resource-update-failed")
    if structured:
        body = json.dumps({**record["attributes"], "data": 0}).replace("0}", nested + "}").encode()
        headers = {"content-type": "application/cloudevents+json"}
    else:
        headers, _ = encode(record)
        body = nested.encode()
    answer = post(phase.url, headers, body)
    assert answer.status == 400, answer.text
    assert "nested too deeply" in answer.text and "\n" not in answer.text


def test_a_flood_of_headers_is_431(phase: ServedFunction) -> None:
    flood = "".join(f"\r\nx-flood-{i}: {i}" for i in range(10_000))
    status, _ = raw(phase.port, ce_head(2, flood), [b"{}"])
    assert status == 431  # gunicorn's answer past 100 header fields: Request Header Fields Too Large


def test_an_event_with_ten_thousand_extensions_is_400(phase: ServedFunction) -> None:
    record = load_sample("trainjob-resource-update-failed")
    attributes = {**record["attributes"], **{f"ext{i}": "v" for i in range(10_000)}}
    body = json.dumps({**attributes, "data": record["data"]}).encode()
    answer = post(phase.url, {"content-type": "application/cloudevents+json"}, body)
    assert answer.status == 400
    assert answer.text == "not a CloudEvent we take: 10011 attributes, over the limit of 100 extensions"


def test_clients_that_stall_do_not_block_the_others_of_a_threaded_worker(
        serve: Callable[..., ServedFunction]) -> None:
    served = serve("phase", CREFN_LOG_LEVEL="ERROR", THREADS="8")
    stalled = []
    try:
        for _ in range(3):  # each holds a gunicorn thread, its body never completed
            s = socket.create_connection(("127.0.0.1", served.port), timeout=30)
            s.sendall(ce_head(1000) + b"{")
            stalled.append(s)
        time.sleep(0.2)  # let the server take them up
        headers, body = encode(load_sample("trainjob-resource-update-failed"))
        for _ in range(5):
            assert post(served.url, headers, body, timeout=10).status == 200
    finally:
        for s in stalled:
            s.close()


def test_a_client_that_stalls_holds_a_worker_serving_one_at_a_time_only_for_the_stall_bound(
        serve: Callable[..., ServedFunction]) -> None:
    """`phase` serves one request at a time: a client stalled mid-body is answered 408 (retried by Knative) once it
    has sent nothing for `CREFN_CLIENT_STALL_SECONDS` (here 0.5 s), and dropped; the requests behind it are
    answered."""
    served = serve("phase", CREFN_LOG_LEVEL="ERROR", CREFN_CLIENT_STALL_SECONDS="0.5")
    headers, body = encode(load_sample("trainjob-resource-update-failed"))
    assert post(served.url, headers, body, timeout=10).status == 200
    stalled = []
    try:
        for _ in range(3):  # the first holds the worker, the others wait behind it
            s = socket.create_connection(("127.0.0.1", served.port), timeout=30)
            s.sendall(ce_head(1000) + b"{")
            stalled.append(s)
        started = time.monotonic()
        assert post(served.url, headers, body, timeout=30).status == 200
        assert time.monotonic() - started > 1.5  # it waited behind the three, each held for 0.5 s at least
        for s in stalled:
            answer = s.recv(1000)
            assert answer.startswith(b"HTTP/1.1 408 ")
            assert b"the request's body stopped arriving" in answer
        with urllib.request.urlopen(served.url + "metrics", timeout=10) as scraped:
            counted = scraped.read().decode()
        assert 'crefn_events_total{answer="408",function="phase",outcome="retry",type="none"} 3.0' in counted
    finally:
        for s in stalled:
            s.close()


def test_a_connection_whose_request_has_not_arrived_does_not_hold_a_worker_serving_one_at_a_time(
        serve: Callable[..., ServedFunction]) -> None:
    """It waits in the worker's poller until its request arrives: the requests of others are answered meanwhile,
    however long the stall bound (gunicorn's sync worker held it, reading, for the whole bound)."""
    served = serve("phase", CREFN_LOG_LEVEL="ERROR", CREFN_CLIENT_STALL_SECONDS="60")
    headers, body = encode(load_sample("trainjob-resource-update-failed"))
    with socket.create_connection(("127.0.0.1", served.port), timeout=30) as quiet:
        for _ in range(3):
            assert post(served.url, headers, body, timeout=20).status == 200
        quiet.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")  # its request, at last: answered too
        assert quiet.recv(100).startswith(b"HTTP/1.1 200 ")


def test_a_client_that_sends_nothing_is_dropped_after_the_stall_bound_and_gunicorn_says_so(
        serve: Callable[..., ServedFunction]) -> None:
    served = serve("phase", CREFN_LOG_LEVEL="ERROR", CREFN_CLIENT_STALL_SECONDS="0.5")
    assert served.log_path is not None
    with socket.create_connection(("127.0.0.1", served.port), timeout=30) as idle:
        idle.sendall(b"POST / HTT")  # a request line never finished
        started = time.monotonic()
        assert idle.recv(100) == b""  # dropped, unanswered
        assert time.monotonic() - started < 10
    deadline = time.monotonic() + 10
    while "Socket error processing request" not in served.log_path.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    said = served.log_path.read_text()
    assert "[ERROR] Socket error processing request." in said  # gunicorn's own line, in its own format
    assert "Logging error" not in said
