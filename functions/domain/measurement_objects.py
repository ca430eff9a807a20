"""A Job's GoodputMeasurement and BandwidthMeasurement, as CRE's Job controller plumbs them
(`ensureGoodputMeasurement`, `ensureBandwidthMeasurement`, `measuresJob`, `findJobGoodputMeasurement`,
the reset in `restartFromCheckpoint`). Pure.

- Creation: `<job>-goodput` / `<job>-bandwidth` (CRE's `Truncate` to 63), owned by the Job, labelled
  `<cre group>/job` and `app.kubernetes.io/managed-by: nvcre` (CRE's value); the BandwidthMeasurement
  annotated `<cre group>/job-uid: <the Job's uid>`.
- A BandwidthMeasurement measures the Job when its `spec.jobRef` names it and its job-uid annotation
  names the Job's uid or is absent; a Job's GoodputMeasurement: the first listed naming the Job.
- The reset on a checkpoint restart (a status merge patch) clears the stall state.
The status is written by CRE's measurement controllers. Details: docs/functions.md#measurement-objects
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from pydantic import Field, ValidationError

from events.envelope import first_error
from events.objects import BandwidthMeasurementSpec, GoodputMeasurementSpec, KubeModel, KubeObject
from events.types import CRE_VERSION, JOB_KIND, MANAGED_BY_LABEL, MANAGED_BY_VALUE, job_label, job_uid_annotation
from functions.domain.conditions import rfc3339
from functions.domain.jobs import JobState
from functions.domain.naming import truncate
from functions.runtime.effects import WriteStatus
from functions.runtime.errors import PermanentError
from functions.runtime.resources import Resource, cre_goodput

NAME_LIMIT = 63


class JobReference(KubeModel):
    api_group: str = ""
    kind: str = ""
    name: str = ""


class GoodputSpec(KubeModel):
    job_ref: JobReference = Field(default_factory=JobReference)
    sample_interval: str = ""


class GoodputStatus(KubeModel):
    """What the stall detector and the checkpoint evidence read (CRE's GoodputMeasurement controller
    writes it)."""

    start_time: datetime | None = None
    application_start_time: datetime | None = None
    last_step_timestamp: datetime | None = None
    avg_step_time_sec: str = ""
    log_interval: int = 0
    last_checkpoint_step: int = 0


class GoodputMeasurement(KubeObject):
    spec: GoodputSpec = Field(default_factory=GoodputSpec)
    status: GoodputStatus = Field(default_factory=GoodputStatus)


def bandwidth_measurements(group: str) -> Resource:
    return Resource(group, CRE_VERSION, "bandwidthmeasurements", "BandwidthMeasurement")


def goodput_name(job: str) -> str:
    return truncate(f"{job}-goodput", NAME_LIMIT)


def bandwidth_name(job: str) -> str:
    return truncate(f"{job}-bandwidth", NAME_LIMIT)


def measurement_body(state: JobState, group: str, kind: str, name: str, spec: Mapping[str, Any]) -> dict[str, Any]:
    job = state.job
    return {
        "apiVersion": f"{group}/{CRE_VERSION}", "kind": kind,
        "metadata": {"name": name, "namespace": job.metadata.namespace,
                     "labels": {MANAGED_BY_LABEL: MANAGED_BY_VALUE, job_label(group): job.metadata.name},
                     "ownerReferences": [{"apiVersion": job.api_version, "kind": job.kind, "name": job.metadata.name,
                                          "uid": job.metadata.uid, "controller": True,
                                          "blockOwnerDeletion": True}]},
        "spec": {"jobRef": {"apiGroup": group, "kind": JOB_KIND, "name": job.metadata.name}, **spec},
    }


def goodput_body(state: JobState, group: str, wanted: GoodputMeasurementSpec) -> dict[str, Any]:
    spec: dict[str, Any] = {"logProfileRef": wanted.log_profile_ref}
    if wanted.sample_interval:
        spec["sampleInterval"] = wanted.sample_interval
    return measurement_body(state, group, cre_goodput(group).kind, goodput_name(state.job.metadata.name), spec)


def bandwidth_body(state: JobState, group: str, wanted: BandwidthMeasurementSpec) -> dict[str, Any]:
    spec: dict[str, Any] = {"logProfileRef": wanted.log_profile_ref}
    if wanted.sample_interval:
        spec["sampleInterval"] = wanted.sample_interval
    if wanted.test_type:
        spec["testType"] = wanted.test_type
    body = measurement_body(state, group, bandwidth_measurements(group).kind, bandwidth_name(state.job.metadata.name),
                            spec)
    body["metadata"]["annotations"] = {job_uid_annotation(group): state.job.metadata.uid}
    return body


def measures(raw: Mapping[str, Any], job: str) -> bool:
    """Whether a measurement (raw) refers to the Job by its `spec.jobRef`."""
    ref = (raw.get("spec") or {}).get("jobRef") or {}
    return bool(ref.get("name") == job and ref.get("kind", JOB_KIND) == JOB_KIND)


def job_uid_of(raw: Mapping[str, Any], group: str) -> str | None:
    """The uid a measurement's job-uid annotation names (None without the annotation)."""
    annotations = (raw.get("metadata") or {}).get("annotations") or {}
    uid = annotations.get(job_uid_annotation(group))
    return None if uid is None else str(uid)


def measures_job(raw: Mapping[str, Any], job: str, uid: str, group: str) -> bool:
    """CRE's `measuresJob`: the measurement refers to the Job and was made for this Job (its job-uid
    annotation names the Job's uid, or it has none)."""
    return measures(raw, job) and job_uid_of(raw, group) in (None, uid)


def goodput_of(raws: Iterable[Mapping[str, Any]], job: str) -> GoodputMeasurement | None:
    """The Job's GoodputMeasurement: the first listed that refers to it (CRE's `findJobGoodputMeasurement`)."""
    for raw in raws:
        if measures(raw, job):
            try:
                return GoodputMeasurement.model_validate(raw)
            except ValidationError as e:
                name = (raw.get("metadata") or {}).get("name")
                raise PermanentError(f"unreadable GoodputMeasurement {name}: {first_error(e)}") from None
    return None


def is_reset(gm: GoodputMeasurement) -> bool:
    """Whether the measurement shows no step state (as the reset leaves it, or as its controller starts)."""
    status = gm.status
    return status.last_step_timestamp is None and status.application_start_time is None and not status.avg_step_time_sec


def reset_goodput(gm: GoodputMeasurement, group: str, now: datetime) -> WriteStatus:
    """The status merge patch that restarts the stall detector's clocks (CRE's reset on a restart), not
    locked (it sets the same fields whatever the measurement controller wrote in between) and best
    effort (CRE logs a failed reset and restarts all the same)."""
    reset = {"lastStepTimestamp": None, "avgStepTimeSec": "", "applicationStartTime": None, "startTime": rfc3339(now)}
    return WriteStatus(cre_goodput(group), gm.metadata.namespace, gm.metadata.name, "", reset, best_effort=True)
