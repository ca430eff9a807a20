"""`status`: `workload.phase` Pending/Running/Succeeded → the Job's conditions (SPEC §5, §6.2).

The event is a cue, never a verdict (a forged or stale `workload.phase` writes nothing the cluster does
not say). read: nothing for a Failed phase, or the creation of a Running TrainJob (its creator decided its
first phase, `rules.first_phase_decided`); else the Job fresh; for a managed, non-terminal Job and an
event naming its current attempt, that attempt's TrainJob (`<job>-workload`, its `crefn.dev/attempt`
label `restartCount`, controlled by this Job) and the adapter's phase of it (`functions.rules.adapter`),
and for a Running TrainJob the pods of its attempt (by label) and, for a Job with `spec.stallMultiplier`
whose pods are not blocked, its GoodputMeasurement. decide: `functions.rules.status.decide` (a TrainJob failed on the
read is `restart`'s, whose event reaches it through `phase`; a stalled workload is answered
`dev.crefn.workload.stalled`, which `restart` decides on a fresh read).
"""

from __future__ import annotations

from events.envelope import Envelope, parse_phase_event
from events.types import EventType, Phase
from functions.apply import run
from functions.context import Context
from functions.plan import Outcome
from functions.reads import read_event, read_goodputs, read_job, read_pods, read_trainjob
from functions.rules import status as rules
from functions.rules.adapter import decide_phase
from functions.rules.attempts import of_attempt, workload_ref_of
from functions.rules.jobs import Gone, why_not_current, why_not_ours
from functions.rules.measurements import goodput_of
from functions.rules.phase import parse_trainjob
from functions.rules.pods import blocked_pod
from functions.rules.redelivery import Announced
from functions.rules.status import Found, Observed, Read, Unread, decide

FUNCTION = rules.FUNCTION
ACCEPTS = frozenset({EventType.WORKLOAD_PHASE.value})


def read(env: Envelope, ctx: Context) -> Observed:
    data = parse_phase_event(env)
    if data.phase is Phase.FAILED or rules.first_phase_decided(data):
        return Unread(env, data)
    state = read_job(ctx, data.job.namespace, data.job.name)
    if state is None:
        return Gone(data.job)
    if why_not_ours(state, data.job, ctx.settings):
        return Found(env, data, state)
    if name := not ctx.settings.observe and rules.restate_wanted(state, data, ctx.clock()):
        return Found(env, data, state, Announced(read_event(ctx, state.ref.namespace, name)))
    if why_not_current(state, data.workload):
        return Found(env, data, state)
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
