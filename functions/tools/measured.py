"""`cre-fn doctor`'s look at the measurements of managed Jobs: does their status still move?

CRE's manager writes it (the functions only read it); stopped, nothing moves it. A running Job's
GoodputMeasurement moves with `applicationStopTime` (the wall clock at every sample that read a log line),
`startTime` and `lastStepTimestamp` (else it counts from the Job's running since); an ended Job's measurements
get their `completionTime` soon after its terminal condition. One is *still* when it has not moved for ten of
its `sampleInterval`s, at least 10 minutes (a workload that logs nothing is still too: the fix names both
causes). A BandwidthMeasurement of a running Job moves only on its transitions: judged once the Job ended.
Pure, but for `find`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from events.types import MANAGED_LABEL, Reason
from functions.domain.conditions import TERMINAL, parse_rfc3339, true_exclusive
from functions.domain.gotext import go_duration
from functions.domain.measurement_objects import bandwidth_measurements
from functions.domain.stall import interval_of
from functions.runtime.gateway import Gateway
from functions.runtime.resources import cre_goodput, cre_jobs

SAMPLES = 10
FLOOR = timedelta(minutes=10)
MOVED = ("applicationStopTime", "lastStepTimestamp", "startTime")
NAMED = 3
"""How many still measurements the line names (the rest are counted)."""


@dataclass(frozen=True)
class Still:
    """A measurement whose status has not moved: which, of which Job, and how it stands."""

    kind: str
    namespace: str
    name: str
    job: str
    why: str

    def line(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name} ({self.why})"


@dataclass(frozen=True)
class Looked:
    """What was looked at: the measurements of managed Jobs that can be judged, and those found still."""

    judged: int
    still: tuple[Still, ...]


def still_after(raw: Mapping[str, Any]) -> timedelta:
    """How long a measurement may stay unmoved: ten of its `spec.sampleInterval` (60 s when unset or
    unreadable), at least 10 minutes."""
    return max(FLOOR, SAMPLES * interval_of(str((raw.get("spec") or {}).get("sampleInterval") or "")))


def since(conditions: Iterable[Mapping[str, Any]], types: Iterable[str]) -> datetime | None:
    """The `lastTransitionTime` of the first True condition of `types`."""
    true = {c.get("type"): c for c in conditions if c.get("status") == "True"}
    for type_ in types:
        if type_ in true:
            return parse_rfc3339(str(true[type_].get("lastTransitionTime") or ""))
    return None


def age(now: datetime, then: datetime) -> str:
    return go_duration(timedelta(seconds=int((now - then).total_seconds())))


def judge(job: Mapping[str, Any], measurement: Mapping[str, Any], now: datetime) -> tuple[bool, str]:
    """(whether the measurement can be judged, why it is still — "" when it moves)."""
    conditions = list((job.get("status") or {}).get("conditions") or ())
    status = measurement.get("status") or {}
    bound = still_after(measurement)
    ended = since(conditions, TERMINAL)
    if ended is not None:
        if status.get("completionTime"):
            return True, ""
        return True, (f"Job ended {age(now, ended)} ago, not completed" if now - ended > bound else "")
    verdict = true_exclusive(conditions)
    if verdict is None or (verdict.type, verdict.reason) != ("InProgress", Reason.WORKLOAD_RUNNING):
        return False, ""
    if measurement.get("kind") != "GoodputMeasurement":
        return False, ""
    times = [t for key in MOVED if (t := parse_rfc3339(str(status.get(key) or "")))]
    moved = max(times) if times else since(conditions, ("InProgress",))
    if moved is None:
        return False, ""
    if now - moved <= bound:
        return True, ""
    return True, (f"Job running, not updated for {age(now, moved)}" if times else
                  f"Job running for {age(now, moved)}, never updated")


def look(jobs: Iterable[Mapping[str, Any]], measurements: Iterable[Mapping[str, Any]], manage_all: bool,
         now: datetime) -> Looked:
    """Each measurement whose `spec.jobRef` names a managed Job of its namespace, judged against that Job."""
    managed = {(j["metadata"]["namespace"], j["metadata"]["name"]): j for j in jobs
               if manage_all or (j["metadata"].get("labels") or {}).get(MANAGED_LABEL) == "true"}
    judged, still = 0, []
    for m in measurements:
        meta = m["metadata"]
        job = managed.get((meta["namespace"], ((m.get("spec") or {}).get("jobRef") or {}).get("name")))
        if job is None:
            continue
        counted, why = judge(job, m, now)
        judged += counted
        if why:
            still.append(Still(m["kind"], meta["namespace"], meta["name"], job["metadata"]["name"], why))
    return Looked(judged, tuple(sorted(still, key=lambda s: (s.namespace, s.name, s.kind))))


def find(gw: Gateway, group: str, namespace: str | None, manage_all: bool, now: datetime) -> Looked:
    """The Jobs and both kinds of measurement of `group`, in `namespace` (None: all), looked at."""
    measurements = [m for res in (cre_goodput(group), bandwidth_measurements(group))
                    for m in gw.list_all(res, namespace)]
    return look(gw.list_all(cre_jobs(group), namespace), measurements, manage_all, now)


def summary(looked: Looked) -> str:
    """The doctor's line: how many still of how many judged, the first few named."""
    named = "; ".join(s.line() for s in looked.still[:NAMED])
    more = len(looked.still) - NAMED
    return (f"{len(looked.still)} of {looked.judged} measurements of managed Jobs no longer move: {named}"
            + (f"; and {more} more" if more > 0 else ""))


def fix(cre_manager: str, functions_produce: bool = False) -> str:
    """What to do about still measurements: who should move them, the functions' `measure` (running in manage
    mode) or CRE's manager (`ns/name, …` when it runs)."""
    if functions_produce:
        return ("the functions' measure writes them: read its log (crefn-measure), and the measured pods' (a workload "
                "that logs nothing leaves its measurement still)")
    if cre_manager:
        return (f"CRE's manager runs ({cre_manager}): read its log, and the measured pods' (a workload that logs "
                "nothing leaves its measurement still)")
    return ("nothing writes them while CRE's manager is stopped: restarts that need checkpoint evidence are refused, "
            "stalls and thresholds go quiet; scale CRE's manager back up, or see "
            "docs/switching.md#what-stops-with-cres-manager")
