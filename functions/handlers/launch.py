"""`launch`: CRE Job add/update → create or adopt the Job's TrainJob (SPEC §5).

read: nothing when the event's Job needs no launch (unmanaged, terminal, or holding its workload:
nothing to do on its account, and any later change that makes it need one comes as its own update
event, or by the resync tick); else the Job fresh (the payload may be stale: the launch is decided
on the fresh read) and, when it may need launching, the object holding its workload's name. decide:
`functions.rules.launch`. A delete event is answered 202.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from events.envelope import Envelope, ResourceChange, parse_apiserver_event
from events.types import ApiServerType
from functions.apply import run
from functions.context import Context
from functions.errors import PermanentError
from functions.plan import Outcome, Plan, nothing
from functions.reads import read_capture, read_job, read_runtime_jobs, read_trainjob
from functions.rules.attempts import workload_name
from functions.rules.jobs import parse_job
from functions.rules.launch import LaunchObserved, can_only_fail, creates, decide_launch, needs_launch
from functions.settings import Settings

FUNCTION = "launch"
ACCEPTS = frozenset({ApiServerType.RESOURCE_ADD.value, ApiServerType.RESOURCE_UPDATE.value,
                     ApiServerType.RESOURCE_DELETE.value})


@dataclass(frozen=True)
class Observed:
    cause: Envelope
    where: str
    launch: LaunchObserved | None
    """None: nothing to launch, for `reason`."""
    reason: str = ""


def read(env: Envelope, ctx: Context) -> Observed:
    change = parse_apiserver_event(env)
    if not isinstance(change, ResourceChange):
        raise PermanentError("launch takes ApiServerSource Resource-mode events")
    seen = parse_job(change.object, ctx.settings.cre_group)
    if change.verb == "delete":
        return Observed(env, seen.where, None, f"{seen.where} was deleted")
    if why := needs_launch(seen, ctx.settings):
        return Observed(env, seen.where, None, why)
    state = read_job(ctx, seen.ref.namespace, seen.ref.name)
    if state is None:
        return Observed(env, seen.where, None, f"{seen.where} is gone")
    existing = None
    if not needs_launch(state, ctx.settings):
        existing = read_trainjob(ctx, state.ref.namespace, workload_name(state.ref.name))
    launch = LaunchObserved(state, existing)
    if not needs_launch(state, ctx.settings):
        if can_only_fail(launch):
            capture = read_capture(ctx, state, tail=state.job.status.failure_log is None)
            launch = LaunchObserved(state, existing, capture)
        elif creates(launch):
            launch = LaunchObserved(state, existing, runtime_jobs=read_runtime_jobs(ctx, state))
    return Observed(env, seen.where, launch)


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    if observed.launch is None:
        return nothing(observed.reason)
    return decide_launch(observed.launch, settings, now, FUNCTION, observed.cause)


def handle(env: Envelope, ctx: Context) -> Outcome:
    return run(ctx, lambda: read(env, ctx), decide)
