"""The least a `phase` within SPEC loads, as a functions-framework function (`make bench`'s models floor): the
catalog's pydantic models of what it reads and what it emits (SPEC §4.2: the catalog's models describe what is
read and emitted). Each request validates the TrainJob in the event's data
and answers the phase event's data built from it; no settings, no CloudEvent codec, no decision. `phase`'s cold
start beside this one tells how much of it is what pydantic and its models cost, which no code of the functions'
removes."""

from datetime import UTC, datetime
from typing import Any

import functions_framework

from events.emitted import JobRef, WorkloadPhaseData, WorkloadRef
from events.objects import TrainJob
from events.types import Phase


@functions_framework.http
def models(request: Any) -> Any:
    trainjob = TrainJob.model_validate(request.get_json(silent=True) or {})
    meta = trainjob.metadata
    data = WorkloadPhaseData(job=JobRef(name=meta.name, namespace=meta.namespace),
                             workload=WorkloadRef(api_version=trainjob.api_version, kind=trainjob.kind,
                                                  name=meta.name, namespace=meta.namespace, attempt=0),
                             phase=Phase.FAILED, observed_at=datetime.now(UTC))
    return data.model_dump(mode="json", by_alias=True), 200
