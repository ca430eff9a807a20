"""Plans performed, and the one helper for optimistic concurrency.

`apply(plan)` performs a plan's effects in order through the gateway (and the alert sinks), then
gives the answer. In observe mode (`CREFN_MODE=observe`) no effect that writes to the cluster is
performed; everything else (the reply, alerts) happens as in manage mode. A `Delete` whose object is
gone or whose uid precondition fails (another object holds the name now) is done: nothing of ours is
left to delete. `run(read, decide)` is every handler's loop: read fresh, decide, apply; when the
world changed under the handler (`Conflict`: a stale resourceVersion, a name taken by a create), it
reads again and decides once more, then lets the conflict through (409, Knative retries).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from functions.alertsinks import configured_sinks, notify
from functions.context import Context
from functions.errors import Conflict, NotFound, NotYet
from functions.plan import WRITES, Annotate, Create, Delete, Notify, Outcome, Plan, Wait, WriteStatus
from functions.settings import Settings

Observed = TypeVar("Observed")


def apply(plan: Plan, ctx: Context) -> Outcome:
    observe = ctx.settings.observe
    created: Mapping[str, Any] | None = None
    reasons = [plan.reason] if plan.reason else []
    for effect in plan.effects:
        if observe and isinstance(effect, WRITES):
            continue
        if isinstance(effect, WriteStatus):
            ctx.gateway.patch(effect.res, effect.namespace, effect.name, {"status": dict(effect.status)},
                              resource_version=effect.resource_version or None, status=True)
        elif isinstance(effect, Annotate):
            ctx.gateway.patch(effect.res, effect.namespace, effect.name,
                              {"metadata": {"annotations": dict(effect.annotations)}})
        elif isinstance(effect, Create):
            created = ctx.gateway.create(effect.res, effect.namespace, effect.body)
        elif isinstance(effect, Delete):
            with contextlib.suppress(NotFound, Conflict):
                ctx.gateway.delete(effect.res, effect.namespace, effect.name, uid=effect.uid or None)
        elif isinstance(effect, Notify):
            reasons = [notify(configured_sinks(ctx.settings), effect.alerts)]
        elif isinstance(effect, Wait):
            raise NotYet("; ".join([*reasons, effect.reason]))
    reply = plan.reply
    if plan.reply_to_created is not None and created is not None:
        reply = plan.reply_to_created(created)
    return Outcome(reply, "; ".join(reasons))


def run(ctx: Context, read: Callable[[], Observed], decide: Callable[[Observed, Settings, Any], Plan]) -> Outcome:
    """Read → decide → apply; on a conflict read again and decide once more."""
    for attempt in (1, 2):
        plan = decide(read(), ctx.settings, ctx.clock())
        try:
            return apply(plan, ctx)
        except Conflict:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")
