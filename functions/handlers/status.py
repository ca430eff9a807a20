"""`status`: `workload.phase` Pending/Running/Succeeded → the Job's conditions (SPEC §5, §6.2).

read: the Job fresh, and for a Running phase the pods of its attempt (by label) and, for a Job with
`spec.stallMultiplier` whose pods are not blocked, its GoodputMeasurement (one LIST). decide: only for
a managed, non-terminal Job and its current attempt (older attempts are stale: 202), one status write
(`functions.rules.status`; a Running workload goes through the running-path decision, so a
scheduling-blocked one is said so and its clocks pause), and `job.condition.changed` only when the
True exclusive type or its reason changes. A stalled workload writes nothing: the answer is
`dev.crefn.workload.stalled`, which `restart` decides on a fresh read.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from events.emitted import WorkloadPhaseData, WorkloadStalledData
from events.envelope import Envelope, parse_phase_event, to_outbound
from events.objects import Pod
from events.types import EventType, Phase
from functions.apply import run
from functions.context import Context
from functions.plan import Outcome, Plan, nothing
from functions.reads import read_goodputs, read_job, read_pods
from functions.rules.conditions import changes_condition
from functions.rules.jobs import JobState, condition_changed, why_not_current, why_not_ours
from functions.rules.measurements import GoodputMeasurement, goodput_of
from functions.rules.pods import blocked_pod
from functions.rules.stall import Stall
from functions.rules.status import decide_status
from functions.settings import Settings

FUNCTION = "status"
ACCEPTS = frozenset({EventType.WORKLOAD_PHASE.value})


@dataclass(frozen=True)
class Observed:
    cause: Envelope
    data: WorkloadPhaseData
    state: JobState | None
    pods: tuple[Pod, ...] = ()
    goodput: GoodputMeasurement | None = None


def read(env: Envelope, ctx: Context) -> Observed:
    data = parse_phase_event(env)
    if data.phase is Phase.FAILED:
        return Observed(env, data, None)
    state = read_job(ctx, data.job.namespace, data.job.name)
    if state is None or data.phase is not Phase.RUNNING or state.terminal:
        return Observed(env, data, state)
    pods = read_pods(ctx, state)
    goodput = None
    if state.job.spec.stall_multiplier is not None and blocked_pod(pods) is None:
        goodput = goodput_of(read_goodputs(ctx, state), state.ref.name)
    return Observed(env, data, state, pods, goodput)


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    data, state = observed.data, observed.state
    if data.phase is Phase.FAILED:
        return nothing("phase Failed is handled by the restart function")
    if why := why_not_ours(state, data.job, settings):
        return nothing(why)
    assert state is not None
    if why := why_not_current(state, data.workload):
        return nothing(why)
    decided = decide_status(state, data.phase, data.workload.name, data.message, now, settings.cre_group, FUNCTION,
                            observed.pods, observed.goodput)
    if decided is None:
        return nothing(f"{state.where}: nothing changed")
    if isinstance(decided, Stall):
        stalled = WorkloadStalledData(job=state.ref, workload=data.workload, mode=decided.mode,
                                      elapsed_seconds=decided.elapsed_seconds,
                                      threshold_seconds=decided.threshold_seconds, message=decided.message)
        return Plan(reply=to_outbound(EventType.WORKLOAD_STALLED, FUNCTION, state.ref.namespace, state.ref.name,
                                      stalled, observed.cause))
    write, new = decided
    if new is None or not changes_condition(state.true_condition, new):
        return Plan(write.effects, reason=f"{state.where}: condition kept")
    return Plan(write.effects, reply=condition_changed(state, write.status, new, FUNCTION, observed.cause,
                                                       data.workload))


def handle(env: Envelope, ctx: Context) -> Outcome:
    return run(ctx, lambda: read(env, ctx), decide)
