"""The answer of a reply: the event a function replies with, in binary mode, as a Flask response that costs what
an answer of its kind must (`functions.runtime.server` makes it)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from flask import Response
from werkzeug.datastructures import Headers

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIEnvironment

WERKZEUGS = frozenset({"content-length", "location", "content-location"})
"""Headers werkzeug sets or fixes as it sends an answer: an answer that names one is sent by werkzeug whole."""


class Replied(Response):
    """The answer of a reply (200, the event in binary mode), sent as werkzeug sends `Response(body, status=200,
    headers=headers)` — the event's headers in their order, then `Content-Length` — with its WSGI header list made
    once: werkzeug would build and check a `Headers` of them when the answer is made, copy and check it again when
    it is sent, and look the copy over for a Location to fix. An event's headers name its content type and carry
    no length nor location (`codec.encode`); other headers are left to werkzeug whole. `headers` is werkzeug's
    view of the same list, made only if something asks for it."""

    def __init__(self, headers: Mapping[str, str], body: bytes) -> None:
        self._listed: list[tuple[str, str]] | None = None
        self._body: list[bytes] = []
        self._headers: Headers | None = None
        names = {name.lower() for name in headers}
        if "content-type" not in names or not names.isdisjoint(WERKZEUGS):
            super().__init__(body, status=200, headers=headers)
            return
        listed = [*headers.items(), ("Content-Length", str(len(body)))]
        if any("\n" in value or "\r" in value for _, value in listed):  # as werkzeug refuses them
            raise ValueError("Header values must not contain newline characters.")
        self._listed = listed
        self._body = [body]
        self._status, self._status_code = "200 OK", 200
        self.response = self._body
        self.direct_passthrough = False
        self._on_close = []

    @property
    def headers(self) -> Headers:
        if self._headers is None:
            self._headers = Headers(self._listed)
        return self._headers

    @headers.setter
    def headers(self, value: Headers) -> None:
        self._headers = value

    def get_wsgi_response(self, environ: WSGIEnvironment) -> tuple[Iterable[bytes], str, list[tuple[str, str]]]:
        if (self._listed is None or self._headers is not None or self.response is not self._body
                or environ["REQUEST_METHOD"] == "HEAD"):  # werkzeug's: its headers or body asked for (maybe changed)
            return super().get_wsgi_response(environ)
        return self._body, self._status, list(self._listed)
