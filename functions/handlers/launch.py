"""`launch`: CRE Job add/update → create or adopt the Job's TrainJob (SPEC §5).

read: the Job fresh (the payload may be stale) and, when it may need launching, the object holding
its workload's name. decide: `functions.rules.launch`. A delete event is answered 202.
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
from functions.rules.launch import LaunchObserved, can_only_fail, decide_launch, needs_launch
from functions.settings import Settings

FUNCTION = "launch"
ACCEPTS = frozenset({ApiServerType.RESOURCE_ADD.value, ApiServerType.RESOURCE_UPDATE.value,
                     ApiServerType.RESOURCE_DELETE.value})


@dataclass(frozen=True)
class Observed:
    cause: Envelope
    where: str
    launch: LaunchObserved | None
    """None: the Job was deleted, or is gone."""
    deleted: bool = False


def read(env: Envelope, ctx: Context) -> Observed:
    change = parse_apiserver_event(env)
    if not isinstance(change, ResourceChange):
        raise PermanentError("launch takes ApiServerSource Resource-mode events")
    seen = parse_job(change.object, ctx.settings.cre_group)
    if change.verb == "delete":
        return Observed(env, seen.where, None, deleted=True)
    state = read_job(ctx, seen.ref.namespace, seen.ref.name)
    if state is None:
        return Observed(env, seen.where, None)
    existing = None
    if not needs_launch(state, ctx.settings):
        existing = read_trainjob(ctx, state.ref.namespace, workload_name(state.ref.name))
    launch = LaunchObserved(state, existing)
    if not needs_launch(state, ctx.settings):
        if can_only_fail(launch):
            capture = read_capture(ctx, state, tail=state.job.status.failure_log is None)
            launch = LaunchObserved(state, existing, capture)
        elif existing is None:
            launch = LaunchObserved(state, None, runtime_jobs=read_runtime_jobs(ctx, state))
    return Observed(env, seen.where, launch)


def decide(observed: Observed, settings: Settings, now: datetime) -> Plan:
    if observed.launch is None:
        return nothing(f"{observed.where} {'was deleted' if observed.deleted else 'is gone'}")
    return decide_launch(observed.launch, settings, now, FUNCTION, observed.cause)


def handle(env: Envelope, ctx: Context) -> Outcome:
    return run(ctx, lambda: read(env, ctx), decide)
