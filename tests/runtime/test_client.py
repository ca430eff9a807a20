"""The outbound HTTP client: what a peer's answers mean, a peer gone mid-answer, and the bearer token."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from functions.runtime.client import Answer, error_for


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

    from functions.runtime.client import post
    from functions.runtime.errors import Unavailable

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
    (b"", "holds no credential (one line of visible ASCII, got 0 bytes)"),
    (b"two words", "holds no credential (one line of visible ASCII, got 9 bytes)"),
    (b"line\nbreak", "holds no credential (one line of visible ASCII, got 10 bytes)"),
    (b"\xff\xfe", "holds no credential (one line of visible ASCII, got 2 bytes)"),
    ("directory", "cannot be read (Is a directory)"),
    ("missing", "cannot be read (No such file or directory)"),
], ids=["no-file", "token", "empty", "space", "two-lines", "not-ascii", "directory", "missing"])
def test_a_token_file_is_a_bearer_header_or_a_temporary_error(content: bytes | str | None, expected: Any,
                                                              tmp_path: Path) -> None:
    """`bearer()`: the header of the token read now, none without a file; a file that cannot be read or
    holds no credential is a TemporaryError (503) naming the file and never what it holds."""
    from functions.runtime.client import bearer
    from functions.runtime.errors import TemporaryError
    from functions.runtime.server import answer_for

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


# -- a peer's answers never carry its secrets -------------------------------------------------------


@pytest.mark.parametrize(("path", "status", "body", "expect", "expected"), [
    ("services/T0/B0/sl4ckSECRETpath", 404, b"no such hook sl4ckSECRETpath", (200,),
     "slack: answered 404: no such hook [redacted]"),
    ("events?token=ce-t0ken-SECRET", 401, b"unknown token ce-t0ken-SECRET", (), "slack: answered 401: unknown token "
     "[redacted]"),
    ("events?token=ce%2Ft0ken-SECRET", 401, b"unknown token ce/t0ken-SECRET", (), "slack: answered 401: unknown "
     "token [redacted]"),
    ("v2/enqueue", 201, b'{"routing_key":"pdR0UT1NGkeySECRET"}', (200, 202),
     'slack: answered 201: {"routing_key":"[redacted]"}'),
], ids=["path-segment", "query-value", "query-value-decoded", "2xx-not-expected"])
def test_a_peer_quoting_part_of_its_url_or_a_secret_has_it_cut_out(path: str, status: int, body: bytes,
                                                                   expect: tuple[int, ...], expected: str) -> None:
    from functions.runtime.client import Peer, post_json
    from functions.runtime.errors import PermanentError
    from tests.support.helpers import Receiver

    peer = Receiver(status, body)
    try:
        with pytest.raises(PermanentError) as refused:
            post_json(Peer("slack", peer.url + path, secrets=("pdR0UT1NGkeySECRET",)), {}, timeout=5, expect=expect)
    finally:
        peer.close()
    assert str(refused.value) == expected


def test_a_peer_breaking_off_an_error_answer_is_unavailable() -> None:
    """A 503 whose body ends early (the peer's process gone, a proxy's timeout) is no answer: Unavailable, and
    the error says so without the peer's URL."""
    import socket
    import threading

    from functions.runtime.client import Peer, post_json
    from functions.runtime.errors import Unavailable

    listener = socket.create_server(("127.0.0.1", 0))

    def answer_short() -> None:
        conn, _ = listener.accept()
        with conn:
            request = b""
            while not request.endswith(b"\r\n\r\n[]"):
                request += conn.recv(65536)
            conn.sendall(b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 100\r\n\r\nshort")

    threading.Thread(target=answer_short, daemon=True).start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/am-pa55SECRET"
    try:
        with pytest.raises(Unavailable) as broken:
            post_json(Peer("alertmanager", url), [], timeout=5)
    finally:
        listener.close()
    assert str(broken.value) == "alertmanager: answered 503 incompletely: IncompleteRead"


def test_an_event_sent_to_k_sink_has_its_url_and_oidc_token_cut_out_of_errors(tmp_path: Path) -> None:
    """`deliver()` to a URL: the sink's answer quoting the bearer token, and the URL's password or query token
    when the sink cannot be reached, show in no error."""
    from functions.runtime.client import deliver
    from functions.runtime.errors import PermanentError, Unavailable
    from tests.support.helpers import Receiver, closed_port

    token = tmp_path / "token"
    token.write_text("eyJhbGciOiJSUzI1NiJ9.OIDCSECRETpayload.sig\n")
    event = {"attributes": {"specversion": "1.0", "id": "1", "source": "/s", "type": "t"}, "data": {}}
    sink = Receiver(401, b"could not verify request: Bearer eyJhbGciOiJSUzI1NiJ9.OIDCSECRETpayload.sig")
    try:
        with pytest.raises(PermanentError) as refused:
            deliver(sink.url, event, "K_SINK", token_file=str(token))
    finally:
        sink.close()
    assert str(refused.value) == "K_SINK: answered 401: could not verify request: Bearer [redacted]"
    broker = Receiver(403, b"event type t from /s not allowed by EventPolicy crefn: broker crefn-system/crefn")
    try:  # the Broker's address is no secret: its words stay whole
        with pytest.raises(PermanentError) as denied:
            deliver(f"{broker.url}/crefn-system/crefn", event, "K_SINK", token_file=str(token))
    finally:
        broker.close()
    assert str(denied.value) == \
        "K_SINK: answered 403: event type t from /s not allowed by EventPolicy crefn: broker crefn-system/crefn"
    down = closed_port()
    for url in (f"http://user:PASSWORDsecret@127.0.0.1:{down}/ns/b", f"http://127.0.0.1:{down}/ns/b?access_token=T0KENsecret"):
        with pytest.raises(Unavailable) as unreachable:
            deliver(url, event, "K_SINK")
        assert str(unreachable.value) == "K_SINK: unreachable ([Errno 111] Connection refused)"
