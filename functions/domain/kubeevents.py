"""Kubernetes Events on the Job and on a WorkloadRun (`run_event`), as CRE records them (its ADR-080).

events.k8s.io/v1 Events `regarding` the Job, reason and action the condition reason, note the message
capped at 1024 bytes (UTF-8 safe, suffix `... [truncated]`), type Warning for Failed and Normal
otherwise. The exclusive set records one only when the True exclusive **type** flips (so a Job shows
`WorkloadCreated` or `WorkloadAdopted`, then `WorkloadCompleted` or `WorkloadFailed`); failed actions
(a TrainJob create the API refused: `RefusalWarning`) record a Warning of their own. Each Event follows the status write
it reports in the plan, so it is recorded only once that write succeeded; its name is derived from
the transition (Job uid, type, attempt) or the action (Job uid, attempt, reason, error), so a
redelivered event finds the name taken and records nothing twice. A verdict's Event carries the id of the
event that decided it (`crefn.dev/cause`): what tells a redelivery of that event from another
(`functions.domain.redelivery`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from events.emitted import ConditionSummary
from functions.domain.jobs import JobState
from functions.runtime.effects import Effect, KubeEvent, Wait
from functions.runtime.errors import one_line

NOTE_LIMIT = 1024
TRUNCATED = "... [truncated]"
REPORTING_CONTROLLER = "crefn.dev/controller"
CAUSE_ANNOTATION = "crefn.dev/cause"


def cap_note(message: str) -> str:
    """The message within 1024 bytes of UTF-8, cut on a character boundary, marked when cut."""
    data = message.encode()
    if len(data) <= NOTE_LIMIT:
        return message
    keep = data[:NOTE_LIMIT - len(TRUNCATED)].decode(errors="ignore")
    return keep + TRUNCATED


def digest_name(name: str, uid: str, *key: str) -> str:
    """An Event's name: the object's name and a digest of its uid and the transition or action `key`."""
    return f"{name[:200]}.{hashlib.sha256('/'.join((uid, *key)).encode()).hexdigest()[:16]}"


def event_name(state: JobState, *key: str) -> str:
    return digest_name(state.job.metadata.name, state.job.metadata.uid, *key)


def event_about(regarding: Mapping[str, str], name: str, reason: str, message: str, warning: bool, now: datetime,
                function: str, cause: str = "") -> KubeEvent:
    """The Event `name` regarding an object (`apiVersion`, `kind`, `name`, `namespace`, `uid`)."""
    metadata: dict[str, object] = {"name": name, "namespace": regarding["namespace"]}
    if cause:
        metadata["annotations"] = {CAUSE_ANNOTATION: cause}
    body = {
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": metadata,
        "eventTime": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "reportingController": REPORTING_CONTROLLER, "reportingInstance": f"crefn-{function}",
        "action": reason, "reason": reason, "note": cap_note(message), "type": "Warning" if warning else "Normal",
        "regarding": dict(regarding),
    }
    return KubeEvent(regarding["namespace"], body)


def job_event(state: JobState, name: str, reason: str, message: str, warning: bool, now: datetime,
              function: str, cause: str = "") -> KubeEvent:
    meta = state.job.metadata
    regarding = {"apiVersion": state.job.api_version, "kind": state.job.kind, "name": meta.name,
                 "namespace": meta.namespace, "uid": meta.uid}
    return event_about(regarding, name, reason, message, warning, now, function, cause)


def run_event(run: Mapping[str, Any], new: ConditionSummary, now: datetime, function: str) -> KubeEvent:
    """The Event of a WorkloadRun's flip to `new`'s type, as CRE's WorkloadRun controller records one on every
    transition (Warning for `Failed`, reason and note the condition's); named for the run's uid and the type, so
    that a redelivery records nothing twice."""
    meta = run["metadata"]
    uid = str(meta.get("uid", ""))
    regarding = {"apiVersion": str(run.get("apiVersion", "")), "kind": "WorkloadRun", "name": meta["name"],
                 "namespace": meta["namespace"], "uid": uid}
    return event_about(regarding, digest_name(meta["name"], uid, new.type), new.reason, new.message,
                       new.type == "Failed", now, function)


def transition_name(state: JobState, new: ConditionSummary) -> str:
    """The name of the Event of the flip to `new`'s type in the Job's current attempt."""
    return event_name(state, new.type, str(state.job.status.restart_count))


def condition_name(state: JobState, cond_type: str, reason: str) -> str:
    """The name of the Event of an independent condition's write (`HardwareFailed`, `ValidationFailed`) in the
    Job's current attempt."""
    return event_name(state, cond_type, reason, str(state.job.status.restart_count))


def condition_names(state: JobState, cond_type: str, reason: str) -> tuple[str, ...]:
    """`condition_name` in the Job's current attempt, then in each earlier one: a condition stays True across a
    restart, its Event named for the attempt in which it became True."""
    return tuple(event_name(state, cond_type, reason, str(n)) for n in range(state.job.status.restart_count, -1, -1))


def transition_event(state: JobState, new: ConditionSummary, now: datetime, function: str,
                     cause: str = "") -> KubeEvent | None:
    """The Event of a write that makes `new` the True exclusive condition, when its type flips; `cause`: the
    id of the event that decided it."""
    old = state.true_condition
    if old is not None and old.type == new.type:
        return None
    return job_event(state, transition_name(state, new), new.reason, new.message, new.type == "Failed", now,
                     function, cause)


def action_event(state: JobState, reason: str, message: str, now: datetime, function: str) -> KubeEvent:
    """A Warning for an action that failed (recorded once per attempt and distinct message)."""
    name = event_name(state, reason, str(state.job.status.restart_count), message)
    return job_event(state, name, reason, message, True, now, function)


@dataclass(frozen=True)
class RefusalWarning:
    """A create the API refused for good, recorded as a Warning Event `reason` on the Job whose note is
    `message` followed by the API's error; then a wait with that note, so that the create is retried
    (`retried`), or the effects `then` (the rest of the plan that does not depend on the create)."""

    state: JobState
    reason: str
    message: str
    now: datetime
    function: str
    retried: bool = False
    then: tuple[Effect, ...] = ()
    recorded: bool = True
    """False: the refusal is only logged (the answer's reason), no Event, as CRE only logs some."""

    def follow(self, error: str) -> tuple[Effect, ...]:
        if not self.recorded:
            return self.then
        warning = action_event(self.state, self.reason, f"{self.message}{error}", self.now, self.function)
        return (warning, Wait(f"{self.message}{one_line(error)} (retried)")) if self.retried \
            else (warning, *self.then)
