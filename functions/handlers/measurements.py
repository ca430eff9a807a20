"""`measurements` (being written)."""

from __future__ import annotations

from events.envelope import Envelope
from events.types import EventType
from functions.context import Context
from functions.errors import PermanentError
from functions.plan import Outcome

FUNCTION = "measurements"
ACCEPTS = frozenset({EventType.WORKLOAD_CREATED.value})


def handle(env: Envelope, ctx: Context) -> Outcome:
    raise PermanentError("measurements is not built yet")
