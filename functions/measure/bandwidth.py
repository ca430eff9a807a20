"""A BandwidthMeasurement's status produced as CRE's BandwidthMeasurement controller produces it (the `measure`
function's decision for one). Pure.

While the Job runs, each sample reads the launcher's (the profile's replicatedJob's) whole log and writes the
averages of every row per message size with the transports (`functions.domain.nccl`), `Measuring`
True/`JobRunning`: provisional results. Once it `Succeeded`, the finished pod's complete log is read and its rows
replace them: `JobSucceeded`/`Job succeeded`, or `NoDataCollected` for none; a read that fails is retried for
`max(2m, the Job's measurementTimeout (5m))` (`Measuring` False/`FinalReadPending`, whose lastTransitionTime marks
the wait's start, and a Warning each time), then `LogsUnavailable`. A failed Job gets one best-effort read
(`JobFailed`/`Job failed`); a Job gone or replaced: `LogsUnavailable`. Complete is written once, locked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from functions.domain.conditions import parse_rfc3339
from functions.domain.goodput_state import stamp
from functions.domain.jobs import JobState
from functions.domain.measurement_objects import bandwidth_measurements, job_uid_of
from functions.domain.nccl import BandwidthParser, aggregate, rows, transports
from functions.measure.decide import RUNNING, condition, is_complete, ns_of, warning
from functions.runtime.durations import positive_duration
from functions.runtime.effects import WriteStatus
from functions.runtime.plan import Plan, nothing

GRACE = timedelta(minutes=2)
"""CRE's `defaultFinalReadGracePeriod`."""
MEASUREMENT_TIMEOUT = timedelta(minutes=5)
"""A Job's `spec.measurementTimeout` when it has none (CRE's `measurementTimeoutFor`)."""
NO_DATA = "Job succeeded but no bandwidth data was parsed; check spec.logProfileRef"
PENDING = "Job succeeded; waiting to read its complete log"


@dataclass(frozen=True)
class BandwidthSample:
    """One BandwidthMeasurement and what its sample is made of, as read."""

    measurement: Mapping[str, Any]
    job: JobState | None
    """None: the Job is gone on a fresh read."""
    verdict: str = ""
    anchor: int | None = None
    parser: BandwidthParser | None = None
    problem: str = ""
    """Why the LogProfile cannot be used (CRE's cause), or why the log could not be read."""
    unpageable: bool = False
    lines: Sequence[str] | None = None
    """The log read (None: nothing to read, or the read failed: `problem`)."""


def tail(status: Mapping[str, Any]) -> str:
    """What a measurement completing without its final read is left with (CRE's `withoutFinalResults`)."""
    return "results are provisional and are not used for threshold evaluation" if status.get("results") \
        else "no bandwidth data was parsed"


def saw_job(measurement: Mapping[str, Any], group: str) -> bool:
    """Whether the measurement shows its Job existed (CRE's `sawJob`)."""
    status = measurement.get("status") or {}
    return job_uid_of(measurement, group) is not None or bool(status.get("startTime")) or bool(
        status.get("results")) or any(c.get("type") == "Measuring" for c in status.get("conditions") or ())


def grace(job: JobState) -> timedelta:
    """How long a failed final read is retried: 2 minutes, or the Job's measurement timeout when longer."""
    return max(GRACE, positive_duration(job.job.spec.measurement_timeout, MEASUREMENT_TIMEOUT))


def pending_since(status: Mapping[str, Any]) -> datetime | None:
    for cond in status.get("conditions") or ():
        if (cond.get("type"), cond.get("status"), cond.get("reason")) == ("Measuring", "False", "FinalReadPending"):
            return parse_rfc3339(cond["lastTransitionTime"])
    return None


def complete(observed: BandwidthSample, group: str, reason: str, message: str, at: int, now: datetime,
             replace: list[dict[str, Any]] | None = None, found: Sequence[str] = ()) -> Plan:
    """The terminal write (CRE's `finalizeTerminal`): results replaced when given, transports unioned."""
    meta, status = observed.measurement["metadata"], observed.measurement.get("status") or {}
    generation = meta["generation"]
    conditions = condition(list(status.get("conditions") or ()), "Measuring", False, reason, message, now, generation)
    conditions = condition(conditions, "Complete", True, reason, message, now, generation)
    done: dict[str, Any] = {"transport": sorted({*status.get("transport", ()), *found}) or None,
                            "completionTime": stamp(at), "conditions": conditions}
    if replace is not None:
        done["results"] = replace
    return Plan((write(observed, done, group),), reason=f"{where(observed)}: {reason}")


def write(observed: BandwidthSample, status: Mapping[str, Any], group: str) -> WriteStatus:
    meta = observed.measurement["metadata"]
    return WriteStatus(bandwidth_measurements(group), meta["namespace"], meta["name"],
                       meta["resourceVersion"], status)


def where(observed: BandwidthSample) -> str:
    meta = observed.measurement["metadata"]
    return f"BandwidthMeasurement {meta['namespace']}/{meta['name']}"


def decide_bandwidth(observed: BandwidthSample, group: str, now: datetime) -> Plan:
    measurement = observed.measurement
    status = measurement.get("status") or {}
    if is_complete(measurement):
        return nothing(f"{where(observed)} is complete")
    job = observed.job
    uid = job_uid_of(measurement, group)
    if job is None or (uid is not None and uid != job.job.metadata.uid):
        if job is None and not saw_job(measurement, group):
            return nothing(f"{where(observed)}: waiting for its Job")
        return complete(observed, group, "LogsUnavailable", f"Referenced Job no longer exists; {tail(status)}",
                        ns_of(now), now)
    at = observed.anchor if observed.anchor is not None else ns_of(now)
    if observed.verdict == "Failed":
        found = rows(observed.parser, observed.lines) if observed.parser and observed.lines is not None else []
        return complete(observed, group, "JobFailed", "Job failed", at, now, aggregate(found) if found else None,
                        transports(observed.parser, observed.lines) if observed.parser and observed.lines else ())
    if observed.verdict == "Succeeded":
        return succeeded(observed, job, group, at, now)
    if observed.verdict != "InProgress":
        return nothing(f"{where(observed)}: its Job is not running")
    return running(observed, group, now)


def succeeded(observed: BandwidthSample, job: JobState, group: str, at: int, now: datetime) -> Plan:
    status = observed.measurement.get("status") or {}
    if observed.parser is not None and observed.lines is not None:
        found, names = rows(observed.parser, observed.lines), transports(observed.parser, observed.lines)
        if not found:
            return complete(observed, group, "NoDataCollected", NO_DATA, at, now, [], names)
        return complete(observed, group, "JobSucceeded", "Job succeeded", at, now, aggregate(found), names)
    since = pending_since(status) or now
    if not observed.unpageable and now - since < grace(job):
        meta = observed.measurement["metadata"]
        conditions = condition([c for c in status.get("conditions") or () if c.get("type") != "Measuring" or
                                c.get("reason") == "FinalReadPending"], "Measuring", False, "FinalReadPending",
                               PENDING, now, meta["generation"])
        retrying = f"Final log read failed, retrying: {observed.problem}"
        return Plan((write(observed, {"conditions": conditions}, group),
                     warning(observed.measurement, "FinalReadPending", retrying, now)),
                    reason=f"{where(observed)}: final read pending: {observed.problem}")
    message = f"Job succeeded but its log could not be read in full ({observed.problem}); {tail(status)}"
    return complete(observed, group, "LogsUnavailable", message, at, now)


def running(observed: BandwidthSample, group: str, now: datetime) -> Plan:
    status = observed.measurement.get("status") or {}
    meta = observed.measurement["metadata"]
    generation = meta["generation"]
    if observed.parser is None:
        ref = observed.measurement["spec"]["logProfileRef"]
        text = f'LogProfile "{ref}" could not be resolved: {observed.problem}'
        conditions = condition(list(status.get("conditions") or ()), "Measuring", False, "LogProfileNotFound",
                               text, now, generation)
        return Plan((write(observed, {"conditions": conditions}, group),
                     warning(observed.measurement, "LogProfileNotFound", text, now)),
                    reason=f"{where(observed)}: {text}")
    if observed.lines is None:
        return nothing(f"{where(observed)}: no launcher to read")
    found, names = rows(observed.parser, observed.lines), transports(observed.parser, observed.lines)
    if not found and not names:
        return nothing(f"{where(observed)}: no bandwidth row logged yet")
    sample: dict[str, Any] = {"startTime": status.get("startTime") or stamp(ns_of(now)),
                              "transport": sorted({*status.get("transport", ()), *names}) or None,
                              "conditions": condition(list(status.get("conditions") or ()), "Measuring", True,
                                                      "JobRunning", RUNNING, now, generation)}
    if found:
        sample["results"] = aggregate(found)
    return Plan((write(observed, sample, group),), reason=f"{where(observed)}: sampled, {len(found)} rows")
