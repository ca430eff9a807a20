"""Outbound HTTP: the only module of the product that sends a request (urllib, http.client; SPEC §4.3).

`post()` for raw answers (replay counts them), `deliver()` for a CloudEvent that must be accepted
(`K_SINK`, a CloudEvents alert sink) and `post_json()` for the alert sinks' JSON APIs; answers that are not
accepted become the errors of `functions.runtime.errors` by `error_for()`, the HTTP twin of the gateway's table.
A CloudEvent sent with a token file carries `Authorization: Bearer` (Knative's OIDC sender identity), the
file read at each send (`bearer()`). A `Peer` is a sink whose URL and credentials are secrets (an alert
sink, `K_SINK` with its OIDC token): its requests carry them, its answers and errors name it (`slack`) and
never hold them, and its redirects are not followed.
"""

from __future__ import annotations

import base64
import functools
import http.client
import json
import os
import ssl
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import SplitResult, unquote, unquote_plus, urlsplit, urlunsplit

from events.envelope import Outbound
from functions.runtime.codec import Record, decode, encode
from functions.runtime.credentials import CredentialFileError, read_credential
from functions.runtime.errors import CrefnError, PermanentError, TemporaryError, Throttled, Unavailable, one_line

RETRIED = frozenset({404, 408, 409, 429, 500, 502, 503, 504})
"""Answers Knative's delivery retries."""
TEMPORARY = frozenset({409, 429, 503})
"""The transient answers of SPEC §4.3 (a 500 is retried too, but it is a bug)."""


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def ce(self) -> dict[str, str]:
        """The answer's CloudEvent attributes (binary mode)."""
        return {k[3:]: v for k, v in self.headers.items() if k.startswith("ce-")}

    @property
    def text(self) -> str:
        return self.body.decode(errors="replace").strip()

    @property
    def accepted(self) -> bool:
        return 200 <= self.status < 300

    @property
    def temporary(self) -> bool:
        """A transient answer of SPEC §4.3: the event is fine, try again later."""
        return self.status in TEMPORARY

    @property
    def retried(self) -> bool:
        """Whether Knative's delivery would retry this answer."""
        return self.status in RETRIED

    def json(self) -> Any:
        return json.loads(self.body)

    @classmethod
    def unreachable(cls, error: Exception) -> Answer:
        """What a peer that could not be reached amounts to: a 503, as Knative counts it."""
        return cls(503, {}, str(error).encode())

    def event(self) -> Record | None:
        """The CloudEvent of a 200 answer (a Knative reply), if it carries one."""
        return decode(self.headers, self.body) if self.status == 200 and self.ce else None


def post(url: str, headers: Mapping[str, str], body: bytes, timeout: float = 30,
         opener: urllib.request.OpenerDirector | None = None) -> Answer:
    """One POST (through `opener`, a Peer's, when given); the answer whatever its status. Unavailable when the
    peer cannot be reached, or its answer breaks off (a 5xx whose body never ends is no answer either)."""
    request = urllib.request.Request(url, data=body, headers=dict(headers), method="POST")
    try:
        with (opener.open if opener else urllib.request.urlopen)(request, timeout=timeout) as resp:
            return Answer(resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read())
    except urllib.error.HTTPError as e:
        with e:
            try:
                return Answer(e.code, {k.lower(): v for k, v in e.headers.items()}, e.read())
            except (http.client.HTTPException, OSError) as broken:  # its body broken off, or never finished
                raise Unavailable(f"{url} answered {e.code} incompletely: {type(broken).__name__}") from broken
    except (urllib.error.URLError, OSError) as e:
        raise Unavailable(f"{url} unreachable: {getattr(e, 'reason', e)}") from e
    except http.client.HTTPException as e:  # the peer went away mid-answer (a killed pod)
        raise Unavailable(f"{url} answered incompletely: {type(e).__name__}") from e


def send(url: str, event: Record | Outbound, structured: bool = False, timeout: float = 30,
         token_file: str | None = None) -> Answer:
    """POST one CloudEvent, with the token of `token_file` if given; the answer whatever its status."""
    headers, body = encode(event, structured)
    return post(url, {**headers, **bearer(token_file)}, body, timeout)


def bearer(token_file: str | None) -> dict[str, str]:
    """The `Authorization` header of the OIDC token in `token_file`, read now (a projected token is rotated
    by the kubelet), or none without a file. TemporaryError (503), naming the file and never its content,
    when it cannot be read or holds no credential."""
    token = oidc_token(token_file)
    return {"authorization": f"Bearer {token}"} if token else {}


def oidc_token(token_file: str | None) -> str:
    """The OIDC token in `token_file`, read now, or "" without a file; TemporaryError as `bearer()` says."""
    if not token_file:
        return ""
    try:
        return read_credential(token_file)
    except CredentialFileError as e:
        raise TemporaryError(f"OIDC token file {e}") from None


def error_for(what: str, answer: Answer) -> CrefnError:
    """The error a peer's answer that is not accepted means: 429 throttled, 5xx unavailable, else refused."""
    if answer.status == 429:
        after = answer.headers.get("retry-after", "")
        seconds = int(after) if after.isascii() and after.isdigit() else None  # an HTTP-date: not known here
        return Throttled(f"{what}: throttled (429{f', retry after {after}s' if after else ''})", seconds)
    if answer.status >= 500:
        return Unavailable(f"{what}: answered {answer.status}: {one_line(answer.text, 200)}")
    return PermanentError(f"{what}: answered {answer.status}: {one_line(answer.text, 200)}")


def deliver(url: str | Peer, event: Record | Outbound, what: str = "", timeout: float = 10,
            token_file: str | None = None) -> Answer:
    """POST one CloudEvent that must be accepted (2xx); otherwise the error its answer means. A URL (`K_SINK`)
    is sent as a `Peer` named `what`: the credentials its URL carries (userinfo, query) and the OIDC token of
    `token_file` are secrets, cut out of every error (its path, the Broker's address, is not), and a redirect
    is not followed."""
    peer = url if isinstance(url, Peer) else Peer(what or "sink", url, bearer_token=oidc_token(token_file),
                                                  public_path=True)
    headers, body = encode(event)
    answer = peer.post(headers, body, timeout)
    if not answer.accepted:
        raise error_for(peer.name, answer)
    return answer


def post_json(peer: Peer, payload: Any, timeout: float = 10, expect: Sequence[int] = ()) -> Answer:
    """POST a JSON document to an HTTP API; the error its answer means unless it is accepted."""
    answer = peer.post({"content-type": "application/json"}, json.dumps(payload).encode(), timeout)
    if not answer.accepted or (expect and answer.status not in expect):
        raise error_for(peer.name, answer)
    return answer


# -- a peer whose URL and credentials are secrets -----------------------------------------------

SHORTEST_SECRET = 4
"""Secrets shorter than this are not cut out of error texts: cutting them would cut words."""


@dataclass(frozen=True)
class Peer:
    """An HTTP peer whose URL and credentials are secrets: a webhook's path, a token in the query, a user and
    password in the URL (sent as basic auth, the URL without them), a bearer token, a password; a credential
    in a file is read at each send (it may be rotated). Errors name the peer (`name`) and never hold a secret:
    every text they carry, the peer's answer included, has them cut out (`scrub`), and no cause is chained.
    Redirects are not followed (a 3xx answer is refused): the credentials go to the configured host only.
    `ca_file`: PEM certificates verifying the peer's TLS certificate, instead of the system's."""

    name: str
    url: str = field(repr=False)
    bearer_token: str = field(default="", repr=False)
    bearer_token_file: str = ""
    username: str = ""
    password: str = field(default="", repr=False)
    password_file: str = ""
    ca_file: str = ""
    secrets: tuple[str, ...] = field(default=(), repr=False)
    """More text to cut out of errors (what the body carries: a routing key)."""
    api_path: str = ""
    """The path of the peer's API appended to its URL's (`at`): public, so not cut out of its answers."""
    public_path: bool = False
    """The URL's path is an address, not a secret (`K_SINK`, a Broker's): its segments stay in errors."""

    def at(self, path: str) -> Peer:
        """The same peer, `path` appended to its URL's path."""
        return replace(self, api_path=self.api_path + path)

    def post(self, headers: Mapping[str, str], body: bytes, timeout: float) -> Answer:
        """One POST with the peer's credentials; the answer whatever its status, scrubbed (a 2xx answer may
        echo a secret too). Unavailable when the peer cannot be reached or its answer breaks off, or a credential
        or CA file cannot be read; PermanentError when its URL or a credential cannot be sent (a character HTTP
        does not carry)."""
        parts = urlsplit(self.url)
        authorization, said = self._authorization(parts)
        secrets = self._secret_texts(parts, said)
        url = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2],
                                        path=parts.path.rstrip("/") + self.api_path if self.api_path else parts.path))
        try:
            answer = post(url, {**headers, **authorization}, body, timeout, self._opener(parts.scheme == "https"))
        except Unavailable as e:
            what = str(e).removeprefix(f"{url} ")
            if not what.startswith("answered "):
                what = f"unreachable ({getattr(e.__cause__, 'reason', e.__cause__)})"
            raise Unavailable(f"{self.name}: {scrub(what, secrets)}") from None  # the name is not a secret
        except ValueError as e:  # urllib and http.client quote the URL or the header they refuse
            raise PermanentError(f"{self.name}: its URL or credentials cannot be sent ({type(e).__name__})") \
                from None
        return replace(answer, body=scrub_bytes(answer.body, secrets))

    def _authorization(self, parts: SplitResult) -> tuple[dict[str, str], list[str]]:
        """The Authorization header, and the credentials it says (to scrub)."""
        if self.bearer_token or self.bearer_token_file:
            token = self.bearer_token or self._read(self.bearer_token_file, "bearer token")
            return {"authorization": f"Bearer {token}"}, [token]
        username = self.username or unquote(parts.username or "")
        if not username:
            return {}, []
        password = (self.password or (self._read(self.password_file, "password") if self.password_file else "")
                    if self.username else unquote(parts.password or ""))
        basic = base64.b64encode(f"{username}:{password}".encode()).decode()
        return {"authorization": f"Basic {basic}"}, [password, basic]

    def _read(self, path: str, what: str) -> str:
        """A credential from its file, read now; Unavailable naming the file, never its content."""
        try:
            return read_credential(path)
        except CredentialFileError as e:
            raise Unavailable(f"{self.name}: its {what} file {e}") from None

    def _secret_texts(self, parts: SplitResult, said: list[str]) -> list[str]:
        """What a peer's answer may quote: the URL, its userinfo, its path and query whole and each path segment
        and query value alone (raw and decoded: a webhook's last segment, `token=…`), the credentials."""
        path = parts.path if parts.path not in ("", "/") and not self.public_path else ""
        userinfo = parts.netloc.rpartition("@")[0]
        pieces = [*path.split("/"), *(pair.partition("=")[2] for pair in parts.query.split("&"))]
        found = [self.url, userinfo, unquote(parts.password or ""), path, parts.query, unquote(path),
                 *pieces, *(unquote_plus(p) for p in pieces), self.bearer_token, self.password, *said, *self.secrets]
        return sorted({s for s in found if len(s) >= SHORTEST_SECRET}, key=len, reverse=True)

    def _opener(self, tls: bool) -> urllib.request.OpenerDirector:
        try:
            return _opener(self.ca_file, os.stat(self.ca_file).st_mtime_ns if self.ca_file else 0, tls)
        except OSError as e:  # ssl.SSLError too: not PEM
            raise Unavailable(f"{self.name}: its CA file {self.ca_file} cannot be used "
                              f"({getattr(e, 'strerror', None) or type(e).__name__})") from None


def scrub(text: str, secrets: Sequence[str]) -> str:
    """`text` with every secret (longest first) cut out."""
    for secret in secrets:
        text = text.replace(secret, "[redacted]")
    return text


def scrub_bytes(body: bytes, secrets: Sequence[str]) -> bytes:
    """`body` with every secret (longest first, as UTF-8) cut out; the rest byte for byte."""
    for secret in secrets:
        body = body.replace(secret.encode(), b"[redacted]")
    return body


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any) -> None:
        return None  # the 3xx becomes the answer


@functools.lru_cache(maxsize=16)
def _opener(ca_file: str, stamp: int, tls: bool) -> urllib.request.OpenerDirector:
    """An opener following no redirect, verifying TLS with `ca_file` when given (made again when the file
    changes: `stamp` is its modification time), else for an https peer with the system's CAs, read once."""
    handlers: list[urllib.request.BaseHandler] = [_NoRedirect()]
    if ca_file:
        handlers.append(urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=ca_file)))
    elif tls:
        handlers.append(urllib.request.HTTPSHandler(context=_system_tls()))
    return urllib.request.build_opener(*handlers)


@functools.cache
def _system_tls() -> ssl.SSLContext:
    """TLS verified with the system's CAs, read once per process: urllib reads them again for every connection
    it makes without a context (20-50 ms each)."""
    return ssl.create_default_context()
