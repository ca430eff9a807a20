"""The workload adapter: TrainJob → WorkloadPhase (SPEC §3). Pure; no I/O.

Rules, first match wins: wrong kind → error; a True `Failed` condition → Failed; a True `Complete`
condition → Succeeded; `spec.suspend` → Pending/Suspended; otherwise Running. Only status "True"
counts; `jobsStatus`, the early-v2 `Created` condition and the `Suspended` condition are never read.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from events.objects import Condition, TrainJob
from events.types import TRAINJOB_API_VERSION, TRAINJOB_KIND, Phase, Reason

SUSPENDED_MESSAGE = "TrainJob is suspended (spec.suspend=true), waiting for it to be resumed"


class WrongKind(ValueError):
    """The object given to the adapter is not a TrainJob."""


class PhaseResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    phase: Phase
    reason: str = ""
    message: str = ""


def check_trainjob(api_version: str, kind: str) -> None:
    if api_version != TRAINJOB_API_VERSION or kind != TRAINJOB_KIND:
        raise WrongKind(f"expected TrainJob, got {api_version}/{kind}")


def decide_phase(trainjob: TrainJob) -> PhaseResult:
    check_trainjob(trainjob.api_version, trainjob.kind)
    true_conditions: dict[str, Condition] = {}
    for cond in trainjob.status.conditions:
        if cond.status == "True":
            true_conditions.setdefault(cond.type, cond)
    for cond_type, phase in (("Failed", Phase.FAILED), ("Complete", Phase.SUCCEEDED)):
        if terminal := true_conditions.get(cond_type):
            return PhaseResult(phase=phase, reason=terminal.reason, message=terminal.message)
    if trainjob.spec.suspend:
        message = SUSPENDED_MESSAGE
        if trainjob.spec.managed_by:
            message += f"; managed by {trainjob.spec.managed_by}"
        return PhaseResult(phase=Phase.PENDING, reason=Reason.SUSPENDED, message=message)
    return PhaseResult(phase=Phase.RUNNING)


def deleted_phase(name: str) -> PhaseResult:
    """A TrainJob delete is observed as Failed/WorkloadDeleted."""
    return PhaseResult(
        phase=Phase.FAILED, reason=Reason.WORKLOAD_DELETED, message=f"Workload TrainJob/{name} was deleted"
    )
