"""`launch`: CRE Job add/update → create or adopt the Job's TrainJob (SPEC §5).

read: nothing when the event's Job is not to be launched (`why_not_launch`), is being restarted with no grace to
wait (`restart_launches`), or shows a restart grace not over (`grace_on_copy`: 503 with Retry-After); else the Job
fresh (the launch is decided on the fresh read) and what the launch needs of the rest (`can_only_fail`: the
attempt's pods; `creates`: the training runtime). The name is taken to be free, and the create says when it is
not (AlreadyExists, a conflict): then the launch is read and decided again (`functions.runtime.apply.run`), the
name read too — adopt, replace an earlier attempt, wait for one terminating, or fail on a collision. A TrainJob
created whose `workloadRef` write lost to a verdict (`Unrecorded`) is deleted. A Job being deleted with CRE's
finalizer: the Job fresh, its TrainJob and its pods (`functions.domain.deletion`). decide:
`functions.launch.decide.decide`.
"""

from __future__ import annotations

from typing import Any

from events.envelope import Envelope, ResourceChange, parse_apiserver_event
from events.types import ApiServerType
from functions.domain import grace
from functions.domain.attempts import workload_name
from functions.domain.deletion import Deleting, finishes
from functions.domain.jobs import JobState, parse_job
from functions.domain.launching import LaunchObserved, can_only_fail, creates, orphaned, why_not_launch
from functions.launch import wants
from functions.launch.decide import Observed, decide
from functions.runtime.apply import apply, run
from functions.runtime.context import Context
from functions.runtime.errors import Conflict, PermanentError, Unrecorded
from functions.runtime.plan import Outcome
from functions.runtime.reads import read_capture, read_job, read_job_pods, read_runtime_jobs, read_trainjob

ACCEPTS = frozenset({ApiServerType.RESOURCE_ADD.value, ApiServerType.RESOURCE_UPDATE.value,
                     ApiServerType.RESOURCE_DELETE.value})


def read(env: Envelope, ctx: Context, taken: bool = False, created: dict[str, Any] | None = None) -> Observed:
    """With `taken`, the object holding the workload's name is read; without, the name is taken to be free
    (its create says when it is not). `created`: the TrainJob this launch created, not recorded (`Unrecorded`);
    a Job read fresh that leaves it an orphan (`orphaned`: a verdict came first) gets it deleted."""
    seen = event_job(env, ctx)
    if isinstance(seen, Observed):  # the event's Job: no read for one that is not to be launched
        return seen
    state = read_job(ctx, seen.ref.namespace, seen.ref.name)
    if state is None:
        return Observed(env, seen.where, None, f"{seen.where} is gone")
    if finishes(state, ctx.settings):  # CRE's deletion, finished
        trainjob = read_trainjob(ctx, state.ref.namespace, workload_name(state.ref.name))
        return Observed(env, seen.where, None, deleting=Deleting(state, trainjob, read_job_pods(ctx, state)))
    if why := why_not_launch(state, ctx.settings):  # the fresh Job, the one the launch is decided on
        return Observed(env, seen.where, None, why, abandoned=created if orphaned(state, created, ctx.settings)
                        else None)
    existing = read_trainjob(ctx, state.ref.namespace, workload_name(state.ref.name)) if taken else None
    launch = LaunchObserved(state, existing)
    if can_only_fail(launch):
        launch = LaunchObserved(state, existing, read_capture(ctx, state, tail=state.job.status.failure_log is None))
    elif creates(launch) and grace.wait(state, ctx.clock(), ctx.settings.restart_grace_seconds) is None:
        launch = LaunchObserved(state, existing, runtime_jobs=read_runtime_jobs(ctx, state))
    return Observed(env, seen.where, launch)


def event_job(env: Envelope, ctx: Context) -> JobState | Observed:
    """The Job as the event shows it, or what is answered unread: a delete, a Job not to be launched
    (`why_not_launch`), one `restart` relaunches (`restart_launches`), a grace not over (`grace_on_copy`)."""
    change = parse_apiserver_event(env)
    if not isinstance(change, ResourceChange):
        raise PermanentError("launch takes ApiServerSource Resource-mode events")
    seen = parse_job(change.object, ctx.settings.cre_group)
    if change.verb == "delete":
        return Observed(env, seen.where, None, f"{seen.where} was deleted")
    if finishes(seen, ctx.settings):
        return seen
    if why := why_not_launch(seen, ctx.settings):
        return Observed(env, seen.where, None, why)
    if wants.restart_launches(seen, ctx.settings):
        return Observed(env, seen.where, None, f"{seen.where} is restarting: restart launches its next attempt")
    if waiting := wants.grace_on_copy(seen, ctx.settings, ctx.clock()):
        return Observed(env, seen.where, None, wait=waiting)
    return seen


def handle(env: Envelope, ctx: Context) -> Outcome:
    try:  # the name taken to be free
        return apply(decide(read(env, ctx), ctx.settings, ctx.clock()), ctx)
    except Conflict as e:  # it is not (or the Job changed): read again, the name too, as `run` does after a conflict
        created = dict(e.created) if isinstance(e, Unrecorded) and e.created is not None else None
        return run(ctx, lambda: read(env, ctx, taken=True, created=created), decide)
