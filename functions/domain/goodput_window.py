"""Where a GoodputMeasurement's next window of the log starts, and which pods it is read from. Pure.

The pods: the workload's (JobSet's `jobset-name`), of the Job's current attempt (`crefn.dev/attempt`; CRE's own
pods carry none), ordered by `batch.kubernetes.io/job-completion-index` (a missing or bad one counts as 0);
worker-0 is the first. The read position, stateless: CRE keeps the kubelet time of the last line it read in
memory; here it is the measurement's last sample (`applicationStopTime`, the wall clock of a sample that read a
line) less one sample interval, else worker-0's start; a terminal Job's from its `lastStepTimestamp` less one
interval (CRE's own final read); at most 30 minutes back (CRE's `maxLogLookback`). The windows overlap: steps,
checkpoint saves and non-warmup time are counted past their watermarks, so nothing is counted twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from functions.domain.goodput_state import when
from functions.domain.gotime import NS
from functions.domain.stall import interval_of

LOOKBACK = 30 * 60 * NS
INDEX = "batch.kubernetes.io/job-completion-index"
ATTEMPT = "crefn.dev/attempt"


def interval_ns(measurement: Mapping[str, Any]) -> int:
    """The measurement's `spec.sampleInterval` in nanoseconds (60 s when unset or unreadable)."""
    return int(interval_of(str((measurement.get("spec") or {}).get("sampleInterval") or "")).total_seconds() * NS)


def labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def label_number(pod: Mapping[str, Any], key: str) -> int:
    """A pod's numeric label (a missing or bad one counts as 0)."""
    text = labels(pod).get(key, "")
    return int(text) if text.isascii() and text.isdigit() else 0


def ordered(pods: Iterable[dict[str, Any]], attempt: int) -> list[dict[str, Any]]:
    """The pods of the attempt by completion index."""
    pods = list(pods)
    chosen = [p for p in pods if labels(p).get(ATTEMPT) == str(attempt)] or \
        [p for p in pods if ATTEMPT not in labels(p)]
    return sorted(chosen, key=lambda pod: label_number(pod, INDEX))


def read_from(measurement: Mapping[str, Any], worker0: Mapping[str, Any] | None, verdict: str, anchor: int | None,
              now: int) -> int:
    """Where the window starts (ns)."""
    status = measurement.get("status") or {}
    started = when((worker0 or {}).get("status", {}).get("startTime")) or 0
    mark = status.get("applicationStopTime") if verdict == "InProgress" else status.get("lastStepTimestamp")
    since = max(started, (when(mark) or 0) - interval_ns(measurement))
    return max(since, (anchor or now) - LOOKBACK)


def verdict_of(conditions: Sequence[Mapping[str, Any]]) -> tuple[str, int | None]:
    """The Job's True exclusive condition (Failed, then Succeeded, then InProgress; "" for none) and, for a
    terminal Job, the anchor of its freeze: when its `Succeeded` (checked first) or `Failed` became True."""
    true = {c.get("type"): c for c in conditions if c.get("status") == "True"}
    verdict = next((t for t in ("Failed", "Succeeded", "InProgress") if t in true), "")
    anchor = next((when(true[t].get("lastTransitionTime")) for t in ("Succeeded", "Failed") if t in true), None)
    return verdict, anchor


def terminated_at(pod: Mapping[str, Any], container: str) -> int | None:
    """When the profile's container of worker-0 terminated: its state, else its last state (none without a name)."""
    for status in (pod.get("status") or {}).get("containerStatuses") or ():
        if container and status.get("name") == container:
            for key in ("state", "lastState"):
                if ended := when(((status.get(key) or {}).get("terminated") or {}).get("finishedAt")):
                    return ended
    return None


PHASE_RANK: dict[str | None, int] = {"Succeeded": 0, "Running": 1, "Failed": 2}
REPLICATED_JOB = "jobset.sigs.k8s.io/replicatedjob-name"
RESTART_ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"


def replicated_pod(pods: Iterable[dict[str, Any]], replicated_job: str) -> dict[str, Any] | None:
    """The pod a BandwidthMeasurement reads (CRE's `GetReplicatedJobPod`): of the replicatedJob, the lowest
    completion index, then Succeeded before Running before Failed before the rest, the latest restart attempt, the
    newest, by name."""
    def key(pod: Mapping[str, Any]) -> tuple[int, int, int, int, str]:
        created = when(pod["metadata"].get("creationTimestamp")) or 0
        return (label_number(pod, INDEX), PHASE_RANK.get((pod.get("status") or {}).get("phase"), len(PHASE_RANK)),
                -label_number(pod, RESTART_ATTEMPT), -created, pod["metadata"]["name"])

    chosen = sorted((p for p in pods if labels(p).get(REPLICATED_JOB) == replicated_job), key=key)
    return chosen[0] if chosen else None
