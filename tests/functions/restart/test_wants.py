"""What steers `restart`'s read: the delete of a TrainJob that had failed before is decided unread; the
GoodputMeasurements, the log tail and the training runtime are read only when they can change the decision."""

from __future__ import annotations

from typing import Any

import pytest

from events.emitted import WorkloadPhaseData
from events.envelope import Envelope


@pytest.mark.parametrize(("reason", "failed_before", "reported"), [
    ("WorkloadDeleted", True, True),
    ("WorkloadDeleted", False, False),
    ("WorkloadDeleted", None, False),
    ("JobFailed", True, False),
], ids=["deleted-after-failing", "deleted-running", "deleted-unknown (resync, earlier releases)", "not-a-delete"])
def test_a_delete_after_a_failure_is_decided_unread(reason: str, failed_before: bool | None, reported: bool) -> None:
    from datetime import UTC, datetime

    from events.emitted import JobRef, WorkloadPhaseData, WorkloadRef
    from events.types import Phase
    from functions.restart.decide import reported_before

    data = WorkloadPhaseData(job=JobRef(name="llm", namespace="ns"), phase=Phase.FAILED, reason=reason,
                             workload=WorkloadRef(api_version="trainer.kubeflow.org/v1alpha1", kind="TrainJob",
                                                  name="llm-workload", namespace="ns", attempt=0),
                             observed_at=datetime(2026, 12, 2, tzinfo=UTC), failed_before=failed_before)
    assert reported_before(data) is reported


RUNNING = [{"type": "InProgress", "status": "True", "reason": "WorkloadRunning", "message": "",
            "observedGeneration": 1, "lastTransitionTime": "2026-11-30T10:00:00Z"}]
RESTARTED = [{"type": "InProgress", "status": "True", "reason": "WorkloadRestarting", "message": "",
              "observedGeneration": 1, "lastTransitionTime": "2026-11-30T10:00:00Z"}]
TJ_FAILED = [{"type": "Failed", "status": "True", "reason": "JobsFailed", "message": "node-0 exit 137"}]
LOGGED = {"failureLog": {"podName": "p", "nodeName": "n", "exitCode": 1, "reason": "Error", "tail": ""}}


def failed_event(reason: str = "") -> tuple[Envelope, WorkloadPhaseData]:
    """A `workload.phase` Failed event about attempt 0 and its data."""
    from events.envelope import parse_phase_event
    from functions.runtime.codec import to_envelope
    from tests.support.world import phase_record

    env = to_envelope(phase_record("ns", "llm", "Failed", reason=reason))
    return env, parse_phase_event(env)


@pytest.mark.parametrize(("conditions", "checkpoint", "restarts", "reason", "wanted"), [
    (RUNNING, None, 0, "JobsFailed", (False, False)),
    (RUNNING, {"pvcName": "p", "maxRestarts": 2}, 0, "JobsFailed", (True, True)),
    (RESTARTED, {"pvcName": "p", "maxRestarts": 1}, 1, "JobsFailed", (True, False)),
    (RESTARTED, {"pvcName": "p", "maxRestarts": 1}, 1, "WorkloadDeleted", (False, False)),
], ids=["no-checkpoint", "restart-possible", "last-restart-recorded", "last-restart-recorded-its-own-delete"])
def test_the_goodputs_are_read_only_when_they_can_change_the_decision(
        conditions: list[dict[str, Any]], checkpoint: dict[str, Any] | None, restarts: int, reason: str,
        wanted: tuple[bool, bool]) -> None:
    """Read as checkpoint evidence when a restart is possible; for a restart recorded (its reset maybe left
    undone), on every event but its TrainJob's delete; never for a failure that can only fail the Job."""
    from functions.restart.observed import Observed
    from functions.restart.wants import goodputs_wanted
    from functions.runtime.settings import Settings
    from tests.support.helpers import job

    env, data = failed_event(reason)
    state = job(conditions, checkpoint=checkpoint, restart_count=restarts, workload_ref=restarts == 0)
    assert goodputs_wanted(Observed(env, data, state, None), Settings()) == wanted


@pytest.mark.parametrize(("checkpoint", "status", "wanted"), [
    ({"pvcName": "p", "maxRestarts": 2}, None, (True, False)),
    (None, None, (True, True)),
    (None, LOGGED, (True, False)),
], ids=["restarted", "failed", "failed-with-a-log-already"])
def test_the_log_tail_is_read_only_for_a_failure_that_fails_the_job_without_a_log(
        checkpoint: dict[str, Any] | None, status: dict[str, Any] | None, wanted: tuple[bool, bool]) -> None:
    """The attempt's pods are read for the current attempt's failure; the failed container's log tail only
    when the Job fails and has no failure log yet (a restart records none)."""
    from functions.restart.observed import Observed
    from functions.restart.wants import capture_wanted
    from functions.runtime.settings import Settings
    from tests.support.helpers import job, trainjob

    env, data = failed_event()
    state = job(RUNNING, checkpoint=checkpoint, workload_ref=True, status=status)
    observed = Observed(env, data, state, trainjob(TJ_FAILED), evidence=True)
    assert capture_wanted(observed, Settings()) == wanted


TERMINAL = [{"type": "Failed", "status": "True", "reason": "WorkloadFailed", "message": "boom",
             "observedGeneration": 1, "lastTransitionTime": "2026-11-30T10:00:00Z"}]


@pytest.mark.parametrize(("attempt", "conditions", "stalled", "read", "wanted"), [
    (0, RUNNING, False, TJ_FAILED, (True, True)),
    (0, TERMINAL, False, TJ_FAILED, (False, False)),
    (3, RUNNING, False, TJ_FAILED, (False, False)),
    (0, RUNNING, True, [], (True, True)),
    (0, RUNNING, True, TJ_FAILED, (False, False)),
], ids=["current-failure", "job-terminal", "another-attempt", "stall-still-running", "stall-failed-since"])
def test_the_pods_are_read_only_for_the_current_attempts_failure_or_running_stall(
        attempt: int, conditions: list[dict[str, Any]], stalled: bool, read: list[dict[str, str]],
        wanted: tuple[bool, bool]) -> None:
    """No pod is read for an event the decision leaves at once: a Job terminal already, an event about another
    attempt, a stall of a TrainJob that is not running any more."""
    from events.emitted import WorkloadStalledData
    from events.envelope import parse_data, parse_phase_event
    from functions.restart.observed import Observed
    from functions.restart.wants import capture_wanted
    from functions.runtime.codec import to_envelope
    from functions.runtime.settings import Settings
    from tests.support.helpers import job, trainjob
    from tests.support.stall import stalled_record
    from tests.support.world import phase_record

    if stalled:
        env = to_envelope(stalled_record("ns", attempt=attempt, uid="tj-uid"))
        data: WorkloadPhaseData | WorkloadStalledData = parse_data(env, WorkloadStalledData)
    else:
        env = to_envelope(phase_record("ns", "llm", "Failed", attempt=attempt))
        data = parse_phase_event(env)
    state = job(conditions, workload_ref=True)
    assert capture_wanted(Observed(env, data, state, trainjob(read), evidence=True), Settings()) == wanted


@pytest.mark.parametrize(("finalizers", "wanted"), [([], True), (["example.com/hold"], False)],
                         ids=["name-free", "held-by-a-finalizer"])
def test_the_runtime_is_not_read_while_a_finalizer_holds_the_next_attempts_name(finalizers: list[str],
                                                                                wanted: bool) -> None:
    """The Job's runtime edited since the failed attempt ran: the runtime names the next attempt's
    replicatedJobs, but is read only when the restart launches it, not when a finalizer holds the failed
    TrainJob (the tick launches it then, and reads the runtime itself)."""
    from functions.restart.observed import Observed
    from functions.restart.wants import runtime_wanted
    from functions.runtime.settings import Settings
    from tests.support.helpers import NOW, job, trainjob

    env, data = failed_event()
    edited = job(RUNNING, checkpoint={"pvcName": "p", "maxRestarts": 2}, workload_ref=True,
                 spec={"workload": {"trainJob": {"runtimeRef": {"name": "t", "kind": "TrainingRuntime"}}}})
    failed = trainjob(TJ_FAILED)
    failed["metadata"]["finalizers"] = finalizers
    observed = Observed(env, data, edited, failed, evidence=True)
    assert runtime_wanted(observed, Settings(restart_grace_seconds=0), NOW) is wanted


@pytest.mark.parametrize(("workload_ref", "wanted"), [(False, True), (True, False)],
                         ids=["next-attempt-not-launched", "next-attempt-launched"])
def test_a_recorded_restart_reads_the_runtime_only_while_its_next_attempt_has_no_workload(workload_ref: bool,
                                                                                          wanted: bool) -> None:
    """The failure delivered again after the restart was committed: the runtime is read for the relaunch only
    while the Job has no `workloadRef` (once the next attempt is launched, there is nothing to launch)."""
    from functions.restart.observed import Observed
    from functions.restart.wants import runtime_wanted
    from functions.runtime.settings import Settings
    from tests.support.helpers import NOW, job

    env, data = failed_event()
    state = job(RESTARTED, checkpoint={"pvcName": "p", "maxRestarts": 2}, restart_count=1, workload_ref=workload_ref)
    assert runtime_wanted(Observed(env, data, state, None), Settings(restart_grace_seconds=0), NOW) is wanted


@pytest.mark.parametrize(("reason", "restarts", "wanted"), [
    ("WorkloadDeleted", 1, False),
    ("WorkloadDeleted", 0, True),
    ("JobsFailed", 1, True),
    ("JobsFailed", 0, True),
], ids=["delete-of-a-recorded-restart", "delete-of-the-current-attempt", "failure-of-a-recorded-restart",
        "failure-of-the-current-attempt"])
def test_the_trainjob_is_read_but_for_the_delete_that_ends_a_recorded_restart(reason: str, restarts: int,
                                                                              wanted: bool) -> None:
    """The delete of an attempt whose restart is recorded is the restart's own last step: its TrainJob is not
    read; every other failure event reads it."""
    from functions.restart.wants import trainjob_wanted
    from tests.support.helpers import job

    _, data = failed_event(reason)
    assert trainjob_wanted(data, job(RESTARTED, restart_count=restarts)) is wanted


@pytest.mark.parametrize(("its_namespace", "name", "why"), [
    ("ns", "llm-workload", ""),
    ("", "llm-workload", ""),
    ("other", "llm-workload", "TrainJob other/llm-workload is not the workload of Job ns/llm"),
    ("ns", "llm2-workload", "TrainJob ns/llm2-workload is not the workload of Job ns/llm"),
], ids=["its-own", "no-namespace (the Job's)", "another-namespace", "another-name"])
def test_an_event_is_about_the_jobs_own_workload_by_namespace_and_name(its_namespace: str, name: str,
                                                                      why: str) -> None:
    from events.emitted import WorkloadRef
    from functions.restart.wants import why_not_its_workload
    from tests.support.helpers import job

    workload = WorkloadRef(api_version="trainer.kubeflow.org/v1alpha1", kind="TrainJob", name=name,
                           namespace=its_namespace, attempt=0)
    assert why_not_its_workload(job(RUNNING, workload_ref=True), workload, None) == why
