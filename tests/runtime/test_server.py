"""The server in process, through functions-framework's own test client: every error kind's answer
(SPEC §4.3) and body in binary and structured mode, and bad requests."""

from __future__ import annotations

import json
from typing import Any

import functions_framework
import pytest

from functions.runtime.codec import encode
from functions.runtime.server import ANSWERS
from tests.support.paths import SUPPORT

SOURCE = SUPPORT / "raising.py"
ANSWER_TABLE = [
    ("PermanentError", 400), ("NotFound", 202), ("Conflict", 409), ("AlreadyExists", 409), ("Throttled", 429),
    ("Unavailable", 503), ("NotYet", 503), ("TemporaryError", 503), ("KeyError", 500),
]


@pytest.fixture(scope="module")
def client() -> Any:
    return functions_framework.create_app("raising", str(SOURCE), "http").test_client()


def event(kind: str) -> dict[str, Any]:
    return {"attributes": {"specversion": "1.0", "id": "e1", "source": "/test", "type": "test.event", "raise": kind,
                           "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
            "data": {"a": 1}}


def post(client: Any, record: dict[str, Any], structured: bool) -> Any:
    headers, body = encode(record, structured)
    return client.post("/", headers=headers, data=body)


@pytest.mark.parametrize("structured", [False, True], ids=["binary", "structured"])
@pytest.mark.parametrize(("kind", "status"), ANSWER_TABLE, ids=[k for k, _ in ANSWER_TABLE])
def test_every_error_kind_has_its_answer(client: Any, kind: str, status: int, structured: bool) -> None:
    resp = post(client, event(kind), structured)
    assert resp.status_code == status
    text = resp.get_data(as_text=True)
    if status == 202:
        assert text == ""
    elif status == 500:
        assert text == f"internal error: KeyError: '{kind} happened\\non two lines'\n"
    else:
        assert text == f"{kind} happened on two lines\n"  # one line, whatever the message held


@pytest.mark.parametrize("structured", [False, True], ids=["binary", "structured"])
def test_a_reply_is_binary_mode_with_the_trace_carried(client: Any, structured: bool) -> None:
    resp = post(client, event("reply"), structured)
    assert resp.status_code == 200 and resp.headers["content-type"] == "application/json"
    assert resp.headers["ce-type"] == "dev.crefn.workload.created" and resp.headers["ce-id"] != "e1"
    assert resp.headers["ce-traceparent"] == resp.headers["traceparent"]
    version, trace_id, span_id, flags = resp.headers["traceparent"].split("-")
    assert (version, trace_id, flags) == ("00", "0af7651916cd43dd8448eb211c80319c", "01")  # the caller's trace
    assert span_id != "b7ad6b7169203331" and len(span_id) == 16  # this request's span, a child of the caller's
    assert json.loads(resp.get_data())["workload"]["name"] == "w"


def test_nothing_to_publish_is_an_empty_202(client: Any) -> None:
    resp = post(client, event("none"), False)
    assert (resp.status_code, resp.get_data()) == (202, b"")


@pytest.mark.parametrize(("headers", "body", "reason"), [
    ({"content-type": "application/json"}, b"{}", "not a CloudEvent"),
    ({"content-type": "application/cloudevents-batch+json"}, b"[]", "batch mode is not supported"),
    ({"content-type": "application/cloudevents+json"}, b"{nope", "not a CloudEvent"),
], ids=["no-ce-headers", "batch", "structured-not-json"])
def test_bad_requests_are_400_in_one_line(client: Any, headers: dict[str, str], body: bytes, reason: str) -> None:
    resp = client.post("/", headers=headers, data=body)
    assert resp.status_code == 400 and reason in resp.get_data(as_text=True)
    assert resp.get_data(as_text=True).count("\n") == 1


def test_get_is_400(client: Any) -> None:
    assert client.get("/").status_code == 400


def test_every_error_class_is_in_the_table() -> None:
    from functions.runtime import errors

    classes = {c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.CrefnError)}
    assert classes - {errors.CrefnError} <= set(ANSWERS)

