"""`nodehealth` (being written)."""

from __future__ import annotations

from events.envelope import Envelope
from events.types import ApiServerType, EventType
from functions.context import Context
from functions.errors import PermanentError
from functions.plan import Outcome

FUNCTION = "nodehealth"
ACCEPTS = frozenset({EventType.JOB_CHECK.value, ApiServerType.RESOURCE_ADD.value, ApiServerType.RESOURCE_UPDATE.value})


def handle(env: Envelope, ctx: Context) -> Outcome:
    raise PermanentError("nodehealth is not built yet")
