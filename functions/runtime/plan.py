"""What a decision asks for, as frozen data: the effects to apply in order, and the answer.

A handler's `decide(observed, settings, now)` returns a `Plan`; `functions.runtime.apply` performs its
effects (`functions.runtime.effects`) through the gateway and the HTTP client, in order, then the server
answers with `reply` (200) or, without one, 202 and `reason`. A plan is plain data: two plans decided from
the same reads compare equal, and its repr shows it whole. A plan may say what follows, decided on what its
writes returned (`Followed`).
What each effect does and how it is locked: docs/architecture.md#plans-and-effects
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from events.envelope import Outbound
    from functions.runtime.effects import Effect


Written = Mapping[tuple[str, str, str], Mapping[str, Any]]
"""The objects a plan's locked writes left, as the API server returned them, by (plural, namespace, name)."""


class Followed(Protocol):
    """What follows a plan, described by its fields: `follow(created, written)` gives the plan decided on the
    object the plan's `Create` returned (None: none) and on what its locked writes left. It is applied after
    the plan, and its answer is sent (`K_SINK`); its failure is reported in the answer's reason, the plan
    standing."""

    def follow(self, created: Mapping[str, Any] | None, written: Written) -> Plan: ...


@dataclass(frozen=True)
class Plan:
    effects: tuple[Effect, ...] = ()
    reply: Outbound | None = None
    reason: str = ""
    created_ref: str = ""
    """When set, the field of the reply's data (a `WorkloadRef`) that takes the name, uid and resourceVersion
    of the object the plan's `Create` returned (they exist only then); there is no reply without that object."""
    refused: str = ""
    """A restart the plan refuses, by why (`RestartDecision.refusal`): counted in `crefn_restarts_refused_total`."""
    then: Followed | None = None
    """Decided once the plan is done, on what its writes returned (`Followed`)."""


@dataclass(frozen=True)
class Outcome:
    """What was done: the event to reply with (200), or why there is none (202), and the types of the
    events sent (`Send`), in order. `unfinished`: what was to follow the plan's writes failed (its
    decision, an effect or its event); `reason` says how, the answer stands."""

    reply: Outbound | None
    reason: str
    sent: tuple[str, ...] = ()
    unfinished: bool = False


def nothing(reason: str) -> Plan:
    """Handled, nothing to do or publish (202)."""
    return Plan(reason=reason)
