"""`status`: `workload.phase` Pending/Running/Succeeded → the Job's conditions (SPEC §5, §6.2).

The event is a cue, never a verdict: whatever phase it says, the phase written is the adapter's
(`functions.rules.adapter`) on the attempt's TrainJob read fresh, so a forged or stale
`workload.phase` (a `Succeeded` for a Job whose workload runs) writes nothing the cluster does not
say. read: the Job fresh; for a managed, non-terminal Job and an event naming its current attempt,
that attempt's TrainJob (`<job>-workload`, its `crefn.dev/attempt` label `restartCount`, controlled
by this Job), and for a Running TrainJob the pods of its attempt (by label) and, for a Job with
`spec.stallMultiplier` whose pods are not blocked, its GoodputMeasurement. decide: on the read, as any
handler decides on a fresh read (`restart` re-reads the TrainJob the same way): the event and the
read may disagree (the event is older than the TrainJob, or made up), and what is written is what the
TrainJob says now — the write that phase calls for when the Job does not show it yet (a stale
`Running` after the workload completed writes `Succeeded`), else 202, its reason saying what the
event said. A TrainJob gone or of another attempt: 202 (its delete reaches `restart` through
`phase`); failed on the read: 202, `restart` decides (the Failed change reaches it the same way).
Then one status write (`functions.rules.status`; a Running workload goes through the running-path
decision, so a scheduling-blocked one is said so and its clocks pause), and `job.condition.changed`
only when the True exclusive type or its reason changes, naming the TrainJob as read. A stalled
workload writes nothing: the answer is `dev.crefn.workload.stalled`, which `restart` decides on a
fresh read.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from events.emitted import WorkloadPhaseData, WorkloadRef, WorkloadStalledData
from events.envelope import Envelope, parse_phase_event, to_outbound
from events.objects import Pod
from events.types import EventType, Phase
from functions.apply import run
from functions.context import Context
from functions.plan import Outcome, Plan, nothing
from functions.reads import read_goodputs, read_job, read_pods, read_trainjob
from functions.rules.adapter import PhaseResult, decide_phase
from functions.rules.attempts import of_attempt, workload_ref_of
from functions.rules.conditions import changes_condition
from functions.rules.jobs import JobState, condition_changed, why_not_current, why_not_ours
from functions.rules.measurements import GoodputMeasurement, goodput_of
from functions.rules.phase import parse_trainjob
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
    workload: WorkloadRef | None = None
    """The attempt's TrainJob as read (None: not read, gone, of another attempt or not this Job's)."""
    result: PhaseResult | None = None
    """The adapter's phase of that TrainJob: what is decided on."""
    pods: tuple[Pod, ...] = ()
    goodput: GoodputMeasurement | None = None


def read(env: Envelope, ctx: Context) -> Observed:
    data = parse_phase_event(env)
    if data.phase is Phase.FAILED:
        return Observed(env, data, None)
    state = read_job(ctx, data.job.namespace, data.job.name)
    if why_not_ours(state, data.job, ctx.settings) or state is None or why_not_current(state, data.workload):
        return Observed(env, data, state)
    raw = read_trainjob(ctx, state.ref.namespace, data.workload.name)
    if raw is None or not of_attempt(raw, state.job.status.restart_count):
        return Observed(env, data, state)
    trainjob = parse_trainjob(raw)
    owner = trainjob.controller_owner()
    if owner is None or owner.uid != state.job.metadata.uid:
        return Observed(env, data, state)
    result = decide_phase(trainjob)
    workload = workload_ref_of(trainjob)
    if result.phase is not Phase.RUNNING:
        return Observed(env, data, state, workload, result)
    pods = read_pods(ctx, state)
    goodput = None
    if state.job.spec.stall_multiplier is not None and blocked_pod(pods) is None:
        goodput = goodput_of(read_goodputs(ctx, state), state.ref.name)
    return Observed(env, data, state, workload, result, pods, goodput)


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    data, state = observed.data, observed.state
    if data.phase is Phase.FAILED:
        return nothing("phase Failed is handled by the restart function")
    if why := why_not_ours(state, data.job, settings):
        return nothing(why)
    assert state is not None
    if why := why_not_current(state, data.workload):
        return nothing(why)
    workload, result = observed.workload, observed.result
    if workload is None or result is None:
        return nothing(f"{state.where}: TrainJob {data.workload.name} of attempt {state.job.status.restart_count} "
                       "is gone on a fresh read")
    said = "" if result.phase is data.phase else f" (the event said {data.phase.value})"
    if result.phase is Phase.FAILED:
        return nothing(f"{state.where}: TrainJob {workload.name} has failed on a fresh read{said}: "
                       "the restart function decides")
    decided = decide_status(state, result.phase, workload.name, result.message, now, settings.cre_group, FUNCTION,
                            observed.pods, observed.goodput)
    if decided is None:
        return nothing(f"{state.where}: nothing changed: TrainJob {workload.name} is {result.phase.value}{said}")
    if isinstance(decided, Stall):
        stalled = WorkloadStalledData(job=state.ref, workload=workload, mode=decided.mode,
                                      elapsed_seconds=decided.elapsed_seconds,
                                      threshold_seconds=decided.threshold_seconds, message=decided.message)
        return Plan(reply=to_outbound(EventType.WORKLOAD_STALLED, FUNCTION, state.ref.namespace, state.ref.name,
                                      stalled, observed.cause))
    write, new = decided
    if new is None or not changes_condition(state.true_condition, new):
        return Plan(write.effects, reason=f"{state.where}: condition kept{said}")
    return Plan(write.effects, reason=said.strip(" ()"),
                reply=condition_changed(state, write.status, new, FUNCTION, observed.cause, workload))


def handle(env: Envelope, ctx: Context) -> Outcome:
    return run(ctx, lambda: read(env, ctx), decide)
