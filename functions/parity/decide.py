"""Shadow verdicts (`parity`): a verdict CRE wrote on a Job, against the one the functions would write from the
same cluster state, field by field. Pure.

What is compared, by CRE's True exclusive condition: a restart (`InProgress`/`WorkloadRestarting`) and a failure
(`Failed`/`WorkloadFailed`) against `functions.domain.checkpoint.decide_restart` on the restart count before the
verdict; `WorkloadPending`, `WorkloadRunning`, `WorkloadSchedulingBlocked` and `WorkloadCompleted` against the
phase `functions.domain.adapter` reads off the Job's TrainJob and, for a Running one, `functions.domain.running`.
Other verdicts are not compared (`Unchecked`). A difference is a divergence once it has held, nothing changed, for
the settle window; before, it is timing (answered for a retry): CRE may not have acted yet. The rule:
docs/switching.md#how-a-verdict-is-compared
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from events.emitted import FailureLog, ParityCheckedData, ParityField
from events.envelope import Envelope, to_outbound
from events.objects import Pod, TrainJob
from events.types import EventType, Phase, Reason
from functions.domain.adapter import decide_phase
from functions.domain.checkpoint import decide_restart
from functions.domain.condition_writes import group_nodes, placed_nodes
from functions.domain.conditions import parse_rfc3339, rfc3339
from functions.domain.jobs import Gone, JobState, Skipped, why_not_ours
from functions.domain.kubeevents import action_event
from functions.domain.pods import failed_container, failure_log, of_attempt
from functions.domain.running import decide_running
from functions.runtime.effects import wait_until
from functions.runtime.plan import Plan, nothing
from functions.runtime.settings import Settings

FUNCTION = "parity"
FIELDS = ("phase", "restartCount", "failedNodes", "failureLog", "workloadStartTime", "schedulingBlocked")
"""The verdict fields compared, in the order a table shows them."""
RESTARTING = f"InProgress/{Reason.WORKLOAD_RESTARTING.value}"
FAILED = f"Failed/{Reason.WORKLOAD_FAILED.value}"
PHASES = {Phase.PENDING: f"InProgress/{Reason.WORKLOAD_PENDING.value}",
          Phase.SUCCEEDED: f"Succeeded/{Reason.WORKLOAD_COMPLETED.value}"}
ON_THE_PHASE = frozenset({*PHASES.values(), f"InProgress/{Reason.WORKLOAD_RUNNING.value}",
                          f"InProgress/{Reason.WORKLOAD_SCHEDULING_BLOCKED.value}"})
DIFFER_REASON = "VerdictsDiffer"


@dataclass(frozen=True)
class Read:
    """The Job as CRE left it, read fresh, with what its verdict is decided on: the TrainJob its `workloadRef`
    (else `<job>-workload`) names when this Job controls it, the pods labelled with the Job, and the checkpoint
    evidence when it could change a restart decision (None: not read)."""

    cause: Envelope
    state: JobState
    trainjob: Mapping[str, Any] | None
    pods: tuple[Pod, ...] = ()
    evidence: bool | None = None
    first_seen: datetime | None = None
    """When this process first saw the same difference on the same inputs (`difference_key`); None: now."""


Observed = Read | Gone | Skipped


def verdict_of(state: JobState) -> str:
    """CRE's verdict: the True exclusive condition as `Type/Reason` ("" when none is True)."""
    true = state.true_condition
    return f"{true.type}/{true.reason}" if true is not None else ""


def described(log: FailureLog) -> str:
    """A failure log as compared: its reason, pod and exit code."""
    return f"{log.reason} {log.pod_name} exit {log.exit_code}".strip()


def stored(state: JobState) -> dict[str, str]:
    """The compared fields as the Job says them."""
    status = state.job.status
    log = status.failure_log
    return {
        "phase": verdict_of(state),
        "restartCount": str(status.restart_count),
        "failedNodes": " ".join(sorted({n.name for n in status.failed_nodes})),
        "failureLog": described(log) if log else "",
        "workloadStartTime": "set" if status.workload_start_time else "unset",
        "schedulingBlocked": "set" if status.scheduling_blocked_since else "unset",
    }


def attempt_pods(observed: Read) -> tuple[Pod, ...]:
    """The pods of the Job's current attempt (CRE's own carry no attempt label: `of_attempt`)."""
    return of_attempt(observed.pods, observed.state.job.status.restart_count)


def workload_phase(observed: Read) -> tuple[Phase, str] | None:
    """The adapter's phase of the Job's TrainJob and its name; None when the Job has no TrainJob of its own (for
    a failure verdict, the functions take it as deleted: failed)."""
    if observed.trainjob is None:
        return None
    trainjob = TrainJob.model_validate(observed.trainjob)
    return decide_phase(trainjob).phase, trainjob.metadata.name


def on_failure(state: JobState, evidence: bool | None, settings: Settings, pods: Sequence[Pod]) -> dict[str, str]:
    """What the functions write when the Job's current attempt has failed: a restart, else the failure with its
    nodes (the group-nodes annotation's, else where the pods ran) and its failed container."""
    count = state.job.status.restart_count
    if decide_restart(state, evidence, settings.require_checkpoint_evidence).restart:
        return {"phase": RESTARTING, "restartCount": str(count + 1), "failedNodes": "", "failureLog": ""}
    shadow = {"phase": FAILED, "restartCount": str(count)}
    if pods:  # the inputs of the attribution are there: compared (a Job whose pods are gone is not)
        log = failure_log(pods, failed_container(pods), "")  # none failed: CRE's NoTerminatedContainer
        shadow["failedNodes"] = " ".join(group_nodes(state, settings.cre_group) or placed_nodes(pods))
        shadow["failureLog"] = described(log)
    return shadow


def on_phase(observed: Read, phase: Phase, name: str, settings: Settings, now: datetime) -> dict[str, str]:
    """What the functions write for the TrainJob's phase (`status`; a failed one: `restart`)."""
    state = observed.state
    if phase is Phase.FAILED:
        return on_failure(state, observed.evidence, settings, attempt_pods(observed))
    if phase is not Phase.RUNNING:
        return {"phase": PHASES[phase]}
    running = decide_running(state, attempt_pods(observed), name, now)
    condition = running.condition or state.true_condition
    blocked = running.fields.get("schedulingBlockedSince", state.job.status.scheduling_blocked_since)
    started = running.fields.get("workloadStartTime", state.job.status.workload_start_time)
    return {"phase": f"{condition.type}/{condition.reason}" if condition else "",
            "workloadStartTime": "set" if started else "unset", "schedulingBlocked": "set" if blocked else "unset"}


@dataclass(frozen=True)
class Shadow:
    """The functions' values of the compared fields (only those the verdict decides)."""

    values: dict[str, str]


@dataclass(frozen=True)
class Unchecked:
    why: str


def shadow(observed: Read, settings: Settings, now: datetime) -> Shadow | Unchecked:
    """The functions' verdict on the state CRE decided on."""
    state, verdict = observed.state, verdict_of(observed.state)
    count = state.job.status.restart_count
    if verdict == RESTARTING and count >= 1:  # decided on the count before it: CRE reset the evidence with it
        before = replace(state, job=state.job.model_copy(update={
            "status": state.job.status.model_copy(update={"restart_count": count - 1})}))
        values = on_failure(before, True, settings, ())
        return Shadow({f: values[f] for f in ("phase", "restartCount")})
    found = workload_phase(observed)
    if verdict == FAILED:
        if found is None or found[0] is Phase.FAILED:
            return Shadow(on_failure(state, observed.evidence, settings, attempt_pods(observed)))
        return Shadow(on_phase(observed, *found, settings, now))
    if verdict not in ON_THE_PHASE:
        return Unchecked(f"the verdict {verdict or '(none)'} is not one the functions compare")
    if found is None:
        return Unchecked(f"{state.where} has no TrainJob of its own to compare {verdict} on")
    return Shadow(on_phase(observed, *found, settings, now))


def difference_key(observed: Read, settings: Settings, now: datetime) -> str:
    """The identity of a difference ("" when the verdicts agree or are not compared): the Job's and its inputs'
    resourceVersions with both verdicts. The same key later means nothing changed meanwhile: not the Job (CRE
    did not write), not its TrainJob or pods, nor the functions' verdict (a grace that ran out changes it)."""
    found = shadow(observed, settings, now)
    if isinstance(found, Unchecked) or not any(f.result == "differ" for f in compare(observed, found.values)):
        return ""
    pods = sorted(p.metadata.resource_version for p in observed.pods)
    body = json.dumps([observed.state.job.metadata.uid, input_versions(observed), pods, found.values], sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def check_id(observed: Read, values: Mapping[str, str]) -> str:
    """The identity of a check: the Job, CRE's values and the functions' (a redelivery, or CRE writing a field
    not compared, checks nothing new)."""
    body = json.dumps([observed.state.job.metadata.uid, values, stored(observed.state)], sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def compare(observed: Read, values: Mapping[str, str]) -> tuple[ParityField, ...]:
    cre = stored(observed.state)
    return tuple(ParityField(field=f, result="agree" if cre[f] == values[f] else "differ", cre=cre[f],
                             functions=values[f]) for f in FIELDS if f in values)


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    if isinstance(observed, Gone | Skipped):
        return nothing(observed.why)
    state = observed.state
    if why := why_not_ours(state, state.ref, settings):
        return nothing(why)
    found = shadow(observed, settings, now)
    if isinstance(found, Unchecked):
        return nothing(f"{state.where}: {found.why}")
    fields = compare(observed, found.values)
    differ = [f for f in fields if f.result == "differ"]
    since = observed.first_seen or now
    if differ and now - since < timedelta(seconds=settings.parity_settle_seconds):
        return Plan((wait_until(f"{state.where}: {', '.join(f.field for f in differ)} differ since "
                                f"{rfc3339(since)}, nothing changed since: CRE may not have acted yet",
                                since + timedelta(seconds=settings.parity_settle_seconds), now),))
    data = ParityCheckedData(job=state.ref, check=check_id(observed, found.values), verdict=verdict_of(state),
                             result="differ" if differ else "agree", fields=list(fields),
                             inputs=input_versions(observed), observed_at=now)
    reply = to_outbound(EventType.PARITY_CHECKED, FUNCTION, state.ref.namespace, state.ref.name, data,
                        observed.cause, parityresult=data.result)
    if not differ:
        return Plan(reply=reply)
    note = "; ".join(f"{f.field}: CRE {f.cre or '(none)'}, functions {f.functions or '(none)'}" for f in differ)
    event = action_event(state, DIFFER_REASON, f"CRE's verdict {data.verdict} differs from the functions': {note}",
                         now, FUNCTION)
    return Plan((replace(event, observing=True),), reply=reply)


def recheck_due(raw: Mapping[str, Any], now: datetime, settings: Settings) -> bool:
    """Whether the tick checks the Job again: it is not terminal, or it became so (its terminal condition's
    `lastTransitionTime`) at most the settle window and `parity_recheck_seconds` ago: a check whose event was
    lost, or which was still settling, is made then."""
    state = [c for c in (raw.get("status") or {}).get("conditions") or []
             if c.get("type") in ("Succeeded", "Failed") and c.get("status") == "True"]
    if not state:
        return True
    flipped = parse_rfc3339(str(state[0].get("lastTransitionTime") or ""))
    window = timedelta(seconds=settings.parity_settle_seconds + settings.parity_recheck_seconds)
    return flipped is not None and now - flipped <= window


def input_versions(observed: Read) -> dict[str, str]:
    """The resourceVersions the check was decided on, by kind."""
    versions = {"Job": str(observed.state.job.metadata.resource_version)}
    if observed.trainjob is not None:
        versions["TrainJob"] = str((observed.trainjob.get("metadata") or {}).get("resourceVersion", ""))
    return versions
