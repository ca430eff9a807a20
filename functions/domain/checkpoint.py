"""The checkpoint restart rule (SPEC §6.3; CRE's `restartFromCheckpoint` and `hasCheckpoint`), which `restart`
decides with and `parity` compares against: a failure of the current attempt is restarted when the Job has a
checkpoint configured, restarts left, and, when it asks for evidence, a GoodputMeasurement of it reporting a
checkpoint. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from functions.domain.jobs import JobState
from functions.domain.measurement_objects import measures


@dataclass(frozen=True)
class RestartDecision:
    restart: bool
    why: str
    refusal: str = ""
    """Why a restart is refused, as a label value: `no-checkpoint`, `exhausted` or `no-evidence` ("" if allowed)."""


def decide_restart(state: JobState, evidence: bool | None, require_evidence: bool) -> RestartDecision:
    """Whether a failure of the Job's current attempt may be restarted (SPEC §6.3)."""
    checkpoint = state.job.spec.checkpoint
    count = state.job.status.restart_count
    if checkpoint is None:
        return RestartDecision(False, "no checkpoint configured", "no-checkpoint")
    if count >= checkpoint.max_restarts:
        return RestartDecision(False, f"restarts exhausted ({count}/{checkpoint.max_restarts})", "exhausted")
    if require_evidence and not evidence:
        return RestartDecision(False, "no checkpoint evidence (GoodputMeasurement lastCheckpointStep > 0)",
                               "no-evidence")
    return RestartDecision(True, f"restart {count + 1}/{checkpoint.max_restarts}")


def has_checkpoint(raws: Iterable[Mapping[str, Any]], job: str) -> bool:
    """Whether a GoodputMeasurement of the Job reports `lastCheckpointStep > 0` (CRE's `hasCheckpoint`)."""
    return any(measures(raw, job) and int((raw.get("status") or {}).get("lastCheckpointStep") or 0) > 0
               for raw in raws)
