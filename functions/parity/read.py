"""`parity`: in observe mode, CRE Job add/update → CRE's verdict against the functions' (`dev.crefn.parity.checked`);
the PingSource tick → the same for the Jobs not terminal or made so lately (a check whose event was lost, or
which was still settling).

Beside CRE, every change of a managed Job is CRE's (the functions write nothing). read: nothing in manage mode
or for a delete; else the Job fresh (the event is a cue: its copy may be stale or forged; on the tick, as the
watch cache lists it), the TrainJob its `workloadRef` names (else `<job>-workload`) when the Job controls it, the
pods labelled with the Job, and the checkpoint evidence when it could change a restart decision. decide:
`functions.parity.decide.decide`; the tick posts each check to `K_SINK` (one not accepted is posted again by the
next tick). Counted in `crefn_parity_checks_total{field,result}` once per check (`data.check`) in this process,
once answered or sent.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from events.emitted import ParityCheckedData
from events.envelope import Envelope, ResourceChange, parse_apiserver_event
from events.types import MANAGED_LABEL, ApiServerType
from functions.domain.attempts import workload_name
from functions.domain.checkpoint import decide_restart, has_checkpoint
from functions.domain.jobs import Gone, JobState, Skipped, parse_job
from functions.domain.trainjobs import owned_by
from functions.parity.decide import Observed, Read, decide, difference_key, recheck_due
from functions.runtime.apply import apply, run
from functions.runtime.context import Context
from functions.runtime.effects import Send
from functions.runtime.errors import CrefnError, PermanentError, Unavailable
from functions.runtime.metrics import count_parity
from functions.runtime.plan import Outcome, Plan
from functions.runtime.reads import cached_jobs, read_goodputs, read_job, read_job_pods, read_trainjob

ACCEPTS = frozenset({ApiServerType.RESOURCE_ADD.value, ApiServerType.RESOURCE_UPDATE.value,
                     ApiServerType.RESOURCE_DELETE.value, ApiServerType.PING.value})
MANAGE_MODE = "manage mode: the functions write the verdicts, there is nothing to compare"


def read(env: Envelope, ctx: Context) -> Observed:
    change = parse_apiserver_event(env)
    if not isinstance(change, ResourceChange):
        raise PermanentError("parity takes ApiServerSource Resource-mode events")
    seen = parse_job(change.object, ctx.settings.cre_group)
    if not ctx.settings.observe:
        return Skipped(MANAGE_MODE)
    if change.verb == "delete":
        return Skipped(f"{seen.where} was deleted")
    state = read_job(ctx, seen.ref.namespace, seen.ref.name)
    return Gone(seen.ref) if state is None else read_inputs(env, state, ctx)


def read_inputs(env: Envelope, state: JobState, ctx: Context) -> Read:
    """What CRE's verdict on the Job is decided on, and since when this process has seen the same difference."""
    ref = state.job.status.workload_ref
    trainjob = read_trainjob(ctx, state.ref.namespace, ref.name if ref else workload_name(state.ref.name))
    if trainjob is not None and not owned_by(trainjob, state):
        trainjob = None
    evidence = None
    if ctx.settings.require_checkpoint_evidence and decide_restart(state, True, True).restart:
        evidence = has_checkpoint(read_goodputs(ctx, state, True), state.ref.name)
    observed = Read(env, state, trainjob, read_job_pods(ctx, state), evidence)
    now = ctx.clock()
    key = difference_key(observed, ctx.settings, now)
    return replace(observed, first_seen=ctx.memory.first_seen(key, now)) if key else observed


def first_report(plan: Plan | Outcome, ctx: Context) -> ParityCheckedData | None:
    """The check the plan or outcome replies with, when this process has not reported it before (then remembered
    as reported: `forget` it if it cannot be)."""
    data = plan.reply.data if plan.reply is not None else None
    if not isinstance(data, ParityCheckedData) or not ctx.memory.newly_sent(data.check):
        return None
    return data


def counted(data: ParityCheckedData) -> None:
    """A check reported, counted (once: after `first_report`, once it is sent or answered)."""
    count_parity([(f.field, f.result) for f in data.fields])


def tick(env: Envelope, ctx: Context) -> Outcome:
    """Every Job not terminal, or made terminal within the recheck window, checked again from the watch cache's
    copy; each check not sent yet by this process is posted to `K_SINK` (a settling one waits for the next
    tick). 503 when a Job could not be checked."""
    if not ctx.settings.observe:
        return Outcome(None, MANAGE_MODE)
    now = ctx.clock()
    due = [raw for raw in cached_jobs(ctx, f"{MANAGED_LABEL}=true") if recheck_due(raw, now, ctx.settings)]
    sent, failed = 0, []
    for raw in due:
        try:
            sent += check(env, parse_job(raw, ctx.settings.cre_group), ctx, now)
        except CrefnError as e:
            failed.append(f"{name_of(raw)}: {e}")
    reason = f"{len(due)} Jobs to check, {sent} checks sent"
    if failed:
        raise Unavailable(f"{reason}, {len(failed)} failed: {'; '.join(failed[:3])}")
    return Outcome(None, reason)


def check(env: Envelope, seen: JobState, ctx: Context, now: datetime) -> int:
    """One Job checked from the tick: its check posted to `K_SINK` when this process has not sent it (1: sent)."""
    plan = decide(read_inputs(env, seen, ctx), ctx.settings, now)
    if plan.reply is None or (data := first_report(plan, ctx)) is None:
        return 0
    try:
        apply(Plan((*plan.effects, Send(plan.reply)), reason=plan.reason), ctx)
    except CrefnError:
        ctx.memory.forget(data.check)  # not sent (K_SINK refused it, say): the next tick sends it
        raise
    counted(data)
    return 1


def name_of(raw: dict[str, Any]) -> str:
    meta = raw.get("metadata") or {}
    return f"Job {meta.get('namespace')}/{meta.get('name')}"


def handle(env: Envelope, ctx: Context) -> Outcome:
    if env.type == ApiServerType.PING.value:
        return tick(env, ctx)
    outcome = run(ctx, lambda: read(env, ctx), decide)
    if (data := first_report(outcome, ctx)) is not None:  # a redelivery is answered again, and counted once
        counted(data)
    return outcome
