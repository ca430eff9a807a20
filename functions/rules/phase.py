"""A TrainJob's phase as the event `dev.crefn.workload.phase` (SPEC §3, §4.2), for `phase` and `resync`.

The owning Job is the TrainJob's controller ownerReference of kind `Job` in the CRE group (the kind
alone is ambiguous with batch/v1), or else the `<cre group>/job` label.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import ValidationError

from events.emitted import JobRef, WorkloadPhaseData, WorkloadRef
from events.envelope import Envelope, Outbound, first_error, to_outbound
from events.objects import TrainJob
from events.types import JOB_KIND, EventType, job_label
from functions.errors import PermanentError
from functions.rules.adapter import PhaseResult, WrongKind, check_trainjob


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
                cause: Envelope | None) -> Outbound:
    data = WorkloadPhaseData(job=JobRef(name=job, namespace=workload.namespace), workload=workload,
                             phase=result.phase, reason=result.reason, message=result.message, observed_at=now)
    return to_outbound(EventType.WORKLOAD_PHASE, function, workload.namespace, job, data, cause,
                       workloadphase=result.phase.value)
