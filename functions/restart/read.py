"""`restart`: `workload.phase` Failed or `workload.stalled` → checkpoint restart, or the Job fails
(SPEC §5, §6.3; CRE's stall detection).

read: the Job and the attempt's TrainJob fresh (an event may be stale, duplicated or forged: a TrainJob
not the Job's own is not acted on, `wants.why_not_its_workload`; one that has not failed on a fresh read
is not restarted; none is read for the delete of an attempt whose restart is recorded,
`wants.trainjob_wanted`), then only what can change the decision (`goodputs_wanted`, `capture_wanted`,
`runtime_wanted`): the Job's GoodputMeasurements — checkpoint evidence, stall re-check, the reset —, the
attempt's pods, and the training runtime for a next attempt `restart` launches itself (`Relaunch`) when
the failed TrainJob does not name its replicatedJobs. decide: `functions.restart.decide.decide`.
"""

from __future__ import annotations

from dataclasses import replace

from events.emitted import WorkloadStalledData
from events.envelope import Envelope, parse_data, parse_phase_event
from events.types import EventType
from functions.domain.attempts import of_attempt
from functions.domain.checkpoint import has_checkpoint
from functions.domain.jobs import JobState
from functions.domain.measurement_objects import goodput_of
from functions.domain.redelivery import Announced
from functions.restart import wants
from functions.restart.decide import decide
from functions.restart.observed import Observed
from functions.runtime.apply import run
from functions.runtime.context import Context
from functions.runtime.plan import Outcome
from functions.runtime.reads import read_capture, read_event, read_goodputs, read_job, read_runtime_jobs, read_trainjob

ACCEPTS = frozenset({EventType.WORKLOAD_PHASE.value, EventType.WORKLOAD_STALLED.value})


def read(env: Envelope, ctx: Context) -> Observed:
    stalled = env.type == EventType.WORKLOAD_STALLED
    observed = Observed(env, parse_data(env, WorkloadStalledData) if stalled else parse_phase_event(env))
    data = observed.data
    if not wants.is_failure(data) or wants.reported_before(data):
        return observed
    state = read_job(ctx, data.job.namespace, data.job.name)
    if state is None or wants.why_not_its_workload(state, data.workload, None):
        return replace(observed, state=state)
    trainjob = read_trainjob(ctx, state.ref.namespace, data.workload.name) \
        if wants.trainjob_wanted(data, state) else None
    held_by = None if trainjob is None or of_attempt(trainjob, data.workload.attempt) else trainjob
    observed = replace(observed, state=state, trainjob=None if held_by else trainjob, held_by=held_by)
    if wants.why_not_its_workload(state, data.workload, trainjob):
        return observed
    if name := not ctx.settings.observe and wants.restate_wanted(observed, ctx.clock()):
        return replace(observed, announced=Announced(read_event(ctx, state.ref.namespace, name)))
    return read_what_decides(observed, state, ctx)


def read_what_decides(observed: Observed, state: JobState, ctx: Context) -> Observed:
    """Only what can change the decision (`wants`): the Job's GoodputMeasurements (checkpoint evidence, the
    stall re-check, the reset), the attempt's pods, and the training runtime for a next attempt."""
    goodputs_read, as_evidence = wants.goodputs_wanted(observed, ctx.settings)
    goodputs = read_goodputs(ctx, state, as_evidence) if goodputs_read else ()
    observed = replace(observed, evidence=has_checkpoint(goodputs, state.ref.name) if as_evidence else None,
                       goodput=goodput_of(goodputs, state.ref.name))
    capture_read, tail = wants.capture_wanted(observed, ctx.settings)
    if capture_read:
        observed = replace(observed, capture=read_capture(ctx, state, observed.data.workload.attempt, tail=tail))
    if wants.runtime_wanted(observed, ctx.settings, ctx.clock()):
        observed = replace(observed, runtime_jobs=read_runtime_jobs(ctx, state))
    return observed


def handle(env: Envelope, ctx: Context) -> Outcome:
    return run(ctx, lambda: read(env, ctx), decide)
