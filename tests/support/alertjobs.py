"""Jobs of the alert tests by their exclusive conditions (InProgress, Succeeded, Failed), as the alert rules
read them."""

from __future__ import annotations

from typing import Any

from tests.support.alerts import FRESH, OLD
from tests.support.helpers import cond


def exclusive(type_: str, reason: str, ltt: str = FRESH, message: str = "m") -> list[dict[str, Any]]:
    """The exclusive set with `type_` True since `ltt`."""
    return [cond(t, "True" if t == type_ else "False", reason if t == type_ else "NotApplicable",
                 message if t == type_ else "", ltt=ltt if t == type_ else OLD)
            for t in ("InProgress", "Succeeded", "Failed")]


RUNNING = exclusive("InProgress", "WorkloadRunning", OLD)
CHECKPOINT = {"pvcName": "p", "maxRestarts": 3}
GRACE_END = {"crefn.dev/restart-not-before": "2026-11-30T12:00:00Z"}
RESTARTING = exclusive("InProgress", "WorkloadRestarting", OLD)
BLOCKED = exclusive("InProgress", "WorkloadSchedulingBlocked", OLD)
