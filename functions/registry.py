"""Every function target: its name, its `handle` and the event types it accepts.

Read by the served entry points (`functions.main`), the CLI, the local dev stack, the tests and the
manifest tests (a Trigger may route only what its target accepts). `functions.main` also serves
`metrics`, which handles no event: it answers Prometheus scrapes with the Jobs' state. It serves `record`,
the dead-letter recorder, too.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from events.envelope import Envelope
    from functions.runtime.context import Context
    from functions.runtime.plan import Outcome
    from functions.runtime.settings import Settings

HANDLERS = ("phase", "launch", "measurements", "measure", "status", "restart", "timeout", "nodehealth", "validate",
            "resync", "workloadrun", "alert", "parity")
"""Every event target, each the package `functions.<name>` (its FUNCTION, ACCEPTS and handle)."""


@dataclass(frozen=True)
class Target:
    name: str
    handle: Callable[[Envelope, Context], Outcome]
    accepts: frozenset[str]


@functools.cache
def _target(name: str) -> Target:
    module = importlib.import_module(f"functions.{name}")
    return Target(module.FUNCTION, module.handle, module.ACCEPTS)


class Targets(Mapping[str, Target]):
    """name → Target, importing a function's folder only when its target is looked up: a served
    function loads its own folder and what it needs, not the other twelve."""

    def __getitem__(self, name: str) -> Target:
        if name not in HANDLERS:
            raise KeyError(name)
        return _target(name)

    def __iter__(self) -> Iterator[str]:
        return iter(HANDLERS)

    def __len__(self) -> int:
        return len(HANDLERS)


TARGETS: Mapping[str, Target] = Targets()
METRICS = "metrics"
"""The scrape target: `GET /metrics` → the managed Jobs' state, listed at scrape time."""
SERVED: frozenset[str] = frozenset({*HANDLERS, METRICS})
"""Every target `functions.main` serves, each a Knative Service `crefn-<target>`."""
RECORD = "record"
"""The dead-letter recorder (`functions.runtime.deadletters`), also served by `functions.main`: `cre-fn record`
runs it, as the Deployment `crefn-dead-letters` does (so it is not one of SERVED's `crefn-<target>`)."""
ONE_AT_A_TIME = frozenset({"phase"})
"""Targets whose common event needs no API call (`phase`: the TrainJob is in the event, Resource mode): their worker
serves one request at a time, functions-framework's `THREADS` defaulting to 1 (`functions.main.one_at_a_time_worker`,
its connections kept alive), since more threads only hand Python's interpreter lock to and fro: about 40 % more
events a second from the same CPU (docs/cost.md#what-a-process-loads). `THREADS` set on the Service wins; Knative
scales the pods."""
STARTS: Mapping[str, str] = {"alert": "functions.runtime.alertsinks"}
"""Targets with something to show before their first event: the module whose `start(target, settings)` runs
once the target's settings are read (the alert function's `crefn_alert_sinks_configured`)."""


def start(name: str, settings: Settings) -> None:
    """What a target does once its settings are read, before it serves its first request."""
    if name in STARTS:
        importlib.import_module(STARTS[name]).start(name, settings)
