"""Launching a Job's workload (SPEC §5), as `launch`, `resync` and a relaunching `restart` decide it.

Whether a Job needs a launch (`why_not_launch`) is asked once per Job read: by the reader, which reads
nothing more for a Job that does not. A managed, non-terminal Job without `workloadRef` gets its TrainJob
(`functions.domain.trainjobs`); then `workloadRef` and `InProgress`/`WorkloadCreated` are written, then its
first phase (`FirstPhase`). An existing `<job>-workload` is adopted, replaced or a conflict; a create the API
refuses is a Warning Event and a retry (`create_refused`). Before the restart grace is over it waits
(`functions.domain.grace`). Observe mode: nothing. A TrainJob a conflict left recorded nowhere is deleted
(`orphaned`). Adoption, conflicts and their texts: docs/functions.md#launch-and-adoption
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from events.emitted import WorkloadCreatedData, WorkloadRef
from events.envelope import Envelope, Outbound, to_outbound
from events.objects import TrainJob
from events.types import MANAGED_LABEL, TRAINJOB_API_VERSION, TRAINJOB_KIND, EventType, Phase, Reason, job_label
from functions.domain import grace
from functions.domain.adapter import decide_phase
from functions.domain.attempts import attempt_label, attempt_of, of_attempt, workload_name, workload_ref_of
from functions.domain.condition_writes import condition_write, failed_nodes
from functions.domain.conditions import changes_condition, condition, decide_conditions
from functions.domain.jobs import JobState, as_written, condition_changed, is_managed
from functions.domain.kubeevents import RefusalWarning
from functions.domain.phase_conditions import decide_status
from functions.domain.pods import Capture, failure_log_field
from functions.domain.trainjobs import build_trainjob, decides_first_phase, owned_by, refused_label
from functions.runtime.effects import Create, Delete, Effect, Label, Wait
from functions.runtime.plan import Plan, Written, nothing
from functions.runtime.resources import TRAINJOBS
from functions.runtime.settings import Settings

NO_WORKLOAD_TYPE = "Unsupported workload type: no workload type specified in WorkloadSpec"


@dataclass(frozen=True)
class LaunchObserved:
    """A Job read fresh, and the object holding its workload's name (None: the name is free)."""

    state: JobState
    existing: dict[str, Any] | None
    capture: Capture | None = None
    """The attempt's pods and failed container, read when the launch can only fail."""
    runtime_jobs: tuple[str, ...] | None = None
    """The replicatedJobs of the TrainJob's training runtime, read when a TrainJob is to be created."""


def why_not_launch(state: JobState, settings: Settings) -> str:
    """Why the Job is not launched ("" when it is): unmanaged, being deleted, terminal, or holding its workload."""
    if not is_managed(state.job.metadata.labels, settings):
        return f"{state.where} is not managed"
    if state.job.metadata.deletion_timestamp is not None:  # as CRE's reconciler: a deletion launches nothing
        return f"{state.where} is being deleted"
    if state.terminal:
        return f"{state.where} is terminal"
    if state.job.status.workload_ref is not None:
        return f"{state.where} already has its workload"
    return ""


def orphaned(state: JobState, trainjob: Mapping[str, Any] | None, settings: Settings) -> bool:
    """Whether the TrainJob is an orphan of the Job: the Job is managed, terminal and records no workload, and
    the TrainJob, not terminating, is controlled by it and of its current attempt. A launch whose `workloadRef`
    write a verdict beat (or that stopped between its create and that write) leaves one: nothing would ever
    record it (a terminal Job is never written again) or delete it (verdicts delete by `workloadRef`), and it
    would run on. Nothing else leaves that state: a TrainJob a verdict finds recorded stays recorded (and is
    kept, as CRE keeps it), and a restart's commit, the one write that clears `workloadRef`, moves
    `restartCount` past the attempt it leaves."""
    meta = (trainjob or {}).get("metadata") or {}
    return (bool(meta.get("uid")) and is_managed(state.job.metadata.labels, settings) and state.terminal
            and state.job.status.workload_ref is None and not meta.get("deletionTimestamp")
            and trainjob is not None and owned_by(trainjob, state)
            and of_attempt(trainjob, state.job.status.restart_count))


def delete_orphan(trainjob: Mapping[str, Any], why: str) -> Plan:
    """The orphan (`orphaned`) deleted, with its uid as the precondition (never another object of its name)."""
    meta = trainjob.get("metadata") or {}
    name = str(meta.get("name", ""))
    return Plan((Delete(TRAINJOBS, str(meta.get("namespace", "")), name, str(meta.get("uid", ""))),),
                reason=f"{why}: its TrainJob {name}, recorded nowhere, deleted")


def decide_launch(observed: LaunchObserved, settings: Settings, now: datetime, function: str,
                  cause: Envelope | None) -> Plan:
    """The launch of a Job that is to be launched (`why_not_launch` says so, once, where it was read)."""
    state, existing = observed.state, observed.existing
    job, group = state.job, settings.cre_group
    name = workload_name(job.metadata.name)
    plan: Plan
    if waiting := grace.wait(state, now, settings.restart_grace_seconds):
        plan = Plan((waiting,))
    elif not job.spec.workload.train_job:
        plan = fail(state, NO_WORKLOAD_TYPE, now, group, function, cause, observed.capture)
    elif refused := refused_label(job.spec.workload_metadata.labels, group):
        plan = fail(state, f"Failed to build workload: {refused}", now, group, function, cause, observed.capture)
    elif existing is None:
        plan = create(observed, name, now, group, function, cause)
    elif replaces(observed):
        assert existing is not None
        uid = str((existing.get("metadata") or {}).get("uid", ""))
        created = create(observed, name, now, group, function, cause)
        plan = Plan((Delete(TRAINJOBS, job.metadata.namespace, name, uid), *created.effects),
                    reason=f"TrainJob {name} of an earlier attempt deleted; {created.reason}",
                    reply=created.reply, created_ref=created.created_ref, then=created.then)
    else:
        plan = decide_existing(state, existing, name, now, group, function, cause, observed.capture)
    if settings.observe:
        return nothing(f"observe mode: would {describe(plan)}")
    return plan


def decide_existing(state: JobState, existing: dict[str, Any], name: str, now: datetime, group: str, function: str,
                    cause: Envelope | None, capture: Capture | None = None) -> Plan:
    job = state.job
    meta = existing.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return Plan((Wait(f"TrainJob {name} is still terminating"),))
    if not owned_by(existing, state):
        return fail(state, foreign_holder(name), now, group, function, cause, capture)
    labels = meta.get("labels") or {}
    assert attempt_of(labels) in (None, job.status.restart_count), "an earlier attempt's TrainJob is replaced"
    message = adopted(name)
    marked = () if attempt_of(labels) is not None else (Label(
        TRAINJOBS, job.metadata.namespace, name, adopted_labels(state, group),
        resource_version=str(meta.get("resourceVersion", ""))),)
    return Plan((*marked, *workload_ref_write(state, name, Reason.WORKLOAD_ADOPTED, message, now, group, function)),
                reason=message, reply=workload_created(state, True, function, cause, existing))


def adopted_labels(state: JobState, group: str) -> dict[str, str | None]:
    """What a TrainJob of the Job that carries no attempt label (CRE's own: it created it, and its `workloadRef`
    write was lost, or the switch came between the two) is given when adopted, locked on the version read:
    the current attempt, the Job's label and `crefn.dev/managed` when the Job has it, so that its phase
    changes reach the functions and act as the current attempt's."""
    labels: dict[str, str | None] = {job_label(group): state.job.metadata.name,
                                     **attempt_label(state.job.status.restart_count)}
    if state.job.metadata.labels.get(MANAGED_LABEL) == "true":
        labels[MANAGED_LABEL] = "true"
    return labels


def adopted(name: str) -> str:
    """CRE's words for a TrainJob of this Job and attempt found holding the name (a status write was lost)."""
    return f"Workload TrainJob/{name} was already created by this Job and has been adopted"


def foreign_holder(name: str) -> str:
    """CRE's words for an object of someone else holding the name (condition message and Event note)."""
    return f"Workload TrainJob/{name} already exists and is not owned by this Job"


def create(observed: LaunchObserved, name: str, now: datetime, group: str, function: str,
           cause: Envelope | None) -> Plan:
    """The attempt's TrainJob created, then `workloadRef` and `InProgress`/`WorkloadCreated` recorded; the
    reply, `workload.created`, refers to the TrainJob the create returns (its uid exists only then)."""
    state = observed.state
    message = f"Workload TrainJob/{name} created and is starting"
    body = build_trainjob(state, name, group, observed.runtime_jobs)
    new = Create(TRAINJOBS, state.job.metadata.namespace, body, refused=create_refused(state, name, now, function))
    return Plan((new, *workload_ref_write(state, name, Reason.WORKLOAD_CREATED, message, now, group, function)),
                reason=message, reply=workload_created(state, False, function, cause, body), created_ref="workload",
                then=FirstPhase(state.job.metadata.namespace, state.job.metadata.name, now, group, function, cause)
                if decides_first_phase(state) else None)


@dataclass(frozen=True)
class FirstPhase:
    """The first phase of the TrainJob just created, decided on the TrainJob as the create returned it and on
    the Job as the launch's status write left it: what CRE's next reconcile decides, with the TrainJob in its
    cache and no pod of the new attempt yet (`functions.domain.running`, no pods): `InProgress`/
    `WorkloadRunning` with `workloadStartTime` (the write locked on that Job's resourceVersion) and its
    `job.condition.changed`, sent. Nothing for a TrainJob the API server returned suspended (a webhook's
    doing, say): `status` decides it from the create's event. Only for a Job without stall detection
    (`decides_first_phase`); the TrainJob says so (`FIRST_PHASE_ANNOTATION`), and `status` answers its
    creation's event unread when it is Running (`functions.status.wants.first_phase_decided`)."""

    namespace: str
    job: str
    now: datetime
    group: str
    function: str
    cause: Envelope | None

    def follow(self, created: Mapping[str, Any] | None, written: Written) -> Plan:
        state = as_written(written, self.group, self.namespace, self.job)
        if created is None or state is None:
            return nothing("first phase: no TrainJob created, or no status write of the Job")
        trainjob = TrainJob.model_validate(created)
        result = decide_phase(trainjob)
        if result.phase is not Phase.RUNNING:
            return nothing(f"first phase: TrainJob {trainjob.metadata.name} is {result.phase.value}: status decides")
        workload = workload_ref_of(trainjob)
        decided = decide_status(state, Phase.RUNNING, workload.name, "", self.now, self.group, self.function)
        if not isinstance(decided, tuple):
            return nothing(f"first phase: {state.where} shows TrainJob {workload.name} Running already")
        write, new = decided
        if new is None or not changes_condition(state.true_condition, new):
            return Plan(write.effects)
        changed = condition_changed(state, write.status, new, self.function, self.cause, workload)
        return Plan(write.effects, reply=changed)


def creates(observed: LaunchObserved) -> bool:
    """Whether this launch would create a TrainJob (what makes reading the training runtime worth it):
    the name is free, or held by the Job's earlier attempt."""
    return observed.existing is None or replaces(observed)


def replaces(observed: LaunchObserved) -> bool:
    """Whether the name is held by this Job's TrainJob of an earlier attempt (its attempt label says so; one
    without the label is CRE's, and adopted), not terminating: it is deleted
    (uid precondition) and the next attempt created in the same plan. `restart` deletes it too, after its
    commit; a launch that sees the commit first does not wait for that. When the deleted object lingers
    (finalizers), the create finds the name taken and the launch reads again: terminating, a wait."""
    existing = observed.existing
    if existing is None or (existing.get("metadata") or {}).get("deletionTimestamp"):
        return False
    attempt = attempt_of((existing.get("metadata") or {}).get("labels") or {})
    return (owned_by(existing, observed.state) and attempt is not None
            and attempt != observed.state.job.status.restart_count)


def workload_ref_write(state: JobState, name: str, reason: str, message: str, now: datetime, group: str,
                       function: str) -> tuple[Effect, ...]:
    """The status write that records the workload: `workloadRef` and `InProgress`/`reason`."""
    ref = {"apiVersion": TRAINJOB_API_VERSION, "kind": TRAINJOB_KIND, "name": name,
           "namespace": state.job.metadata.namespace}
    write = condition_write(state, condition("InProgress", reason, message), now, group, function, {"workloadRef": ref})
    assert write is not None
    return write.effects


def can_only_fail(observed: LaunchObserved) -> bool:
    """Whether this launch would fail the Job (what makes reading the attempt's pods worth it)."""
    job = observed.state.job
    if not job.spec.workload.train_job or refused_label(job.spec.workload_metadata.labels,
                                                        job.api_version.partition("/")[0]):
        return True
    existing = observed.existing
    return existing is not None and not (existing.get("metadata") or {}).get("deletionTimestamp") \
        and not owned_by(existing, observed.state)


def fail(state: JobState, message: str, now: datetime, group: str, function: str, cause: Envelope | None,
         capture: Capture | None = None) -> Plan:
    """`Failed`/`WorkloadCreationError`, the Job's nodes attributed, its failure log recorded."""
    new = condition("Failed", Reason.WORKLOAD_CREATION_ERROR, message)
    if decide_conditions(state.conditions, state.job.metadata.generation, new, now) is None:
        return nothing(f"{state.where}: {message} (already recorded)")
    write = condition_write(state, new, now, group, function,
                            {**failed_nodes(state, group, message, capture.pods if capture else ()),
                             **failure_log_field(state, capture)})
    assert write is not None
    if not changes_condition(state.true_condition, new):
        return Plan(write.effects, reason=f"{state.where}: {message} (already recorded)")
    return Plan(write.effects, reply=condition_changed(state, write.status, new, function, cause))


def create_refused(state: JobState, name: str, now: datetime, function: str) -> RefusalWarning:
    """A create the API refused (admission, quota, webhook, validation): not a verdict on the Job (CRE
    never fails it for that): a Warning Event, and a wait, so the create is retried with Knative's
    backoff, then by the resync tick, until it succeeds."""
    return RefusalWarning(state, Reason.WORKLOAD_CREATION_ERROR, f"Failed to create TrainJob/{name}: ", now, function,
                          retried=True)


def workload_created(state: JobState, adopted: bool, function: str, cause: Envelope | None,
                     trainjob: Mapping[str, Any]) -> Outbound:
    meta = trainjob["metadata"]
    attempt = state.job.status.restart_count
    data = WorkloadCreatedData(
        job=state.ref,
        workload=WorkloadRef(api_version=TRAINJOB_API_VERSION, kind=TRAINJOB_KIND, name=meta["name"],
                             namespace=state.job.metadata.namespace, uid=meta.get("uid", ""),
                             resource_version=meta.get("resourceVersion", ""), attempt=attempt),
        attempt=attempt, adopted=adopted, measurements=asked_measurements(state))
    return to_outbound(EventType.WORKLOAD_CREATED, function, state.job.metadata.namespace, state.job.metadata.name,
                       data, cause)


def asked_measurements(state: JobState) -> list[Literal["goodput", "bandwidth"]]:
    """The measurements the Job's spec asks for (what `measurements` ensures)."""
    spec, asked = state.job.spec, list[Literal["goodput", "bandwidth"]]()
    if spec.goodput_measurement is not None:
        asked.append("goodput")
    if spec.bandwidth_measurement is not None:
        asked.append("bandwidth")
    return asked


def describe(plan: Plan) -> str:
    """A plan in a few words, for observe mode's log."""
    kinds = [type(e).__name__.lower() for e in plan.effects]
    return ", ".join(kinds) or plan.reason or "nothing"
