"""A functions-framework source for the answers table: the target `raising` answers through the real
server with a handler that raises the error class named by the event's `raise` extension (or
replies, or answers 202, when told so)."""

from __future__ import annotations

from typing import Any

import functions_framework

from events.emitted import JobRef, WorkloadCreatedData, WorkloadRef
from events.envelope import Envelope, to_outbound
from functions.runtime import errors, server
from functions.runtime.plan import Outcome

KINDS: dict[str, type[Exception]] = {
    "PermanentError": errors.PermanentError, "NotFound": errors.NotFound, "Conflict": errors.Conflict,
    "AlreadyExists": errors.AlreadyExists, "Throttled": errors.Throttled, "Unavailable": errors.Unavailable,
    "NotYet": errors.NotYet, "TemporaryError": errors.TemporaryError, "Forbidden": errors.Forbidden,
    "KeyError": KeyError,
}


def handler(env: Envelope) -> Outcome:
    kind = env.extensions.get("raise", "")
    if kind == "reply":
        data = WorkloadCreatedData(job=JobRef(name="j", namespace="n"), attempt=0, adopted=False,
                                   workload=WorkloadRef(api_version="a/v1", kind="K", name="w", namespace="n"))
        return Outcome(to_outbound("dev.crefn.workload.created", "raising", "n", "j", data, env), "")
    if kind == "none":
        return Outcome(None, "nothing to do")
    raise KINDS[kind](f"{kind} happened\non two lines")


@functions_framework.http
def raising(request: Any) -> Any:
    return server.respond(request, handler, "raising")
