"""The effects a plan asks for, as frozen data, each applied by `functions.runtime.apply` in the plan's order.

`WriteStatus`, `Annotate`, `Label` and `Finalizers` (merge patches, locked when a resourceVersion is given),
`Create` (with its `Refusal`: what follows a create the API refuses for good), `Delete`, `KubeEvent`, `Notify`,
`Send` and `Wait`. A module of their own beside `functions.runtime.plan`: a function whose plans have none of them
(`phase` replies, and writes nothing) does not make their classes as it starts.
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
