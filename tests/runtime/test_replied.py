"""A reply's answer is sent byte for byte as werkzeug sends `Response(body, status=200, headers=headers)`: the
same status, header list and body for a POST and a HEAD, whether the headers are an event's (the answer's own way)
or name what werkzeug sets (werkzeug's way); a line break in a header refused alike."""

from __future__ import annotations

import random
from typing import Any

import pytest
from flask import Response

from functions.runtime.replied import Replied


def wsgi_answer(response: Any, method: str) -> tuple[str, list[tuple[str, str]], bytes]:
    """What a WSGI server is handed for `response` to a request of `method`: status, header list, body."""
    started: list[tuple[str, list[tuple[str, str]]]] = []
    body = b"".join(response({"REQUEST_METHOD": method, "wsgi.url_scheme": "http", "SERVER_NAME": "localhost",
                              "SERVER_PORT": "80"}, lambda status, headers, exc_info=None: started.append(
                                  (status, headers))))
    ((status, headers),) = started
    return status, headers, body


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("method", ["POST", "HEAD"])
def test_a_reply_is_sent_byte_for_byte_as_werkzeug_sends_it(seed: int, method: str) -> None:
    rng = random.Random(seed)
    names = ["ce-id", "ce-source", "ce-type", "ce-specversion", "ce-time", "ce-subject", "ce-cause", "traceparent",
             "ce-partitionkey"]
    if seed % 2:  # what an event never carries (no content type, or a length or a location): werkzeug's own way
        names += ["Content-Type", "Content-Length", "Location", "content-location"]
    chosen = rng.sample(names, rng.randrange(1, len(names)))
    if not seed % 2:  # an event as `encode` makes it, its content type anywhere among its headers
        chosen.insert(rng.randrange(len(chosen) + 1), "content-type")
    headers = {name: "".join(rng.choice("abc/-. é0") for _ in range(rng.randrange(0, 30))) for name in chosen}
    body = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 600)))
    replied = Replied(headers, body)
    assert wsgi_answer(replied, method) == wsgi_answer(Response(body, status=200, headers=headers), method)
    assert (replied.status_code, replied.get_data(), list(replied.headers)) == (
        200, body, list(Response(body, status=200, headers=headers).headers))


def test_a_reply_with_a_line_break_in_a_header_is_refused_as_werkzeug_refuses_it() -> None:
    for value in ("a\nb", "a\rb"):
        with pytest.raises(ValueError, match="must not contain newline") as ours:
            Replied({"ce-subject": value}, b"{}")
        with pytest.raises(ValueError) as theirs:
            Response(b"{}", status=200, headers={"ce-subject": value})
        assert str(ours.value) == str(theirs.value)


def test_a_reply_changed_after_it_is_made_is_sent_as_changed() -> None:
    headers = {"ce-id": "1", "ce-type": "t", "content-type": "application/json"}
    for change in ("status", "data", "body", "header"):
        replied, plain = Replied(headers, b"{}"), Response(b"{}", status=200, headers=headers)
        for response in (replied, plain):
            if change == "status":
                response.status_code = 202
            elif change == "data":
                response.set_data(b'{"changed": true}')
            elif change == "body":
                response.response = [b"[]"]
            else:
                response.headers["ce-type"] = "u"
        assert wsgi_answer(replied, "POST") == wsgi_answer(plain, "POST"), change
