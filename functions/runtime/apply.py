"""Plans performed, and the one helper for optimistic concurrency.

`apply(plan)` performs a plan's effects in order through the gateway, the alert sinks and the HTTP client,
then what follows it (`then`, decided on what the writes answered: `follow_up`; one that fails leaves the
answer as it is, said in its reason and marked `unfinished`), then gives the answer. Locked writes of one
object chain on the resourceVersion each leaves. A create the API refuses for good is followed by the effects
the plan gave for that case instead of the rest; an Event whose name is taken is recorded already; a `Delete`
whose object is gone or whose uid precondition fails is done. Observe mode (`CREFN_MODE=observe`) performs no
effect that writes to the cluster; the reply, alerts and sends happen as in manage mode. `run(read, decide)`
is every handler's loop: read fresh, decide, apply; on a `Conflict` (a stale resourceVersion, a name taken;
`Unrecorded`, with the object created, after the plan's create) it reads and decides once more, then lets it
through (409). `run_each` is `run` for each Job of an event about several, one Job's error kept with it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import ValidationError

from events.envelope import Outbound
from functions.runtime.context import Context
from functions.runtime.errors import (
    AlreadyExists,
    Conflict,
    CrefnError,
    NotFound,
    NotYet,
    PermanentError,
    Unrecorded,
    one_line,
)
from functions.runtime.metrics import count_restart_refused
from functions.runtime.plan import Followed, Outcome, Plan
from functions.runtime.resources import EVENTS
from functions.runtime.settings import Settings

if TYPE_CHECKING:
    from functions.runtime.effects import Effect

Observed = TypeVar("Observed")
Key = TypeVar("Key")
Decide = Callable[[Observed, Settings, Any], Plan]


def apply(plan: Plan, ctx: Context) -> Outcome:
    done = effects_of(plan, ctx)
    if plan.refused:
        count_restart_refused(plan.refused)
    if done.refused:  # the rest of the plan was decided for a create that did not happen
        return Outcome(None, "; ".join(done.reasons), tuple(done.sent))
    if plan.then is not None:
        follow_up(plan.then, ctx, done, done)
    return Outcome(reply_for(plan, done.created), "; ".join(reasons_of(plan, done, ctx.settings)), tuple(done.sent),
                   done.unfinished)


def reasons_of(plan: Plan, done: Applied, settings: Settings | None = None) -> list[str]:
    """The plan's reason, then what its effects had to say; in observe mode, a plan whose writes were left out
    says so first (its reason tells what it would have done: `... deleted` was not)."""
    reasons = [plan.reason, *done.reasons] if plan.reason else done.reasons
    if settings is not None and settings.observe and any(skipped(e) for e in plan.effects):
        return [f"observe mode, nothing written: {reasons[0]}" if reasons else "observe mode, nothing written",
                *reasons[1:]]
    return reasons


def skipped(effect: Effect) -> bool:
    """Whether observe mode leaves the effect out: a write, unless an Event reporting on CRE's verdicts."""
    from functions.runtime.effects import WRITES, KubeEvent

    return isinstance(effect, WRITES) and not (isinstance(effect, KubeEvent) and effect.observing)


def effects_of(plan: Plan, ctx: Context) -> Applied:
    """The plan's effects applied in order, up to a create refused (the rest was decided for it). A conflict
    after the plan's create succeeded is `Unrecorded`, carrying the object created."""
    done = Applied([])
    for effect in plan.effects:
        try:
            apply_effect(effect, ctx, done)
        except Conflict as e:
            if done.created is None or isinstance(e, Unrecorded):
                raise
            unrecorded = Unrecorded(str(e), done.created)
            unrecorded.detail = e.detail
            raise unrecorded from e
        if done.refused:
            break
    return done


def reply_for(plan: Plan, created: Mapping[str, Any] | None) -> Outbound | None:
    """The plan's reply; one that refers to the created object gets its name, uid and resourceVersion."""
    return filled(plan.reply, plan.created_ref, created)


def filled(event: Outbound | None, created_ref: str, created: Mapping[str, Any] | None) -> Outbound | None:
    """The event; one that refers to the created object (`created_ref`) gets its name, uid and
    resourceVersion (None without that object)."""
    if not created_ref or event is None:
        return event
    if created is None:
        return None
    meta = created.get("metadata") or {}
    ref = getattr(event.data, created_ref).model_copy(update={
        "name": meta.get("name", ""), "uid": meta.get("uid", ""), "resource_version": meta.get("resourceVersion", "")})
    return replace(event, data=event.data.model_copy(update={created_ref: ref}))


def follow_up(then: Followed, ctx: Context, source: Applied, done: Applied) -> None:
    """The plan decided on what `source`'s writes returned, applied, its answer sent to `K_SINK`, then what
    follows it; what they did and their failure go into `done`'s reasons, never an error (the plan stands:
    a decision that fails stops here, an effect that fails stops the rest, an answer not sent still lets
    what follows its writes follow). Not applied when it would send and `K_SINK` is not set: a write whose
    event cannot follow is left to the next decision that sees it."""
    try:
        plan = then.follow(source.created, source.written)
    except (CrefnError, ValidationError) as e:  # what the writes answered could not be read
        done.reasons.append(f"not followed up: {one_line(str(e))}")
        done.unfinished = True
        return
    from functions.runtime.effects import Send

    if not ctx.settings.k_sink and (plan.reply is not None or any(isinstance(e, Send) for e in plan.effects)):
        done.reasons.append("not followed up: K_SINK is not set")
        return
    try:
        followed = effects_of(plan, ctx)
    except CrefnError as e:  # the effects before it stand; the next decision that sees them goes on
        done.reasons.append(f"follow-up stopped: {e}")
        done.unfinished = True
        return
    reply = None if followed.refused else reply_for(plan, followed.created)
    if reply is not None:
        try:
            apply_effect(Send(reply), ctx, followed)
        except CrefnError as e:  # its writes are done: what follows them still follows
            followed.reasons.append(f"its event not sent: {e}")
            done.unfinished = True
    done.sent.extend(followed.sent)
    done.reasons.extend(reasons_of(plan, followed))
    if plan.then is not None and not followed.refused:
        follow_up(plan.then, ctx, followed, done)


@dataclass
class Applied:
    """What applying a plan has produced so far: what the effects had to say, the object created."""

    reasons: list[str]
    created: Mapping[str, Any] | None = None
    versions: dict[tuple[str, str, str], str] = field(default_factory=dict)
    """The resourceVersion each locked write left an object at (the next locked write carries it)."""
    written: dict[tuple[str, str, str], Mapping[str, Any]] = field(default_factory=dict)
    """The object each locked write left, as the API server returned it."""
    refused: bool = False
    """A create was refused: its `refused` effects replaced the rest of the plan."""
    sent: list[str] = field(default_factory=list)
    """The types of the events sent."""
    unfinished: bool = False
    """A follow-up failed (its decision, an effect, or its event not sent): `Outcome.unfinished`."""


def apply_effect(effect: Effect, ctx: Context, done: Applied) -> None:
    """One effect performed. (The effects' classes are imported here, by a plan that has one: a function whose
    plans have none, `phase`, never makes them.)"""
    from functions.runtime.effects import (
        Annotate,
        Create,
        Delete,
        Finalizers,
        KubeEvent,
        Label,
        Notify,
        Send,
        Wait,
        WriteStatus,
    )

    if ctx.settings.observe and skipped(effect):
        return
    if isinstance(effect, WriteStatus) and effect.best_effort:
        try:
            ctx.gateway.patch(effect.res, effect.namespace, effect.name, {"status": dict(effect.status)}, status=True)
        except CrefnError as e:
            done.reasons.append(f"{effect.res.kind} {effect.namespace}/{effect.name} not written: {e}")
    elif isinstance(effect, WriteStatus | Annotate | Label | Finalizers):
        key = (effect.res.plural, effect.namespace, effect.name)
        version = done.versions.get(key, effect.resource_version) if effect.resource_version else None
        patch = ({"status": dict(effect.status)} if isinstance(effect, WriteStatus)
                 else {"metadata": {"annotations": dict(effect.annotations)}} if isinstance(effect, Annotate)
                 else {"metadata": {"finalizers": list(effect.finalizers)}} if isinstance(effect, Finalizers)
                 else {"metadata": {"labels": dict(effect.labels)}})
        written = ctx.gateway.patch(effect.res, effect.namespace, effect.name, patch, resource_version=version,
                                    status=isinstance(effect, WriteStatus))
        if version:
            done.versions[key] = str((written.get("metadata") or {}).get("resourceVersion", ""))
            done.written[key] = written
    elif isinstance(effect, Create):
        try:
            done.created = ctx.gateway.create(effect.res, effect.namespace, effect.body)
        except PermanentError as e:
            if effect.refused is None:
                raise
            done.reasons.append(f"{effect.body.get('kind')} {effect.body.get('metadata', {}).get('name')} "
                                f"refused: {one_line(e.detail) or e}")
            for follow in effect.refused.follow(e.detail or str(e)):
                apply_effect(follow, ctx, done)
            done.refused = True
    elif isinstance(effect, Delete):
        with contextlib.suppress(NotFound, Conflict):
            ctx.gateway.delete(effect.res, effect.namespace, effect.name, uid=effect.uid or None)
    elif isinstance(effect, KubeEvent):
        with contextlib.suppress(AlreadyExists):
            ctx.gateway.create(EVENTS, effect.namespace, effect.body)
    elif isinstance(effect, Notify):
        from functions.runtime.alertsinks import configured_sinks, notify  # only `alert` notifies: loaded by it alone

        done.reasons = [notify(configured_sinks(ctx.settings), effect.alerts)]
    elif isinstance(effect, Send):
        event = filled(effect.event, effect.created_ref, done.created)
        if event is not None:
            if not ctx.settings.k_sink:
                raise PermanentError(f"K_SINK is not set: {event.type} cannot be sent")
            from functions.runtime.client import deliver  # only a function that sends loads the HTTP client

            deliver(ctx.settings.k_sink, event, "K_SINK", token_file=ctx.settings.oidc_token_path)
            done.sent.append(event.type)
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


@dataclass(frozen=True)
class Each(Generic[Key]):
    """One Job's part of an event about several: what was done, or the error that stopped it."""

    key: Key
    outcome: Outcome | None = None
    error: CrefnError | None = None


def run_each(ctx: Context, keys: Iterable[Key], read: Callable[[Key], Callable[[], Observed]],
             decide: Decide[Observed], then: Decide[Observed] | None = None,
             map_each: Callable[[Callable[[Key], Each[Key]], Iterable[Key]], Iterator[Each[Key]]] = map,
             ) -> list[Each[Key]]:
    """`run` for each key (`read(key)` gives the key's reads, as `run` takes them); with `then`, once a plan
    has replied, the keys after it are decided by `then` (one event per answer: only in order, with the
    default `map_each`); another `map_each` (a thread pool's `map`) runs the keys concurrently."""
    replied: list[bool] = []

    def one(key: Key) -> Each[Key]:
        try:
            outcome = run(ctx, read(key), then if then is not None and replied else decide)
        except CrefnError as e:
            return Each(key, error=e)
        if outcome.reply is not None:
            replied.append(True)
        return Each(key, outcome)

    return list(map_each(one, keys))
