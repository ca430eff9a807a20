"""`parity`: in observe mode, CRE Job add/update → CRE's verdict against the functions' (`dev.crefn.parity.checked`);
the PingSource tick → the same for every Job CRE wrote lately (a check whose event was lost, or still settling).

Beside CRE, every change of a managed Job is CRE's (the functions write nothing). read: nothing in manage mode
or for a delete; else the Job fresh (the event is a cue: its copy may be stale or forged; on the tick, as the
watch cache lists it), the TrainJob its `workloadRef` names (else `<job>-workload`) when the Job controls it, the
pods labelled with the Job, and the checkpoint evidence when it could change a restart decision. decide:
`functions.rules.parity.decide`; the tick posts each check to `K_SINK`. Counted in
`crefn_parity_checks_total{field,result}` once per check (`data.check`) in this process.
"""

from __future__ import annotations

from typing import Any

from events.emitted import JobRef, ParityCheckedData
from events.envelope import Envelope, ResourceChange, parse_apiserver_event
from events.types import MANAGED_LABEL, ApiServerType
from functions.apply import apply, run
from functions.context import Context
from functions.errors import CrefnError, PermanentError, Unavailable
from functions.metrics import count_parity
from functions.plan import Outcome, Plan, Send
from functions.reads import cached_jobs, read_goodputs, read_job, read_job_pods, read_trainjob
from functions.rules import parity as rules
from functions.rules.attempts import workload_name
from functions.rules.jobs import Gone, JobState, parse_job
from functions.rules.measurements import has_checkpoint
from functions.rules.parity import Observed, Read, Skipped, decide, recheck_due
from functions.rules.phase import parse_trainjob
from functions.rules.restart import decide_restart

FUNCTION = rules.FUNCTION
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
    """What CRE's verdict on the Job is decided on."""
    ref = state.job.status.workload_ref
    trainjob = read_trainjob(ctx, state.ref.namespace, ref.name if ref else workload_name(state.ref.name))
    owner = parse_trainjob(trainjob).controller_owner() if trainjob is not None else None
    if owner is None or owner.uid != state.job.metadata.uid:
        trainjob = None
    evidence = None
    if ctx.settings.require_checkpoint_evidence and decide_restart(state, True, True).restart:
        evidence = has_checkpoint(read_goodputs(ctx, state, True), state.ref.name)
    return Read(env, JobRef(name=state.ref.name, namespace=state.ref.namespace), state, trainjob,
                read_job_pods(ctx, state), evidence)


def counted(outcome: Outcome | None, plan: Plan | None = None) -> None:
    reply = plan.reply if plan is not None else outcome.reply if outcome is not None else None
    if reply is not None and isinstance(reply.data, ParityCheckedData):
        count_parity(reply.data.check, [(f.field, f.result) for f in reply.data.fields])


def tick(env: Envelope, ctx: Context) -> Outcome:
    """Every Job CRE wrote within the recheck window, checked again from the watch cache's copy; each check
    posted to `K_SINK` (a settling one waits for the next tick). 503 when a Job could not be checked."""
    if not ctx.settings.observe:
        return Outcome(None, MANAGE_MODE)
    now = ctx.clock()
    due = [raw for raw in cached_jobs(ctx, f"{MANAGED_LABEL}=true") if recheck_due(raw, now, ctx.settings)]
    sent, failed = 0, []
    for raw in due:
        try:
            plan = decide(read_inputs(env, parse_job(raw, ctx.settings.cre_group), ctx), ctx.settings, now)
            if plan.reply is not None:
                apply(Plan((*plan.effects, Send(plan.reply)), reason=plan.reason), ctx)
                counted(None, plan)
                sent += 1
        except CrefnError as e:
            failed.append(f"{name_of(raw)}: {e}")
    reason = f"{len(due)} Jobs written lately, {sent} checks sent"
    if failed:
        raise Unavailable(f"{reason}, {len(failed)} failed: {'; '.join(failed[:3])}")
    return Outcome(None, reason)


def name_of(raw: dict[str, Any]) -> str:
    meta = raw.get("metadata") or {}
    return f"Job {meta.get('namespace')}/{meta.get('name')}"


def handle(env: Envelope, ctx: Context) -> Outcome:
    if env.type == ApiServerType.PING.value:
        return tick(env, ctx)
    outcome = run(ctx, lambda: read(env, ctx), decide)
    counted(outcome)
    return outcome
