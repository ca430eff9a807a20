"""`validate` (being written)."""

from __future__ import annotations

from events.envelope import Envelope
from events.types import EventType
from functions.context import Context
from functions.errors import PermanentError
from functions.plan import Outcome

FUNCTION = "validate"
ACCEPTS = frozenset({EventType.JOB_CHECK.value, EventType.JOB_CONDITION_CHANGED.value})


def handle(env: Envelope, ctx: Context) -> Outcome:
    raise PermanentError("validate is not built yet")
