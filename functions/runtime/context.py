"""What every function is given: the settings, the Kubernetes gateway (connected on first use), a clock, the
evaluator of tenant CEL (`functions.runtime.celbudget`, its worker processes started on first use), and what
the process remembers between events (`functions.runtime.memory`).

The gateway's module, and with it the Kubernetes client, is imported on first use too: a function
that never calls the API (`phase` in Resource mode) starts faster and smaller without it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from functions.runtime.memory import Memory
from functions.runtime.settings import Settings

if TYPE_CHECKING:
    from functions.runtime.celbudget import CelBudget
    from functions.runtime.gateway import Gateway


def utc_now() -> datetime:
    return datetime.now(UTC)


class Context:
    def __init__(
        self,
        settings: Settings,
        gateway: Gateway | None = None,
        clock: Callable[[], datetime] = utc_now,
        memory: Memory | None = None,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.memory = memory or Memory()
        self._gateway = gateway
        self._cel: CelBudget | None = None
        self._lock = threading.Lock()

    @property
    def gateway(self) -> Gateway:
        """Connected on first use, so functions that make no API call never need a cluster."""
        with self._lock:
            if self._gateway is None:
                from functions.runtime.gateway import Gateway

                self._gateway = Gateway.connect(self.settings.kubeconfig, self.settings.kube_timeout_seconds)
            return self._gateway

    @property
    def cel(self) -> CelBudget:
        """One per process (its workers serve every thread), made on first use."""
        with self._lock:
            if self._cel is None:
                from functions.runtime.celbudget import CelBudget

                self._cel = CelBudget(timedelta(seconds=self.settings.cel_budget_seconds))
            return self._cel
