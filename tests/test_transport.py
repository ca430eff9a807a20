"""The transport in process, through functions-framework's own test client: every error kind's answer
(SPEC §4.3) and body in binary and structured mode, the codec both ways, and bad requests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import functions_framework
import pytest

from functions.transport import ANSWERS, Answer, decode, encode, error_for, to_envelope

SOURCE = Path(__file__).parent / "support" / "raising.py"
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
    from functions import errors

    classes = {c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.CrefnError)}
    assert classes - {errors.CrefnError} <= set(ANSWERS)


@pytest.mark.parametrize("structured", [False, True], ids=["binary", "structured"])
def test_codec_round_trip(structured: bool) -> None:
    record = event("none")
    headers, body = encode(record, structured)
    back = decode(headers, body)
    assert back["data"] == {"a": 1}
    assert {k: back["attributes"][k] for k in record["attributes"]} == record["attributes"]
    env = to_envelope(back)
    assert env.extensions["raise"] == "none" and env.traceparent.startswith("00-")


@pytest.mark.parametrize(("status", "headers", "kind"), [
    (429, {"retry-after": "3"}, "Throttled"), (502, {}, "Unavailable"), (403, {}, "PermanentError"),
], ids=["429", "5xx", "4xx"])
def test_peer_answers_become_error_kinds(status: int, headers: dict[str, str], kind: str) -> None:
    error = error_for("slack", Answer(status, headers, b"nope"))
    assert type(error).__name__ == kind and str(error).startswith("slack: ")
    if status == 429:
        assert str(error) == "slack: throttled (429, retry after 3s)"


def test_a_peer_that_dies_mid_answer_is_unavailable() -> None:
    import socket
    import threading

    from functions.errors import Unavailable
    from functions.transport import post

    listener = socket.create_server(("127.0.0.1", 0))

    def answer_half() -> None:
        conn, _ = listener.accept()
        with conn:
            request = b""
            while not request.endswith(b"\r\n\r\n{}"):  # the whole request read: no reset on close
                request += conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 402\r\n\r\n{")  # then the process is gone

    threading.Thread(target=answer_half, daemon=True).start()
    try:
        with pytest.raises(Unavailable, match="answered incompletely: IncompleteRead"):
            post(f"http://127.0.0.1:{listener.getsockname()[1]}/", {"content-type": "application/json"}, b"{}")
    finally:
        listener.close()


@pytest.mark.parametrize(("content", "expected"), [
    (None, {}),
    (b"header.payload.signature\n", {"authorization": "Bearer header.payload.signature"}),
    (b"", "holds no token (want one line of visible ASCII, got 0 bytes)"),
    (b"two words", "holds no token (want one line of visible ASCII, got 9 bytes)"),
    (b"line\nbreak", "holds no token (want one line of visible ASCII, got 10 bytes)"),
    (b"\xff\xfe", "holds no token (want one line of visible ASCII, got 2 bytes)"),
    ("directory", "cannot be read: Is a directory"),
    ("missing", "cannot be read: No such file or directory"),
], ids=["no-file", "token", "empty", "space", "two-lines", "not-ascii", "directory", "missing"])
def test_a_token_file_is_a_bearer_header_or_a_temporary_error(content: bytes | str | None, expected: Any,
                                                              tmp_path: Path) -> None:
    """`bearer()`: the header of the token read now, none without a file; a file that cannot be read or
    holds no token is a TemporaryError (503) naming the file and never what it holds."""
    from functions.errors import TemporaryError
    from functions.transport import answer_for, bearer

    path = tmp_path / "token"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content == "directory":
        path.mkdir()
    if isinstance(expected, dict):
        assert bearer(str(path) if content is not None else None) == expected
        return
    with pytest.raises(TemporaryError) as raised:
        bearer(str(path))
    assert str(raised.value) == f"OIDC token file {path} {expected}" and answer_for(raised.value) == 503
