"""`status`: `workload.phase` Pending/Running/Succeeded → the Job's conditions (SPEC §5, §6.2).

The event is a cue, never a verdict (a forged or stale `workload.phase` writes nothing the cluster does
not say). read: nothing for a Failed phase, or the creation of a Running TrainJob (its creator decided its
first phase, `wants.first_phase_decided`); else the Job fresh; for a managed, non-terminal Job and an
event naming its current attempt, that attempt's TrainJob (`<job>-workload`, its `crefn.dev/attempt`
label `restartCount`, controlled by this Job) and the adapter's phase of it (`functions.domain.adapter`),
and for a Running TrainJob the pods of its attempt (by label) and, for a Job with `spec.stallMultiplier`
whose pods are not blocked, its GoodputMeasurement. decide: `functions.status.decide.decide` (a TrainJob failed on the
read is `restart`'s, whose event reaches it through `phase`; a stalled workload is answered
`dev.crefn.workload.stalled`, which `restart` decides on a fresh read).
"""

from __future__ import annotations

from events.emitted import WorkloadPhaseData
from events.envelope import Envelope, parse_phase_event
from events.types import EventType, Phase
from functions.domain.adapter import decide_phase
from functions.domain.attempts import of_attempt, workload_ref_of
from functions.domain.jobs import Gone, JobState, why_not_current, why_not_ours
from functions.domain.measurement_objects import goodput_of
from functions.domain.phases import parse_trainjob
from functions.domain.pods import blocked_pod
from functions.domain.redelivery import Announced
from functions.runtime.apply import run
from functions.runtime.context import Context
from functions.runtime.plan import Outcome
from functions.runtime.reads import read_event, read_goodputs, read_job, read_pods, read_trainjob
from functions.status import wants
from functions.status.decide import Found, Observed, Read, Unread, decide

ACCEPTS = frozenset({EventType.WORKLOAD_PHASE.value})


def read(env: Envelope, ctx: Context) -> Observed:
    data = parse_phase_event(env)
    if data.phase is Phase.FAILED or wants.first_phase_decided(data):
        return Unread(env, data)
    state = read_job(ctx, data.job.namespace, data.job.name)
    if state is None:
        return Gone(data.job)
    if why_not_ours(state, data.job, ctx.settings):
        return Found(env, data, state)
    if name := not ctx.settings.observe and wants.restate_wanted(state, data, ctx.clock()):
        return Found(env, data, state, Announced(read_event(ctx, state.ref.namespace, name)))
    if why_not_current(state, data.workload):
        return Found(env, data, state)
    return read_attempt(env, data, state, ctx)


def read_attempt(env: Envelope, data: WorkloadPhaseData, state: JobState, ctx: Context) -> Observed:
    """The current attempt's TrainJob (not acted on when gone, of another attempt or not this Job's), the
    adapter's phase of it, and for a Running one the attempt's pods and, with stall detection, the Job's
    GoodputMeasurement."""
    raw = read_trainjob(ctx, state.ref.namespace, data.workload.name)
    if raw is None or not of_attempt(raw, state.job.status.restart_count):
        return Found(env, data, state)
    trainjob = parse_trainjob(raw)
    owner = trainjob.controller_owner()
    if owner is None or owner.uid != state.job.metadata.uid:
        return Found(env, data, state)
    result = decide_phase(trainjob)
    workload = workload_ref_of(trainjob)
    if result.phase is not Phase.RUNNING:
        return Read(env, data, state, workload, result)
    pods = read_pods(ctx, state)
    goodput = None
    if state.job.spec.stall_multiplier is not None and blocked_pod(pods) is None:
        goodput = goodput_of(read_goodputs(ctx, state), state.ref.name)
    return Read(env, data, state, workload, result, pods, goodput)


def handle(env: Envelope, ctx: Context) -> Outcome:
    return run(ctx, lambda: read(env, ctx), decide)
