"""A workload's phase, shared by `phase`, `status` and `resync` (SPEC §3, §5). Pure.

- A TrainJob parsed (`parse_trainjob`: a wrong kind or an invalid object is a permanent error) and the Job
  that owns it (`find_owner`): its controller ownerReference of kind `Job` in the CRE group (the kind alone
  is ambiguous with batch/v1), or else the `<cre group>/job` label.
- The event `dev.crefn.workload.phase` (`phase_event`).

The Job condition a phase calls for is `functions.domain.phase_conditions` (`status`'s, with the running path,
which `phase` does not load).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import ValidationError

from events.emitted import JobRef, WorkloadPhaseData, WorkloadRef
from events.envelope import Envelope, Outbound, first_error, to_outbound
from events.objects import TrainJob
from events.types import JOB_KIND, EventType, job_label
from functions.domain.adapter import PhaseResult, WrongKind, check_trainjob
from functions.runtime.errors import PermanentError


def parse_trainjob(obj: dict[str, Any]) -> TrainJob:
    try:
        check_trainjob(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        return TrainJob.model_validate(obj)
    except WrongKind as e:
        raise PermanentError(str(e)) from None
    except ValidationError as e:
        raise PermanentError(f"invalid TrainJob: {first_error(e)}") from None


def find_owner(trainjob: TrainJob, cre_group: str) -> str | None:
    """The name of the CRE Job that owns a TrainJob."""
    owner = trainjob.controller_owner()
    if owner and owner.kind == JOB_KIND and owner.api_version.split("/")[0] == cre_group:
        return owner.name
    return trainjob.metadata.labels.get(job_label(cre_group)) or None


def phase_event(job: str, workload: WorkloadRef, result: PhaseResult, now: datetime, function: str,
                cause: Envelope | None, failed_before: bool | None = None, created: bool | None = None) -> Outbound:
    data = WorkloadPhaseData(job=JobRef(name=job, namespace=workload.namespace), workload=workload,
                             phase=result.phase, reason=result.reason, message=result.message, observed_at=now,
                             failed_before=failed_before, created=created)
    return to_outbound(EventType.WORKLOAD_PHASE, function, workload.namespace, job, data, cause,
                       workloadphase=result.phase.value)
