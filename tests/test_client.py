"""The outbound HTTP client: what a peer's answers mean, a peer gone mid-answer, and the bearer token."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from functions.client import Answer, error_for


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

    from functions.client import post
    from functions.errors import Unavailable

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
    from functions.client import bearer
    from functions.errors import TemporaryError
    from functions.server import answer_for

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
