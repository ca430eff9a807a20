"""Every function target: its name, its handler and the event types it accepts.

Read by the served entry points (`functions.main`), the CLI, the local dev stack, the tests and the
manifest tests (a Trigger may route only what its target accepts). `functions.main` also serves
`metrics`, which handles no event: it answers Prometheus scrapes with the Jobs' state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

from events.envelope import Envelope
from functions.context import Context
from functions.handlers import (
    alert,
    launch,
    measurements,
    nodehealth,
    phase,
    restart,
    resync,
    status,
    timeout,
    validate,
    workloadrun,
)
from functions.plan import Outcome


@dataclass(frozen=True)
class Target:
    name: str
    handle: Callable[[Envelope, Context], Outcome]
    accepts: frozenset[str]


def _target(module: ModuleType) -> Target:
    return Target(module.FUNCTION, module.handle, module.ACCEPTS)


TARGETS: dict[str, Target] = {t.name: t for t in map(_target, (
    phase, launch, measurements, status, restart, timeout, nodehealth, validate, resync, workloadrun, alert))}
METRICS = "metrics"
"""The scrape target: `GET /metrics` → the managed Jobs' state, listed at scrape time."""
SERVED: frozenset[str] = frozenset({*TARGETS, METRICS})
"""Every target `functions.main` serves, each a Knative Service `crefn-<target>`."""
