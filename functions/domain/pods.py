"""A workload's pods as CRE reads them (its ADR-083 scheduling check and failure log). Pure.

The pods of a Job's attempt carry `<cre group>/job`, `crefn.dev/managed` and `crefn.dev/attempt`
(`functions.launch.decide` adds them to every replicatedJob through the TrainJob's runtime patch).
- Blocked: a pod with no node and `PodScheduled=False` with reason `Unschedulable`; CRE's message
  `Workload pods are unschedulable`, with `: <the scheduler's message>` when there is one.
- The failure log's container: the first that terminated with a non-zero exit code, unless a later one
  was `OOMKilled`; `PodNotFound` / `NoTerminatedContainer` otherwise.
- The timeout log's pod: the trainer step's, container `node`; reason `Timeout`, exit code 0.
The log tail is the last 800 lines, of which the last 32 KiB are kept.
Which pods and containers exactly: docs/functions.md#pods-blocked-and-failure-logs
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from events.emitted import FailureInfo, FailureLog
from events.objects import Condition, Pod
from events.types import ATTEMPT_LABEL
from functions.domain.jobs import JobState

TAIL_LINES = 800
TAIL_BYTES = 32 * 1024
TRAINER_STEP_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
UNSCHEDULABLE = "Workload pods are unschedulable"
POD_NOT_FOUND = ("PodNotFound", "no pods for this Job were found when the failure was recorded; the pod was "
                 "most likely deleted before its logs could be read")
NO_TERMINATED = ("NoTerminatedContainer", "pods for this Job were found, but none had a container terminated "
                 "with a non-zero exit code")


def of_attempt(pods: Sequence[Pod], attempt: int) -> tuple[Pod, ...]:
    """Of a Job's pods (`<group>/job`), those of the attempt: the ones with its `crefn.dev/attempt` label, or
    when none has it, the ones with no attempt label at all: the pods of a TrainJob CRE created (the Job's
    attempt before the switch, or one the functions adopted), which keep CRE's labels."""
    count = str(attempt)
    return (tuple(p for p in pods if p.metadata.labels.get(ATTEMPT_LABEL) == count)
            or tuple(p for p in pods if ATTEMPT_LABEL not in p.metadata.labels))


def scheduled_condition(pod: Pod) -> Condition | None:
    return next((c for c in pod.status.conditions if c.type == "PodScheduled"), None)


def blocked_pods(pods: Sequence[Pod]) -> list[Pod]:
    """The pods the scheduler could not place, in the order listed."""
    return [pod for pod in pods if not pod.spec.node_name and (cond := scheduled_condition(pod)) is not None
            and cond.status == "False" and cond.reason == "Unschedulable"]


def blocked_pod(pods: Sequence[Pod]) -> Pod | None:
    """The first pod the scheduler could not place, or None."""
    return next(iter(blocked_pods(pods)), None)


def unschedulable_message(blocked: Sequence[Pod]) -> str:
    """CRE's text: `Workload pods are unschedulable`, then `: ` and the scheduler's message when one of
    the blocked pods' PodScheduled conditions has one (the first such, in pod order)."""
    why = next((cond.message for pod in blocked if (cond := scheduled_condition(pod)) is not None and cond.message),
               "")
    return f"{UNSCHEDULABLE}: {why}" if why else UNSCHEDULABLE


@dataclass(frozen=True)
class LogSource:
    """The container whose log a failure log records, and what is known of it."""

    pod: str
    node: str
    container: str
    exit_code: int
    reason: str


def failed_container(pods: Sequence[Pod]) -> LogSource | None:
    """The container that failed the workload (first non-zero exit; a later OOMKilled wins)."""
    found: LogSource | None = None
    for pod in pods:
        for status in pod.status.container_statuses:
            ended = status.state.terminated
            if ended is None or ended.exit_code == 0:
                continue
            source = LogSource(pod.metadata.name, pod.spec.node_name, status.name, ended.exit_code, ended.reason)
            if found is None or ended.reason == "OOMKilled":
                found = source
    return found


def timeout_container(pods: Sequence[Pod]) -> LogSource | None:
    """The container a timeout's log is read from, or None when no pod ever ran."""
    eligible = [p for p in pods if p.status.phase in ("Running", "Succeeded", "Failed")]
    if not eligible:
        return None
    pod = next((p for p in eligible if p.metadata.labels.get(TRAINER_STEP_LABEL) == "trainer"), eligible[0])
    names = [s.name for s in pod.status.container_statuses]
    container = "node" if "node" in names or not names else names[0]
    return LogSource(pod.metadata.name, pod.spec.node_name, container, 0, "Timeout")


def failure_log(pods: Sequence[Pod], source: LogSource | None, tail: str) -> FailureLog:
    """The failure log of a Failed verdict: the source container and its log tail, or why there is none."""
    if source is None:
        reason, text = NO_TERMINATED if pods else POD_NOT_FOUND
        return FailureLog(pod_name="", node_name="", exit_code=0, reason=reason, tail=text)
    return FailureLog(pod_name=source.pod, node_name=source.node, exit_code=source.exit_code, reason=source.reason,
                      tail=tail)


@dataclass(frozen=True)
class Capture:
    """What a Failed verdict records of the attempt's pods: the pods, the chosen container, its log tail."""

    pods: tuple[Pod, ...]
    source: LogSource | None
    tail: str = ""


def failure_log_field(state: JobState, capture: Capture | None, timeout: bool = False) -> dict[str, Any]:
    """`failureLog` for a Failed write, while the Job has none (the first failure is kept); a timeout
    with no pod that ever ran leaves it unset."""
    if capture is None or state.job.status.failure_log is not None or (timeout and capture.source is None):
        return {}
    log = failure_log(capture.pods, capture.source, capture.tail)
    return {"failureLog": log.model_dump(by_alias=True)}


def failure_info(capture: Capture | None) -> FailureInfo | None:
    """What a failure log would record, without its tail (what events and alerts carry)."""
    if capture is None:
        return None
    log = failure_log(capture.pods, capture.source, "")
    return FailureInfo(pod_name=log.pod_name, node_name=log.node_name, exit_code=log.exit_code, reason=log.reason)


DEFAULT_SCHEDULING_GRACE = timedelta(seconds=300)


def scheduling_grace(state: JobState) -> timedelta:
    seconds = state.job.spec.scheduling_stall_grace_seconds
    return timedelta(seconds=seconds) if seconds else DEFAULT_SCHEDULING_GRACE
