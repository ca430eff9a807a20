"""What a decision asks for, as frozen data: the effects to apply in order, and the answer.

A handler's `decide(observed, settings, now)` returns a `Plan`; `functions.runtime.apply` performs its
effects through the gateway and the HTTP client, in order, then the server answers with `reply`
(200) or, without one, 202 and `reason`. A plan is plain data: two plans decided from the same reads
compare equal, and its repr shows it whole. Effects: `WriteStatus`, `Annotate`, `Label`, `Create` (with its
`Refusal`), `Delete`, `KubeEvent`, `Notify`, `Send` and `Wait`; a plan may say what follows, decided on
what its writes returned (`Followed`).
What each one does and how it is locked: docs/architecture.md#plans-and-effects
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from events.emitted import AlertData
from events.envelope import Outbound
from functions.runtime.resources import Resource


@dataclass(frozen=True)
class WriteStatus:
    res: Resource
    namespace: str
    name: str
    resource_version: str
    status: Mapping[str, Any]
    best_effort: bool = False
    """A write whose failure is reported in the answer's reason and changes nothing else (a measurement
    reset after a restart: the restart stands either way)."""


@dataclass(frozen=True)
class Annotate:
    res: Resource
    namespace: str
    name: str
    annotations: Mapping[str, str]
    resource_version: str = ""


@dataclass(frozen=True)
class Label:
    """A merge patch of labels (a value None removes the label); locked when `resource_version` is given."""

    res: Resource
    namespace: str
    name: str
    labels: Mapping[str, str | None]
    resource_version: str = ""


@dataclass(frozen=True)
class Finalizers:
    """The object's finalizers set to these (a merge patch replaces the list), locked on `resource_version`: one
    added meanwhile makes it a conflict, never a removal."""

    res: Resource
    namespace: str
    name: str
    finalizers: tuple[str, ...]
    resource_version: str


@dataclass(frozen=True)
class Create:
    res: Resource
    namespace: str
    body: Mapping[str, Any]
    refused: Refusal | None = None


class Refusal(Protocol):
    """What follows a create the API refuses for good, described by its fields (a frozen dataclass of
    the domain): `follow(error)` gives the effects for the API's error (a Warning Event named by it, a
    verdict quoting it), applied instead of the rest of the plan."""

    def follow(self, error: str) -> tuple[Effect, ...]: ...


Written = Mapping[tuple[str, str, str], Mapping[str, Any]]
"""The objects a plan's locked writes left, as the API server returned them, by (plural, namespace, name)."""


class Followed(Protocol):
    """What follows a plan, described by its fields: `follow(created, written)` gives the plan decided on the
    object the plan's `Create` returned (None: none) and on what its locked writes left. It is applied after
    the plan, and its answer is sent (`K_SINK`); its failure is reported in the answer's reason, the plan
    standing."""

    def follow(self, created: Mapping[str, Any] | None, written: Written) -> Plan: ...


@dataclass(frozen=True)
class Delete:
    res: Resource
    namespace: str
    name: str
    uid: str


@dataclass(frozen=True)
class KubeEvent:
    """A Kubernetes Event about a Job, as CRE's event recorder writes them (`functions.domain.kubeevents`)."""

    namespace: str
    body: Mapping[str, Any]
    observing: bool = False
    """Recorded in observe mode too: an Event that reports on CRE's verdicts, changing none of them."""


@dataclass(frozen=True)
class Notify:
    alerts: tuple[AlertData, ...]


@dataclass(frozen=True)
class Send:
    event: Outbound
    created_ref: str = ""


@dataclass(frozen=True)
class Wait:
    reason: str
    retry_after: int | None = None
    """Whole seconds until the wait is over, when the decision knows its end."""


def wait_until(reason: str, end: datetime, now: datetime) -> Wait:
    """A wait over at `end`: the seconds left, rounded up (at least 1, so a retry never comes early)."""
    return Wait(reason, max(1, math.ceil((end - now).total_seconds())))


Effect = WriteStatus | Annotate | Label | Finalizers | Create | Delete | KubeEvent | Notify | Send | Wait
WRITES = (WriteStatus, Annotate, Label, Finalizers, Create, Delete, KubeEvent)
"""Effects that change the cluster: none of them is applied in observe mode."""


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
