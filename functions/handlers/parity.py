"""`parity`: in observe mode, CRE Job add/update → CRE's verdict against the functions' (`dev.crefn.parity.checked`);
the PingSource tick → the same for the Jobs not terminal or made so lately (a check whose event was lost, or
which was still settling).

Beside CRE, every change of a managed Job is CRE's (the functions write nothing). read: nothing in manage mode
or for a delete; else the Job fresh (the event is a cue: its copy may be stale or forged; on the tick, as the
watch cache lists it), the TrainJob its `workloadRef` names (else `<job>-workload`) when the Job controls it, the
pods labelled with the Job, and the checkpoint evidence when it could change a restart decision. decide:
`functions.rules.parity.decide`; the tick posts each check to `K_SINK` (one not accepted is posted again by the
next tick). Counted in `crefn_parity_checks_total{field,result}` once per check (`data.check`) in this process,
once answered or sent.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import replace
from datetime import datetime
from typing import Any

from events.emitted import ParityCheckedData
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
from functions.rules.launch import owned_by
from functions.rules.measurements import has_checkpoint
from functions.rules.parity import Observed, Read, Skipped, decide, recheck_due
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


class Remembered:
    """What this process remembers, bounded (a restarted process starts afresh: a difference waits its settle
    window again, a check may be sent again): when each difference was first seen, and the checks sent."""

    def __init__(self, size: int = 10_000) -> None:
        self.size, self.lock = size, threading.Lock()
        self.first: OrderedDict[str, datetime] = OrderedDict()
        self.sent: OrderedDict[str, None] = OrderedDict()

    def first_seen(self, key: str, now: datetime) -> datetime:
        with self.lock:
            seen = self.first.setdefault(key, now)
            self._trim(self.first)
            return seen

    def newly_sent(self, check: str) -> bool:
        with self.lock:
            if check in self.sent:
                return False
            self.sent[check] = None
            self._trim(self.sent)
            return True

    def forget(self, check: str) -> None:
        """A check claimed (`newly_sent`) that could not be sent: the next tick sends it."""
        with self.lock:
            self.sent.pop(check, None)

    def _trim(self, kept: OrderedDict[str, Any]) -> None:
        while len(kept) > self.size:
            kept.popitem(last=False)


REMEMBERED = Remembered()


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
    key = rules.difference_key(observed, ctx.settings, now)
    return replace(observed, first_seen=REMEMBERED.first_seen(key, now)) if key else observed


def first_report(plan: Plan | Outcome) -> ParityCheckedData | None:
    """The check the plan or outcome replies with, when this process has not reported it before (then remembered
    as reported: `forget` it if it cannot be)."""
    data = plan.reply.data if plan.reply is not None else None
    if not isinstance(data, ParityCheckedData) or not REMEMBERED.newly_sent(data.check):
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
            plan = decide(read_inputs(env, parse_job(raw, ctx.settings.cre_group), ctx), ctx.settings, now)
            if plan.reply is not None and (data := first_report(plan)) is not None:
                try:
                    apply(Plan((*plan.effects, Send(plan.reply)), reason=plan.reason), ctx)
                except CrefnError:
                    REMEMBERED.forget(data.check)  # not sent (K_SINK refused it, say): the next tick sends it
                    raise
                counted(data)
                sent += 1
        except CrefnError as e:
            failed.append(f"{name_of(raw)}: {e}")
    reason = f"{len(due)} Jobs to check, {sent} checks sent"
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
    if (data := first_report(outcome)) is not None:  # a redelivery is answered again, and counted once
        counted(data)
    return outcome
