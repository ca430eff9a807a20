"""What went wrong, as types: the retry API of SPEC §4.3 without its numbers.

The gateway raises these from Kubernetes answers and the HTTP client from HTTP peers; handlers raise
`PermanentError` for input that can never succeed and `NotYet` for a wait. Which HTTP answer each class
becomes is one table in `functions.runtime.server` (`ANSWERS`), looked up by class: a `PermanentError` is never
retried; a `TemporaryError` (`Conflict`, `Throttled`, `Unavailable`, `NotYet`) is retried by Knative with
backoff, with `Retry-After` when its `retry_after` says when to come back; a `NotFound` that escapes a
handler is a 202.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any


def one_line(text: str, limit: int = 300) -> str:
    """`text` on one line (each run of whitespace one space), at most `limit` characters (`…` when cut): for
    answers and logs, never for what is recorded on an object (an Event's note has its own cap)."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


class CrefnError(Exception):
    """Base of every error the functions answer for. `detail` is the peer's own words in full (the API
    server's message, as an Event note quotes it), when the error comes from an answer; `str()` quotes
    them on one bounded line."""

    detail: str = ""


class PermanentError(CrefnError):
    """The event can never succeed: bad input, a wrong kind, a request the peer refuses for good."""


class TooLarge(PermanentError):
    """A request too large to read (the body over the codec's limit), or to keep (a dead letter
    over the recorder's file cap): never retried."""


class NotFound(CrefnError):
    """The object does not exist (callers decide what "gone" means)."""


class TemporaryError(CrefnError):
    """The event may succeed later: `retry_after` seconds from now (whole seconds), when that is known, such
    as the end of a restart grace or a peer's own `Retry-After` (else None)."""

    def __init__(self, message: str = "", retry_after: int | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Stalled(TemporaryError):
    """The request's body stopped arriving: nothing for `CREFN_CLIENT_STALL_SECONDS` (answered 408, which Knative
    retries; the connection is dropped)."""


class Conflict(TemporaryError):
    """The object changed since it was read (a stale resourceVersion), or a precondition failed."""


class AlreadyExists(Conflict):
    """A create found the name taken."""


class Unrecorded(Conflict):
    """A conflict met by a plan's write after the plan's create succeeded: the object created (`created`, as the
    API server returned it) is not recorded where the plan meant to record it (a launch's `workloadRef`). The
    handler that reads again decides what becomes of it."""

    def __init__(self, message: str = "", created: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.created = created


class Throttled(TemporaryError):
    """The peer asked us to slow down (with its `Retry-After` seconds as `retry_after`, when it gave them)."""


class Unavailable(TemporaryError):
    """The peer is down, unreachable or failing."""


class Forbidden(Unavailable):
    """The API server's authorizer refused this identity (an RBAC denial). Temporary: an API server
    just started answers so until its authorizer's caches are filled, and a Role just granted takes a
    moment to apply; one that stays refused ends in the dead letters after the Broker's retries (and
    shows as 5xx answers). A refusal by an admission webhook or a quota is not this: it is permanent."""


class NotYet(TemporaryError):
    """Too early: nothing is wrong, and the same event will succeed once time has passed (a restart grace, an
    object still terminating)."""


RBAC_DENIAL = re.compile(r'is forbidden: User "[^"]*" cannot [a-z]+ resource')
"""The authorizer's refusal (`... is forbidden: User "..." cannot get resource "jobs" ...`), as opposed to
an admission webhook's or a quota's."""


def error_of(status: int, http_reason: str, body: Any, method: str, path: str) -> CrefnError:
    """One boundary from an API error answer to our error kinds: a trimmed one-line message, the API's
    own in full as the error's `detail`."""
    reason, message = "", ""
    try:
        payload = json.loads(body or "{}")
        reason, message = str(payload.get("reason", "")), str(payload.get("message", ""))
    except (ValueError, TypeError, AttributeError):
        message = body.decode(errors="replace") if isinstance(body, bytes) else str(body or "")
    text = f"{method} {path}: {status} {reason or http_reason}: {one_line(message)}".rstrip(": ")
    error: CrefnError
    if status == 404:
        error = NotFound(text)
    elif status == 409:
        error = AlreadyExists(text) if reason == "AlreadyExists" else Conflict(text)
    elif status == 410:
        error = TemporaryError(text)
    elif status == 429:
        error = Throttled(text)
    elif status >= 500 or status == 0:
        error = Unavailable(text)
    elif status == 403 and RBAC_DENIAL.search(one_line(message)):
        error = Forbidden(text)
    else:
        error = PermanentError(text)
    error.detail = message
    return error
