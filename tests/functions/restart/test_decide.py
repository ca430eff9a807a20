"""`functions.restart.decide`, pure (SPEC §6.3): the policy (restart or fail, the failure's message and
nodes), the commit's steps, a plan as plain data, a stall decided only about a running TrainJob, and a
verdict written once with its Event and failure log."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from events.emitted import WorkloadStalledData
from events.envelope import parse_data, parse_phase_event
from functions.domain.jobs import parse_job
from functions.domain.measurement_objects import GoodputMeasurement
from functions.domain.pods import Capture, LogSource
from functions.restart.decide import decide, failed_write, restart_write, verdict_write
from functions.restart.observed import Failure, Observed, observe_failure, still_running
from functions.runtime.codec import to_envelope
from functions.runtime.effects import Annotate, Delete, KubeEvent, WriteStatus
from functions.runtime.resources import TRAINJOBS, cre_jobs
from functions.runtime.settings import Settings
from tests.support.helpers import EARLIER, NOW, cond, job, trainjob
from tests.support.stall import stalled_record
from tests.support.world import phase_record

CKPT = {"pvcName": "p", "maxRestarts": 2}


def test_a_failure_attributes_the_jobs_nodes_only_once() -> None:
    raw = job().raw
    annotated = {**raw, "metadata": {**raw["metadata"], "annotations": {"nvcre.nvidia.com/group-nodes": "gpu-3,gpu-2"}}}
    decided = failed_write(parse_job(annotated, "nvcre.nvidia.com"), Failure("tj", True, ""), NOW, "nvcre.nvidia.com",
                           "restart")
    assert decided is not None
    write, new = decided
    assert (new.type, new.reason, new.message) == ("Failed", "WorkloadFailed", "Workload TrainJob/tj was deleted")
    deleted = "Workload TrainJob/tj was deleted"
    assert write.status["failedNodes"] == [{"name": n, "reason": "WorkloadFailed", "message": deleted}
                                           for n in ("gpu-2", "gpu-3")]
    earlier = [{"name": "gpu-1", "reason": "HardwareFailureDetected", "message": "xid"}]
    kept = parse_job({**annotated, "status": {"failedNodes": earlier}}, "nvcre.nvidia.com")
    decided = failed_write(kept, Failure("tj", False, "boom"), NOW, "nvcre.nvidia.com", "restart")
    assert decided is not None and "failedNodes" not in decided[0].status


GROUP = "nvcre.nvidia.com"


RUNNING = [{"type": "InProgress", "status": "True", "reason": "WorkloadRunning", "message": "",
            "observedGeneration": 1, "lastTransitionTime": EARLIER}]


TJ_FAILED = [{"type": "Failed", "status": "True", "reason": "JobsFailed", "message": "node-0 exit 137"}]


TJ_COMPLETE = [{"type": "Complete", "status": "True", "reason": "JobsCompleted", "message": ""}]


@pytest.mark.parametrize(("uid", "read", "failure"), [
    ("tj-uid", None, Failure("llm-workload", True, "")),
    ("tj-uid", trainjob(TJ_FAILED), Failure("llm-workload", False, "node-0 exit 137")),
    ("", trainjob(TJ_FAILED), Failure("llm-workload", False, "node-0 exit 137")),
    ("old-uid", trainjob(TJ_FAILED), None),
    ("tj-uid", trainjob(), None),
    ("tj-uid", trainjob(TJ_COMPLETE), None),
], ids=["gone", "failed", "event-without-uid", "replaced", "running", "complete"])
def test_a_failure_is_what_a_fresh_read_shows(uid: str, read: dict[str, Any] | None, failure: Failure | None) -> None:
    """A TrainJob gone is a deletion; one that failed on the fresh read gives its message; one that is
    another object (uid) or has not failed makes the event stale."""
    assert observe_failure("llm-workload", uid, read) == failure


@pytest.mark.parametrize(("uid", "read", "running"), [
    ("tj-uid", trainjob(), True),
    ("", trainjob(), True),
    ("tj-uid", None, False),
    ("old-uid", trainjob(), False),
    ("tj-uid", trainjob(TJ_FAILED), False),
    ("tj-uid", trainjob(TJ_COMPLETE), False),
], ids=["running", "event-without-uid", "gone", "replaced", "failed", "complete"])
def test_a_stall_is_decided_only_about_a_running_trainjob(uid: str, read: dict[str, Any] | None,
                                                          running: bool) -> None:
    assert still_running(uid, read) is running


@pytest.mark.parametrize(("conditions", "event"), [(RUNNING, False), ([], True)], ids=["running", "no-condition"])
def test_the_restart_commit(conditions: list[dict[str, Any]], event: bool) -> None:
    """One status write on the read resourceVersion: the next attempt counted, the workload and its
    scheduling markers cleared, `InProgress`/`WorkloadRestarting`; an Event only when the True type flips."""
    state = job(conditions=conditions, checkpoint=CKPT, restart_count=1,
                status={"workloadRef": {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                        "name": "llm-workload"}, "workloadStartTime": EARLIER})
    write = restart_write(state, NOW, GROUP, "restart")
    conditions_written = write.status["conditions"]
    assert {k: v for k, v in write.status.items() if k != "conditions"} == {
        "restartCount": 2, "workloadRef": None, "workloadStartTime": None, "schedulingBlockedSince": None,
        "schedulingResumedTime": None}
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in conditions_written] == [
        ("InProgress", "True", "WorkloadRestarting", "Restarting workload from checkpoint (restart 2/2)"),
        ("Succeeded", "False", "NotApplicable", ""), ("Failed", "False", "NotApplicable", "")]
    commit = write.effects[0]
    assert isinstance(commit, WriteStatus) and commit.res == cre_jobs(GROUP) and commit.status == write.status
    events = [e.body for e in write.effects[1:] if isinstance(e, KubeEvent)]
    assert [(e["reason"], e["type"], e["reportingInstance"]) for e in events] == (
        [("WorkloadRestarting", "Normal", "crefn-restart")] if event else [])


def test_a_verdict_is_written_with_its_event_and_failure_log() -> None:
    """`Failed`/`reason` on the Job's group, the Warning Event of the flip from the writing function, and
    the failure log of the attempt's pods."""
    for decided in (failed_write(job(RUNNING), Failure("tj", True, ""), NOW, GROUP, "restart", Capture((), None)),
                    verdict_write(job(RUNNING), "WorkloadFailed", "Workload TrainJob/tj was deleted", NOW, GROUP,
                                  "restart", Capture((), None))):
        assert decided is not None
        write, new = decided
        assert (new.type, new.reason, new.message) == ("Failed", "WorkloadFailed", "Workload TrainJob/tj was deleted")
        assert write.status["failureLog"]["reason"] == "PodNotFound"
        commit, event = write.effects
        assert isinstance(commit, WriteStatus) and commit.res == cre_jobs(GROUP)
        assert isinstance(event, KubeEvent)
        assert (event.body["reason"], event.body["type"], event.body["reportingInstance"]) == (
            "WorkloadFailed", "Warning", "crefn-restart")


def test_a_verdict_the_job_carries_already_is_not_written_again() -> None:
    """A redelivered failure of a Job that says `Failed` with the same reason and message writes nothing,
    not even a failure log it lacks."""
    failed = job([cond("InProgress", "False", "NotApplicable"), cond("Succeeded", "False", "NotApplicable"),
                  cond("Failed", "True", "WorkloadFailed", "Workload TrainJob/tj was deleted")])
    assert failed_write(failed, Failure("tj", True, ""), NOW, GROUP, "restart", Capture((), None)) is None


def test_a_restart_plan_is_plain_data_equal_when_decided_alike() -> None:
    """The whole restart, decided twice from the same reads, is the same plan; its repr names every step
    (the grace's annotation, the commit, the delete, the reply) and no function."""
    env = to_envelope(phase_record("ns", "llm", "Failed"))
    observed = Observed(env, parse_phase_event(env), job(RUNNING, checkpoint=CKPT, workload_ref=True),
                        trainjob(TJ_FAILED), evidence=True, capture=Capture((), None))
    first, again = (decide(observed, Settings(), NOW) for _ in range(2))
    assert first == again and first != decide(observed, Settings(), NOW + timedelta(seconds=1))
    assert [type(e).__name__ for e in first.effects] == ["Annotate", "WriteStatus", "Delete"]
    shown = repr(first)
    assert "'crefn.dev/restart-not-before': '2026-11-30T12:00:30Z'" in shown and "'restartCount': 1" in shown
    assert "'dev.crefn.job.restarted'" in shown and "<function" not in shown and "partial" not in shown
    assert first.reply is not None and first.reply.source == "/crefn/restart"  # sent by the restart function


@pytest.mark.parametrize(("checkpoint", "restarts", "evidence", "why", "text"), [
    (None, 0, True, "no-checkpoint", "no checkpoint configured"),
    ({"pvcName": "c", "maxRestarts": 0}, 0, True, "exhausted", "restarts exhausted (0/0)"),
    ({"pvcName": "c", "maxRestarts": 2}, 0, False, "no-evidence",
     "no checkpoint evidence (GoodputMeasurement lastCheckpointStep > 0)"),
], ids=["no-checkpoint", "exhausted", "no-evidence"])
def test_a_refused_restart_says_why_and_is_counted_by_why(checkpoint: dict[str, Any] | None, restarts: int,
                                                          evidence: bool, why: str, text: str) -> None:
    """The Failed verdict's answer names the refusal (the request's log line carries it) and the plan counts it
    in `crefn_restarts_refused_total{why}`: with CRE's manager stopped, no producer writes checkpoint evidence and
    every failure is terminal; this is where an operator sees it."""
    env = to_envelope(phase_record("ns", "llm", "Failed"))
    state = job(RUNNING, checkpoint=checkpoint, restart_count=restarts, workload_ref=True)
    plan = decide(Observed(env, parse_phase_event(env), state, trainjob(TJ_FAILED), evidence=evidence,
                           capture=Capture((), None)), Settings(), NOW)
    assert plan.refused == why
    assert plan.reason == f"Job ns/llm: restart refused: {text}; Failed/WorkloadFailed written"


def test_a_refused_restart_records_the_failure_log_of_the_attempts_pods() -> None:
    """The Failed verdict of a refused restart carries the failure log the fresh reads captured (the failed
    container, its exit and log tail), its Warning Event names the deciding event, and its answer the workload as
    the event names it."""
    env = to_envelope(phase_record("ns", "llm", "Failed"))
    data = parse_phase_event(env)
    data = data.model_copy(update={"workload": data.workload.model_copy(update={"uid": "tj-uid",
                                                                                "resource_version": "77"})})
    source = LogSource(pod="llm-node-0", node="gpu-1", container="trainer", exit_code=137, reason="OOMKilled")
    plan = decide(Observed(env, data, job(RUNNING, workload_ref=True), trainjob(TJ_FAILED),
                           evidence=True, capture=Capture((), source, "out of memory")), Settings(), NOW)
    write, event = plan.effects
    assert isinstance(write, WriteStatus) and isinstance(event, KubeEvent)
    assert write.status["failureLog"] == {"podName": "llm-node-0", "nodeName": "gpu-1", "exitCode": 137,
                                          "reason": "OOMKilled", "tail": "out of memory"}
    assert event.body["metadata"]["annotations"] == {"crefn.dev/cause": env.id}
    assert plan.reply is not None  # the verdict names the workload as the failure event read it
    assert plan.reply.data_json()["workload"] == data.workload.model_dump(mode="json", by_alias=True)


STALLED_GOODPUT = GoodputMeasurement.model_validate({
    "metadata": {"name": "llm-goodput", "namespace": "ns"},
    "spec": {"jobRef": {"kind": "Job", "name": "llm"}, "logProfileRef": "nemo"},
    "status": {"lastStepTimestamp": "2026-11-30T11:00:00Z", "avgStepTimeSec": "2.5"}})


@pytest.mark.parametrize(("read", "written"), [
    (trainjob(), True),
    (trainjob(TJ_FAILED), False),
    (None, False),
], ids=["still-running", "failed-since", "gone"])
def test_a_stall_is_decided_again_only_about_a_trainjob_still_running(read: dict[str, Any] | None,
                                                                     written: bool) -> None:
    """A stall found by `status`, decided again on the fresh reads: with no checkpoint, a TrainJob still running
    and still stalled fails the Job `Failed`/`WorkloadStalled`; one that failed or went since is left to its own
    event."""
    env = to_envelope(stalled_record("ns", uid="tj-uid"))
    state = job(RUNNING, workload_ref=True, spec={"stallMultiplier": 10}, status={"workloadStartTime": EARLIER})
    plan = decide(Observed(env, parse_data(env, WorkloadStalledData), state, read, evidence=True,
                           capture=Capture((), None), goodput=STALLED_GOODPUT), Settings(), NOW)
    if written:
        write, event = plan.effects
        assert isinstance(write, WriteStatus) and isinstance(event, KubeEvent)
        (failed,) = [c for c in write.status["conditions"] if c["status"] == "True"]
        assert (failed["type"], failed["reason"], failed["message"]) == (
            "Failed", "WorkloadStalled", "Workload stalled: no training step within the configured threshold")
        assert plan.reply is not None and plan.reply.type == "dev.crefn.job.condition.changed"
    else:
        assert (plan.effects, plan.reply) == ((), None)
        assert plan.reason == "stale: TrainJob llm-workload is not running on a fresh read"


# -- the next attempt, launched by the restart itself when there is no grace to wait --------------

NO_GRACE = Settings(restart_grace_seconds=0)
OURS = {"manager": "crefn.dev/controller", "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
    {"name": "launcher"}, {"name": "node"}]}}}}


def restarting(settings: Settings, failed: dict[str, Any]) -> Any:
    env = to_envelope(phase_record("ns", "llm", "Failed"))
    observed = Observed(env, parse_phase_event(env), job(RUNNING, checkpoint=CKPT, workload_ref=True), failed,
                        evidence=True, capture=Capture((), None))
    return decide(observed, settings, NOW)


def with_patch(tj: dict[str, Any], finalizers: list[str] | None = None) -> dict[str, Any]:
    meta = {**tj["metadata"], **({"finalizers": finalizers} if finalizers else {})}
    return {**tj, "metadata": meta, "spec": {**tj["spec"], "runtimePatches": [OURS]}}


@pytest.mark.parametrize(("settings", "failed", "relaunched"), [
    (NO_GRACE, with_patch(trainjob(TJ_FAILED)), True),
    (Settings(), with_patch(trainjob(TJ_FAILED)), False),
    (NO_GRACE, with_patch(trainjob(TJ_FAILED), ["example.com/hold"]), False),
    (Settings(restart_grace_seconds=0, mode="observe"), with_patch(trainjob(TJ_FAILED)), False),
], ids=["no-grace", "grace-30s", "held-by-a-finalizer", "observe"])
def test_the_restart_launches_the_next_attempt_only_with_no_grace_and_its_name_free(
        settings: Settings, failed: dict[str, Any], relaunched: bool) -> None:
    plan = restarting(settings, failed)
    assert plan.reply is not None and plan.reply.type == "dev.crefn.job.restarted"
    assert (plan.then is not None) is relaunched
    if relaunched:
        assert plan.then.runtime_jobs == ("launcher", "node")  # the failed attempt's own patch names them


@pytest.mark.parametrize(("ends", "relaunched"), [
    (NOW + timedelta(seconds=20), False), (NOW - timedelta(seconds=1), True), (None, True),
], ids=["grace-recorded-not-over", "grace-recorded-over", "none-recorded"])
def test_a_redelivered_restart_keeps_a_grace_recorded_under_another_setting(ends: Any, relaunched: bool) -> None:
    """The restart was committed with a grace of 30 s; the grace is now 0 and the failure is delivered
    again: the next attempt waits for the recorded grace (`launch` creates it then), as `launch` does."""
    committed = job([cond("InProgress", "True", "WorkloadRestarting", "")], checkpoint=CKPT, restart_count=1)
    if ends is not None:
        committed = replace(committed, job=committed.job.model_copy(update={
            "metadata": committed.job.metadata.model_copy(update={
                "annotations": {"crefn.dev/restart-not-before": ends.strftime("%Y-%m-%dT%H:%M:%SZ")}})}))
    env = to_envelope(phase_record("ns", "llm", "Failed"))
    observed = Observed(env, parse_phase_event(env), committed, with_patch(trainjob(TJ_FAILED)), evidence=True)
    plan = decide(observed, NO_GRACE, NOW)
    assert plan.effects and isinstance(plan.effects[0], Delete)  # the failed attempt is deleted either way
    assert (plan.then is not None) is relaunched


def test_the_next_attempt_is_decided_on_the_job_as_the_commit_left_it() -> None:
    from functions.runtime.effects import Create

    then = restarting(NO_GRACE, with_patch(trainjob(TJ_FAILED))).then
    committed = job([cond("InProgress", "True", "WorkloadRestarting", "Restarting workload from checkpoint "
                          "(restart 1/2)")], checkpoint=CKPT, restart_count=1).raw
    committed = {**committed, "metadata": {**committed["metadata"], "resourceVersion": "9"}}
    plan = then.follow(None, {("jobs", "ns", "llm"): committed})
    create, recorded = plan.effects[0], plan.effects[1]
    assert isinstance(create, Create) and create.body["metadata"]["labels"]["crefn.dev/attempt"] == "1"
    (patch,) = create.body["spec"]["runtimePatches"]
    assert [r["name"] for r in patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]] == [
        "launcher", "node"]
    assert isinstance(recorded, WriteStatus) and recorded.resource_version == "9"
    (true,) = [c for c in recorded.status["conditions"] if c["status"] == "True"]
    assert (true["reason"], true["message"]) == ("WorkloadCreated",
                                                 "Workload TrainJob/llm-workload created and is starting")
    assert plan.reply is not None and plan.reply.type == "dev.crefn.workload.created"
    assert plan.reply.source == "/crefn/restart" and plan.then is not None  # then its first phase
    recorded_already = {**committed, "status": {**committed["status"], "workloadRef": {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "llm-workload"}}}
    assert then.follow(None, {("jobs", "ns", "llm"): recorded_already}).effects == ()


@pytest.mark.parametrize(("ns", "name", "owned", "why"), [
    ("team-b", "llm-workload", True, "TrainJob team-b/llm-workload is not the workload of Job ns/llm"),
    ("ns", "other-workload", True, "TrainJob ns/other-workload is not the workload of Job ns/llm"),
    ("ns", "llm-workload", False, "TrainJob ns/llm-workload is not controlled by Job ns/llm"),
], ids=["another-namespace", "another-name", "not-controlled-by-the-job"])
def test_a_failure_naming_a_trainjob_not_the_jobs_own_changes_nothing(
        ns: str, name: str, owned: bool, why: str) -> None:
    """Also on the path of a restart already recorded, whose last step deletes the TrainJob the event names."""
    env = to_envelope(phase_record("ns", "llm", "Failed"))
    data = parse_phase_event(env)
    data = data.model_copy(update={"workload": data.workload.model_copy(update={"namespace": ns,
                                                                                "name": name})})
    failed = trainjob(TJ_FAILED)
    if not owned:
        failed["metadata"]["ownerReferences"][0]["uid"] = "another-jobs-uid"
    recorded = job([cond("InProgress", "True", "WorkloadRestarting", "")], checkpoint=CKPT, restart_count=1)
    for state in (recorded, job(RUNNING, checkpoint=CKPT, workload_ref=True)):
        plan = decide(Observed(env, data, state, failed, evidence=True, capture=Capture((), None)), Settings(), NOW)
        assert (plan.effects, plan.reply, plan.then, plan.reason) == ((), None, None, why)


@pytest.mark.parametrize("label", ["3", None], ids=["another-attempt", "unlabelled (CRE's, after a switch)"])
def test_a_name_held_by_another_attempts_trainjob_is_not_a_deleted_one(label: str | None) -> None:
    """A failure naming the current attempt while `<job>-workload` holds a TrainJob of another attempt (or of
    none): not seen deleted, so neither a restart nor a failure (a forged attempt number once made it both)."""
    env = to_envelope(phase_record("ns", "llm", "Failed"))
    held = trainjob()  # running, controlled by the Job
    if label is not None:
        held["metadata"]["labels"] = {"crefn.dev/attempt": label}
    for checkpoint in (CKPT, None):
        state = job(RUNNING, checkpoint=checkpoint, workload_ref=True)
        plan = decide(Observed(env, parse_phase_event(env), state, None, held_by=held, evidence=True,
                               capture=Capture((), None)), Settings(), NOW)
        assert (plan.effects, plan.reply, plan.then) == ((), None, None)
        assert plan.reason == "stale: TrainJob llm-workload is not attempt 0 on a fresh read"


@pytest.mark.parametrize(("annotations", "restarts", "annotated"), [
    ({}, 1, True),
    ({"crefn.dev/restart-not-before": "2026-11-30T11:30:00Z"}, 1, False),
    ({}, 2, False),
], ids=["grace-missing", "grace-recorded-after-the-trainjob", "an-earlier-attempts-restart"])
def test_a_redelivered_restart_writes_the_grace_its_crash_left_unwritten(annotations: dict[str, str], restarts: int,
                                                                          annotated: bool) -> None:
    """A restart of attempt 0 committed (restartCount 1) without its grace annotation: the failure delivered
    again writes it (not locked), then deletes the TrainJob; a grace written after the TrainJob's creation, or
    an event about an attempt older than the one the Job restarted last, writes none."""
    committed = job([cond("InProgress", "True", "WorkloadRestarting", "")], checkpoint=CKPT, restart_count=restarts,
                    annotations=annotations)
    env = to_envelope(phase_record("ns", "llm", "Failed"))
    observed = Observed(env, parse_phase_event(env), committed, trainjob(TJ_FAILED), evidence=True)
    plan = decide(observed, Settings(), NOW)
    grace = [(e.name, dict(e.annotations), e.resource_version) for e in plan.effects if isinstance(e, Annotate)]
    assert grace == ([("llm", {"crefn.dev/restart-not-before": "2026-11-30T12:00:30Z"}, "")] if annotated else [])
    assert plan.effects[-1] == Delete(TRAINJOBS, "ns", "llm-workload", "tj-uid")


def test_a_trainjob_already_being_deleted_is_not_deleted_again() -> None:
    """The restart of a failed attempt whose TrainJob is going (`deletionTimestamp` set): no Delete."""
    failed = trainjob(TJ_FAILED)
    failed["metadata"]["deletionTimestamp"] = "2026-11-30T11:59:00Z"
    plan = restarting(Settings(), failed)
    assert [type(e).__name__ for e in plan.effects] == ["Annotate", "WriteStatus"]
    assert plan.reply is not None and plan.reply.type == "dev.crefn.job.restarted"
