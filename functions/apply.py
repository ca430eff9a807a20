"""Plans performed, and the one helper for optimistic concurrency.

`apply(plan)` performs a plan's effects in order through the gateway (and the alert sinks), then
gives the answer. Locked writes of one object chain: each carries the resourceVersion the previous
one left. A create the API refuses for good (admission, quota, validation) is followed by the effects
the plan gave for that case, when it gave any, instead of the rest of the plan (decided for a create
that did not happen); an Event whose name is taken is recorded already. In observe mode
(`CREFN_MODE=observe`) no effect that writes to the cluster is performed; everything else (the
reply, alerts) happens as in manage mode. A `Delete` whose object is gone or whose uid precondition
fails (another object holds the name now) is done: nothing of ours is left to delete.
`run(read, decide)` is every handler's loop: read fresh, decide, apply; when the world changed under
the handler (`Conflict`: a stale resourceVersion, a name taken by a create), it reads again and
decides once more, then lets the conflict through (409, Knative retries).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from events.envelope import Outbound
from functions.alertsinks import configured_sinks, notify
from functions.context import Context
from functions.errors import AlreadyExists, Conflict, CrefnError, NotFound, NotYet, PermanentError
from functions.plan import (
    WRITES,
    Annotate,
    Create,
    Delete,
    Effect,
    Notify,
    Outcome,
    Plan,
    RecordEvent,
    Wait,
    WriteStatus,
)
from functions.resources import EVENTS
from functions.settings import Settings

Observed = TypeVar("Observed")


def apply(plan: Plan, ctx: Context) -> Outcome:
    done = Applied([])
    for effect in plan.effects:
        apply_effect(effect, ctx, done)
        if done.refused:  # the rest of the plan was decided for a create that did not happen
            return Outcome(None, "; ".join(done.reasons))
    reasons = [plan.reason, *done.reasons] if plan.reason else done.reasons
    return Outcome(reply_for(plan, done.created), "; ".join(reasons))


def reply_for(plan: Plan, created: Mapping[str, Any] | None) -> Outbound | None:
    """The plan's reply; one that refers to the created object gets its name, uid and resourceVersion."""
    if not plan.created_ref or plan.reply is None:
        return plan.reply
    if created is None:
        return None
    meta = created.get("metadata") or {}
    ref = getattr(plan.reply.data, plan.created_ref).model_copy(update={
        "name": meta.get("name", ""), "uid": meta.get("uid", ""), "resource_version": meta.get("resourceVersion", "")})
    return replace(plan.reply, data=plan.reply.data.model_copy(update={plan.created_ref: ref}))


@dataclass
class Applied:
    """What applying a plan has produced so far: what the effects had to say, the object created."""

    reasons: list[str]
    created: Mapping[str, Any] | None = None
    versions: dict[tuple[str, str, str], str] = field(default_factory=dict)
    """The resourceVersion each locked write left an object at (the next locked write carries it)."""
    refused: bool = False
    """A create was refused: its `refused` effects replaced the rest of the plan."""


def apply_effect(effect: Effect, ctx: Context, done: Applied) -> None:
    if ctx.settings.observe and isinstance(effect, WRITES):
        return
    if isinstance(effect, WriteStatus) and effect.best_effort:
        try:
            ctx.gateway.patch(effect.res, effect.namespace, effect.name, {"status": dict(effect.status)}, status=True)
        except CrefnError as e:
            done.reasons.append(f"{effect.res.kind} {effect.namespace}/{effect.name} not written: {e}")
    elif isinstance(effect, WriteStatus | Annotate):
        key = (effect.res.plural, effect.namespace, effect.name)
        version = done.versions.get(key, effect.resource_version) if effect.resource_version else None
        patch = ({"status": dict(effect.status)} if isinstance(effect, WriteStatus)
                 else {"metadata": {"annotations": dict(effect.annotations)}})
        written = ctx.gateway.patch(effect.res, effect.namespace, effect.name, patch, resource_version=version,
                                    status=isinstance(effect, WriteStatus))
        if version:
            done.versions[key] = str((written.get("metadata") or {}).get("resourceVersion", ""))
    elif isinstance(effect, Create):
        try:
            done.created = ctx.gateway.create(effect.res, effect.namespace, effect.body)
        except PermanentError as e:
            if effect.refused is None:
                raise
            done.reasons.append(f"{effect.body.get('kind')} {effect.body.get('metadata', {}).get('name')} "
                                f"refused: {e.detail or e}")
            for follow in effect.refused.follow(e.detail or str(e)):
                apply_effect(follow, ctx, done)
            done.refused = True
    elif isinstance(effect, Delete):
        with contextlib.suppress(NotFound, Conflict):
            ctx.gateway.delete(effect.res, effect.namespace, effect.name, uid=effect.uid or None)
    elif isinstance(effect, RecordEvent):
        with contextlib.suppress(AlreadyExists):
            ctx.gateway.create(EVENTS, effect.namespace, effect.body)
    elif isinstance(effect, Notify):
        done.reasons = [notify(configured_sinks(ctx.settings), effect.alerts)]
    elif isinstance(effect, Wait):
        raise NotYet("; ".join([*done.reasons, effect.reason]), effect.retry_after)


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
