"""`launch` (SPEC §5): the pure decision of `functions.rules.launch` as a truth table, then the
function over HTTP on the real API server, as its ServiceAccount: the TrainJob it creates (labels,
owner, workloadRef), adoption, stale attempts, name collisions, terminating objects, duplicates, the
API server going away (SPEC §4.3), the legacy CRE group and which Jobs it manages."""

from __future__ import annotations

import re
import threading
import urllib.request
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from events.envelope import Envelope
from functions.apply import reply_for
from functions.client import send
from functions.gateway import Gateway
from functions.plan import Create, Delete, Plan, RecordEvent, Wait, WriteStatus
from functions.resources import TRAINING_RUNTIMES, TRAINJOBS, cre_jobs
from functions.rules.jobs import JobState
from functions.rules.kubeevents import RefusalWarning
from functions.rules.launch import (
    LaunchObserved,
    Observed,
    can_only_fail,
    creates,
    decide,
    decide_launch,
    replicated_jobs,
    why_not_launch,
    with_pod_labels,
)
from functions.rules.pods import Capture
from functions.settings import Settings
from localstack.cluster.apiserver import LocalCluster
from localstack.manifests import service_account_user
from tests.support.helpers import EARLIER, NOW, annotate_nodes, cond, job, job_events, missing
from tests.support.inprocess import InProcessFunction
from tests.support.webhook import DenyingWebhook
from tests.support.world import JOBS, World, make_world, phase_record

# -- the decision (functions.rules.launch) --------------------------------------------------------


def trainjob(attempt: str = "0", owner_uid: str = "job-uid", terminating: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "llm-workload", "uid": "tj-uid", "labels": {"crefn.dev/attempt": attempt},
                            "ownerReferences": [{"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                                                 "name": "llm", "uid": owner_uid, "controller": True}]}
    if terminating:
        meta["deletionTimestamp"] = EARLIER
    return {"metadata": meta}


LATER = (NOW + timedelta(seconds=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
PAST = (NOW - timedelta(seconds=10)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize(("state", "existing", "action"), [
    (job(), None, "create"),
    (job(), trainjob(), "adopt"),
    (job(restart_count=1), trainjob("0"), "replace"),
    (job(), trainjob(terminating=True), "wait"),
    (job(), trainjob(owner_uid="someone-else"), "fail"),
    (job(train_job=False), None, "fail"),
    (job(annotations={"crefn.dev/restart-not-before": LATER}), None, "wait"),
    (job(annotations={"crefn.dev/restart-not-before": PAST}), None, "create"),
    (job(conditions=[cond("InProgress", "True", "WorkloadRestarting")], restart_count=1), None, "wait"),
], ids=["create", "adopt", "stale-attempt", "terminating", "collision", "no-trainjob", "grace", "grace-over",
        "restart-annotation-pending"])
def test_launch_decision(state: JobState, existing: dict[str, Any] | None, action: str) -> None:
    plan = decide_launch(LaunchObserved(state, existing), Settings(), NOW, "launch", None)
    assert launch_action(plan) == action


def test_an_earlier_attempt_is_deleted_by_its_uid() -> None:
    plan = decide_launch(LaunchObserved(job(restart_count=1), trainjob("0")), Settings(), NOW, "launch", None)
    deletes = [e for e in plan.effects if isinstance(e, Delete)]
    assert [(d.name, d.uid) for d in deletes] == [("llm-workload", "tj-uid")]



def effects_of(plan: Plan) -> list[tuple[Any, ...]]:
    """A plan's effects as an operator sees them applied: what is created or deleted where, the Job's
    True condition and fields written, the Events recorded, and why it waits."""
    seen: list[tuple[Any, ...]] = []
    for e in plan.effects:
        if isinstance(e, Create):
            seen.append(("create", e.res, e.namespace, e.body["metadata"]["name"]))
        elif isinstance(e, Delete):
            seen.append(("delete", e.res, e.namespace, e.name, e.uid))
        elif isinstance(e, WriteStatus):
            (true,) = [(c["type"], c["reason"], c["message"]) for c in e.status["conditions"] if c["status"] == "True"]
            fields = {k: v["reason"] if k == "failureLog" else v for k, v in e.status.items() if k != "conditions"}
            seen.append(("write", e.res, e.namespace, e.name, true, fields))
        elif isinstance(e, RecordEvent):
            seen.append(("event", e.body["reason"], e.body["type"], e.body["reportingInstance"], e.body["note"]))
        else:
            assert isinstance(e, Wait)
            seen.append(("wait", e.reason))
    return seen


JOBS_RES = cre_jobs("nvcre.nvidia.com")
CREATED = "Workload TrainJob/llm-workload created and is starting"
ADOPTED = "Workload TrainJob/llm-workload adopted"
FOREIGN = "TrainJob llm-workload already exists and is not owned by Job llm"
NO_TYPE = "Unsupported workload type: no workload type specified in WorkloadSpec"
REF = {"workloadRef": {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "llm-workload",
                       "namespace": "ns"}}
LOG = {"failureLog": "PodNotFound"}
CREATE_EFFECTS = [("create", TRAINJOBS, "ns", "llm-workload"),
                  ("write", JOBS_RES, "ns", "llm", ("InProgress", "WorkloadCreated", CREATED), REF),
                  ("event", "WorkloadCreated", "Normal", "crefn-launch", CREATED)]


@pytest.mark.parametrize(("state", "existing", "effects"), [
    (job(), None, CREATE_EFFECTS),
    (job(restart_count=1), trainjob("0"), [("delete", TRAINJOBS, "ns", "llm-workload", "tj-uid"), *CREATE_EFFECTS]),
    (job(), trainjob(), [
        ("write", JOBS_RES, "ns", "llm", ("InProgress", "WorkloadAdopted", ADOPTED), REF),
        ("event", "WorkloadAdopted", "Normal", "crefn-launch", ADOPTED)]),
    (job(), trainjob(owner_uid="someone-else"), [
        ("write", JOBS_RES, "ns", "llm", ("Failed", "WorkloadCreationError", FOREIGN), LOG),
        ("event", "WorkloadCreationError", "Warning", "crefn-launch", FOREIGN)]),
    (job(train_job=False), None, [
        ("write", JOBS_RES, "ns", "llm", ("Failed", "WorkloadCreationError", NO_TYPE), LOG),
        ("event", "WorkloadCreationError", "Warning", "crefn-launch", NO_TYPE)]),
    (job(), trainjob(terminating=True), [("wait", "TrainJob llm-workload is still terminating")]),
    (job(annotations={"crefn.dev/restart-not-before": LATER}), None, [
        ("wait", "restart grace not over: next TrainJob not before 2026-11-30T12:00:10+00:00")]),
    (job(annotations={"crefn.dev/restart-not-before": "2026-11-30T12:00:00Z"}), None, CREATE_EFFECTS),
    (job(conditions=[cond("InProgress", "True", "WorkloadRestarting")], restart_count=1), None, [
        ("wait", "restart recorded, its grace period not yet written")]),
], ids=["create", "stale-attempt", "adopt", "collision", "no-trainjob", "terminating", "grace", "grace-ends-now",
        "restart-annotation-pending"])
def test_launch_effects(state: JobState, existing: dict[str, Any] | None, effects: list[tuple[Any, ...]]) -> None:
    """What each launch applies, in order: the status write records `workloadRef` with
    `InProgress`/`WorkloadCreated` or `WorkloadAdopted`, or fails the Job with its failure log; the
    Event of the flip comes from `crefn-launch`; a wait says what it waits for (the 503's reason)."""
    observed = Observed(CAUSE, state.where, LaunchObserved(state, existing, capture=Capture((), None)))
    assert effects_of(decide(observed, Settings(), NOW)) == effects


@pytest.mark.parametrize(("state", "existing", "seconds"), [
    (job(annotations={"crefn.dev/restart-not-before": "2026-11-30T12:00:10Z"}), None, 10),
    (job(annotations={"crefn.dev/restart-not-before": "2026-11-30T12:00:09.200Z"}), None, 10),
    (job(annotations={"crefn.dev/restart-not-before": "2026-11-30T12:00:00.300Z"}), None, 1),
    (job(annotations={"crefn.dev/restart-not-before": "2026-11-30T12:05:00Z"}), None, 300),
    (job(), trainjob(terminating=True), None),
    (job(conditions=[cond("InProgress", "True", "WorkloadRestarting")], restart_count=1), None, None),
], ids=["whole-seconds", "rounded-up", "under-a-second", "minutes", "terminating", "restart-annotation-pending"])
def test_a_wait_knows_its_seconds_only_when_it_knows_its_end(state: JobState, existing: dict[str, Any] | None,
                                                              seconds: int | None) -> None:
    """The restart grace ends at `crefn.dev/restart-not-before`: the wait's `retry_after` (the 503's
    `Retry-After`) is the whole seconds left, rounded up. A TrainJob still terminating, or a grace not
    yet written, has no known end: none."""
    observed = LaunchObserved(state, existing, capture=Capture((), None))
    (wait,) = decide_launch(observed, Settings(), NOW, "launch", None).effects
    assert isinstance(wait, Wait) and wait.retry_after == seconds


@pytest.mark.parametrize(("state", "reason"), [
    (job(workload_ref=True), "Job ns/llm already has its workload"),
    (job(conditions=[cond("Succeeded", "True", "WorkloadCompleted")]), "Job ns/llm is terminal"),
], ids=["has-workload", "terminal"])
def test_a_launch_that_is_not_needed_says_why(state: JobState, reason: str) -> None:
    assert why_not_launch(state, Settings()) == reason


def test_the_workload_created_event_tells_a_creation_from_an_adoption() -> None:
    created = decide_launch(LaunchObserved(job(), None), Settings(), NOW, "launch", None)
    adopted = decide_launch(LaunchObserved(job(), trainjob()), Settings(), NOW, "launch", None)
    read = trainjob()
    read["metadata"]["resourceVersion"] = "42"
    for reply, was_adopted in ((reply_for(created, read), False), (adopted.reply, True)):
        assert reply is not None
        assert (reply.type, reply.source, reply.subject) == ("dev.crefn.workload.created", "/crefn/launch", "ns/llm")
        assert reply.extensions == {"namespace": "ns", "job": "llm", "partitionkey": "ns/llm"}
        data = reply.data.model_dump(by_alias=True)
        assert (data["adopted"], data["attempt"], data["job"]) == (was_adopted, 0, {"name": "llm", "namespace": "ns"})
        assert data["workload"] == {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                    "name": "llm-workload", "namespace": "ns", "uid": "tj-uid",
                                    "resourceVersion": "42" if not was_adopted else "", "attempt": 0}


def test_a_refused_create_is_a_warning_and_a_retry() -> None:
    """A create the API refuses records a Warning Event named by the error and waits (retried), so the
    Job is never failed for it."""
    plan = decide_launch(LaunchObserved(job(), None), Settings(), NOW, "launch", None)
    (create,) = [e for e in plan.effects if isinstance(e, Create)]
    assert create.refused is not None
    refused = "Failed to create TrainJob/llm-workload: quota exceeded"
    assert effects_of(Plan(create.refused.follow("quota exceeded"))) == [
        ("event", "WorkloadCreationError", "Warning", "crefn-launch", refused), ("wait", f"{refused} (retried)")]


@pytest.mark.parametrize(("state", "existing", "fails"), [
    (job(train_job=False), None, True),
    (job(), trainjob(owner_uid="someone-else"), True),
    (job(), trainjob(owner_uid="someone-else", terminating=True), False),
    (job(), None, False),
    (job(), trainjob(), False),
    (job(restart_count=1), trainjob("0"), False),
], ids=["no-trainjob", "foreign", "foreign-terminating", "name-free", "this-attempt", "earlier-attempt"])
def test_the_pods_are_read_only_for_a_launch_that_can_only_fail(state: JobState, existing: dict[str, Any] | None,
                                                                fails: bool) -> None:
    assert can_only_fail(LaunchObserved(state, existing)) is fails


@pytest.mark.parametrize(("state", "existing", "creates_one"), [
    (job(), None, True),
    (job(restart_count=1), trainjob("0"), True),
    (job(), trainjob(), False),
    (job(restart_count=1), trainjob("0", terminating=True), False),
    (job(), trainjob(owner_uid="someone-else"), False),
], ids=["name-free", "earlier-attempt", "this-attempt", "earlier-attempt-terminating", "foreign"])
def test_the_runtime_is_read_only_for_a_launch_that_creates(state: JobState, existing: dict[str, Any] | None,
                                                             creates_one: bool) -> None:
    assert creates(LaunchObserved(state, existing)) is creates_one

CAUSE = Envelope(id="c1", type="dev.crefn.job.check", source="/crefn/resync",
                 traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", tracestate="vendor=1")


@pytest.mark.parametrize(("state", "existing"), [
    (job(), None),
    (job(), trainjob()),
    (job(restart_count=1), trainjob("0")),
    (job(), trainjob(owner_uid="someone-else")),
    (job(train_job=False), None),
], ids=["create", "adopt", "stale-attempt", "collision", "no-trainjob"])
def test_the_reply_carries_the_trace_context_of_its_cause(state: JobState, existing: dict[str, Any] | None) -> None:
    """SPEC §4.2: `traceparent`/`tracestate` are copied from the input event, whether the reply is
    `workload.created` (built from the created object) or the failure's `job.condition.changed`."""
    plan = decide_launch(LaunchObserved(state, existing), Settings(), NOW, "launch", CAUSE)
    reply = reply_for(plan, trainjob())
    assert reply is not None
    assert (reply.traceparent, reply.tracestate) == (CAUSE.traceparent, "vendor=1")


@pytest.mark.parametrize(("state", "existing", "would"), [
    (job(), None, "create, writestatus, recordevent"),
    (job(), trainjob(), "writestatus, recordevent"),
    (job(restart_count=1), trainjob("0"), "delete, create, writestatus, recordevent"),
    (job(), trainjob(terminating=True), "wait"),
    (job(train_job=False), None, "writestatus, recordevent"),
], ids=["create", "adopt", "stale-attempt", "terminating", "no-trainjob"])
def test_observe_mode_does_nothing_and_says_what_it_would_do(state: JobState, existing: dict[str, Any] | None,
                                                            would: str) -> None:
    """`CREFN_MODE=observe` (SPEC §6.1): no write and no event; the 202 answer names the effects that
    manage mode would apply, in order."""
    plan = decide_launch(LaunchObserved(state, existing), Settings(mode="observe"), NOW, "launch", CAUSE)
    assert (plan.effects, plan.reply, plan.created_ref) == ((), None, "")
    assert plan.reason == f"observe mode: would {would}"


def test_a_plan_is_plain_data_equal_when_decided_alike_and_shown_whole() -> None:
    """A plan is frozen data, none of it a function: decided twice from the same reads it compares equal
    (a different clock does not), and its repr names every part, the refusal's and the reply's included."""
    first, again = (decide_launch(LaunchObserved(job(), None), Settings(), NOW, "launch", CAUSE) for _ in range(2))
    assert first == again
    assert first != decide_launch(LaunchObserved(job(), None), Settings(), NOW + timedelta(seconds=1), "launch", CAUSE)
    (create,) = [e for e in first.effects if isinstance(e, Create)]
    assert create.refused == RefusalWarning(job(), "WorkloadCreationError", "Failed to create TrainJob/llm-workload: ",
                                            NOW, "launch", retried=True)
    shown = repr(first)
    assert "RefusalWarning(state=JobState(" in shown and "message='Failed to create TrainJob/llm-workload: '" in shown
    assert "'dev.crefn.workload.created'" in shown and "created_ref='workload'" in shown
    assert "partial" not in shown and "<function" not in shown and "<bound" not in shown


def launch_action(plan: Plan) -> str:
    """The launch plan in the words of SPEC §5."""
    kinds = [type(e) for e in plan.effects]
    if Delete in kinds and Create in kinds:
        assert kinds.index(Delete) < kinds.index(Create), "the old attempt goes before the next is created"
        return "replace"
    if Create in kinds:
        return "create"
    if Wait in kinds:
        return "wait"
    if plan.reply is not None and plan.reply.type == "dev.crefn.workload.created":
        return "adopt"
    if plan.reply is not None and plan.reply.extensions.get("jobcondition") == "Failed":
        return "fail"
    return "nothing"


def test_created_trainjob_carries_attempt_labels_and_owner() -> None:
    plan = decide_launch(LaunchObserved(job(restart_count=2), None), Settings(), NOW, "launch", None)
    (create,) = [e for e in plan.effects if isinstance(e, Create)]
    body = create.body
    assert (body["apiVersion"], body["kind"]) == ("trainer.kubeflow.org/v1alpha1", "TrainJob")
    assert body["metadata"] == {
        "name": "llm-workload", "namespace": "ns",
        "labels": {"app.kubernetes.io/managed-by": "cre-functions", "nvcre.nvidia.com/job": "llm",
                   "crefn.dev/attempt": "2", "crefn.dev/managed": "true"},
        "ownerReferences": [{"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": "llm",
                             "uid": "job-uid", "controller": True, "blockOwnerDeletion": True}]}
    assert body["spec"]["runtimeRef"] == {"name": "t"}
    (patch,) = body["spec"]["runtimePatches"]
    assert patch["manager"] == "crefn.dev/controller"
    (node,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    assert node["name"] == "node"
    assert node["template"]["spec"]["template"]["metadata"]["labels"] == {
        "nvcre.nvidia.com/job": "llm", "crefn.dev/managed": "true", "crefn.dev/attempt": "2"}


def test_the_training_runtimes_replicated_jobs_are_labelled_when_it_was_read() -> None:
    """The replicatedJobs of the TrainJob's training runtime, as read, win over the guess from its name."""
    observed = LaunchObserved(job(), None, runtime_jobs=("launcher", "trainer", "launcher"))
    plan = decide_launch(observed, Settings(), NOW, "launch", None)
    (create,) = [e for e in plan.effects if isinstance(e, Create)]
    (patch,) = create.body["spec"]["runtimePatches"]
    assert [r["name"] for r in patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]] == [
        "launcher", "trainer"]


@pytest.mark.parametrize(("spec", "names"), [
    ({"runtimeRef": {"name": "torch-distributed"}}, ["node"]),
    ({"runtimeRef": {"name": "deepspeed-mpi"}}, ["node", "launcher"]),
    ({"runtimeRef": {"name": "mpi"}, "runtimePatches": [
        {"manager": "kueue.x-k8s.io/manager", "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
            {"name": "launcher"}, {"name": "trainer-node"}]}}}},
        {"manager": "crefn.dev/controller", "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
            {"name": "stale"}]}}}}]}, ["launcher", "trainer-node", "stale"]),
])
def test_every_replicated_job_is_labelled(spec: dict[str, Any], names: list[str]) -> None:
    """Every replicatedJob the TrainJob's patches name (the launcher too), else `node` (+ an MPI
    runtime's `launcher`); another manager's patch is kept, an old own patch replaced."""
    patched = with_pod_labels(spec, "llm", 0, "nvcre.nvidia.com")
    ours = [p for p in patched["runtimePatches"] if p["manager"] == "crefn.dev/controller"]
    assert len(ours) == 1
    assert [r["name"] for r in ours[0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]] == names
    assert len(patched["runtimePatches"]) == len([p for p in spec.get("runtimePatches", [])
                                                  if p["manager"] != "crefn.dev/controller"]) + 1


# -- the function on the real API server ----------------------------------------------------------


def test_launch_labels_owner_and_workload_ref(world: Callable[..., World], namespace: str) -> None:
    w = world()
    created = w.create_job()
    w.settle()
    tj = w.trainjob()
    assert tj is not None
    assert tj["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "cre-functions", "nvcre.nvidia.com/job": "llm",
                                        "crefn.dev/attempt": "0", "crefn.dev/managed": "true"}
    owner = tj["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "Job", "llm", created["metadata"]["uid"], True)
    assert tj["spec"]["trainer"]["numNodes"] == 2
    status = w.job()["status"]
    assert status["workloadRef"] == {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                     "name": "llm-workload", "namespace": namespace}
    in_progress = next(c for c in status["conditions"] if c["type"] == "InProgress")
    assert in_progress["status"] == "True"
    assert "workloadStartTime" in status  # the TrainJob's first phase is Running


def test_trainjob_held_by_a_finalizer_is_503_until_it_is_gone(functions: Callable[..., dict[str, str]],
                                                              world: Callable[..., World], gateway: Gateway,
                                                              namespace: str) -> None:
    urls = functions()
    w = world(urls)
    created = w.create_job()
    gateway.patch(JOBS, namespace, "llm", {"status": {"restartCount": 1}}, status=True)
    gateway.create(TRAINJOBS, namespace, {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": "llm-workload", "labels": {"crefn.dev/attempt": "0"}, "finalizers": ["example.com/x"],
                     "ownerReferences": [{"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": "llm",
                                          "uid": created["metadata"]["uid"], "controller": True}]},
        "spec": {"runtimeRef": {"name": "torch"}}})
    gateway.delete(TRAINJOBS, namespace, "llm-workload")
    answer = send(urls["launch"], w.job_record())
    assert answer.status == 503 and "terminating" in answer.text
    assert "retry-after" not in answer.headers  # when the finalizer goes is not known
    gateway.patch(TRAINJOBS, namespace, "llm-workload", {"metadata": {"finalizers": None}})
    answer = send(urls["launch"], w.job_record())
    assert answer.status == 200 and answer.ce["type"] == "dev.crefn.workload.created"
    assert (w.trainjob() or {})["metadata"]["labels"]["crefn.dev/attempt"] == "1"


@pytest.mark.parametrize(("left", "retry_after"), [
    (timedelta(seconds=9, milliseconds=200), "10"), (timedelta(milliseconds=300), "1"), (timedelta(minutes=5), "300"),
], ids=["rounded-up", "under-a-second", "minutes"])
def test_a_launch_in_its_restart_grace_answers_when_to_come_back(world: Callable[..., World], gateway: Gateway,
                                                                cluster: LocalCluster, namespace: str,
                                                                left: timedelta, retry_after: str) -> None:
    """Over HTTP, against the API server, launch's clock fixed `left` before the grace's end: the 503
    carries `Retry-After` with the whole seconds left, rounded up (Knative's delivery can wait that long
    instead of retrying into the same 503)."""
    w = world()
    w.create_job()
    gateway.patch(JOBS, namespace, "llm", {"metadata": {"annotations": {
        "crefn.dev/restart-not-before": "2026-11-30T12:00:10Z"}}})
    end = datetime(2026, 11, 30, 12, 0, 10, tzinfo=UTC)
    kubeconfig = cluster.kubeconfig_for(service_account_user("crefn-launch"))
    launch = InProcessFunction("launch", {"CREFN_KUBECONFIG": str(kubeconfig)}, clock=lambda: end - left).start()
    try:
        answer = send(launch.url, w.job_record())
    finally:
        launch.stop()
    assert answer.status == 503, answer.text
    assert answer.text == "restart grace not over: next TrainJob not before 2026-11-30T12:00:10+00:00"
    assert answer.headers["retry-after"] == retry_after
    assert w.trainjob() is None


def test_earlier_attempt_is_deleted_and_the_next_created_at_once(functions: Callable[..., dict[str, str]],
                                                                  world: Callable[..., World], gateway: Gateway,
                                                                  namespace: str) -> None:
    """The restart is committed but its delete not yet done: launch deletes the old attempt itself (by
    its uid) and creates the next one, no wait and no retry."""
    urls = functions()
    w = world(urls)
    w.create_job()
    w.settle()
    old = w.trainjob()
    assert old is not None
    gateway.patch(JOBS, namespace, "llm", {"status": {"restartCount": 1, "workloadRef": None}}, status=True)
    answer = send(urls["launch"], w.job_record())
    assert answer.status == 200 and answer.ce["type"] == "dev.crefn.workload.created", answer.text
    new = w.trainjob()
    assert new is not None and new["metadata"]["uid"] != old["metadata"]["uid"]
    assert new["metadata"]["labels"]["crefn.dev/attempt"] == "1"
    assert answer.json()["workload"]["uid"] == new["metadata"]["uid"] and not answer.json()["adopted"]
    job = w.job()
    assert job["status"]["workloadRef"]["name"] == "llm-workload"
    assert send(urls["launch"], w.job_record()).status == 202  # launched: nothing more to do


def test_an_event_of_a_job_holding_its_workload_costs_no_read(functions: Callable[..., dict[str, str]],
                                                             world: Callable[..., World], gateway: Gateway,
                                                             namespace: str) -> None:
    """The event's Job already has its workload: nothing to launch on its account, answered without a
    read; the same event without `workloadRef` reads the Job."""
    urls = functions()
    w = world(urls)
    w.create_job()
    w.settle()
    record = w.job_record()
    before = job_reads(urls["launch"])
    assert send(urls["launch"], record).status == 202
    assert job_reads(urls["launch"]) == before
    record["data"]["status"]["workloadRef"] = None
    assert send(urls["launch"], record).status == 202  # the fresh Job has its workload
    assert job_reads(urls["launch"]) == before + 1


def job_reads(url: str) -> int:
    """The served function's GETs of CRE Jobs so far (its own metrics)."""
    with urllib.request.urlopen(url + "metrics", timeout=10) as resp:
        found = re.findall(r'^crefn_kube_requests_total\{code="200",resource="jobs",verb="get"\} (\d+)\.0',
                           resp.read().decode(), re.M)
    return int(found[0]) if found else 0


def test_name_collision_fails_the_job(functions: Callable[..., dict[str, str]], world: Callable[..., World],
                                      gateway: Gateway, namespace: str) -> None:
    urls = functions()
    w = world(urls)
    gateway.create(TRAINJOBS, namespace, {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                          "metadata": {"name": "llm-workload"}, "spec": {"runtimeRef": {"name": "t"}}})
    w.create_job()
    answer = send(urls["launch"], w.job_record())
    assert answer.status == 200 and answer.ce["jobcondition"] == "Failed"
    assert answer.json()["new"]["reason"] == "WorkloadCreationError"
    assert "already exists and is not owned by Job llm" in answer.json()["new"]["message"]
    assert send(urls["launch"], w.job_record()).status == 202  # terminal now


def test_bad_events_are_400(functions: Callable[..., dict[str, str]], namespace: str) -> None:
    urls = functions()
    batch_job = {"attributes": {**phase_record(namespace, "x", "Running")["attributes"],
                                "type": "dev.knative.apiserver.resource.update"},
                 "data": {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x", "namespace": namespace}}}
    answer = send(urls["launch"], batch_job)
    assert answer.status == 400 and "expected nvcre.nvidia.com/v1alpha1 Job, got batch/v1/Job" in answer.text


@pytest.mark.own_process
def test_api_server_stopped_mid_test_is_503_then_recovers(functions: Callable[..., dict[str, str]],
                                                          world: Callable[..., World], cluster: LocalCluster,
                                                          namespace: str) -> None:
    """launch, and status with it (one stop of the API server for both)."""
    urls = functions(CREFN_KUBE_TIMEOUT_SECONDS="3")
    w = world(urls)
    w.create_job()
    record = w.job_record()
    cluster.stop_apiserver()
    try:
        answer = send(urls["launch"], record)
        assert answer.status == 503 and "unreachable" in answer.text
        answer = send(urls["status"], phase_record(namespace, "llm", "Running"))
        assert answer.status == 503
    finally:
        cluster.start_apiserver()
    answer = send(urls["launch"], record)
    assert answer.status == 200 and answer.ce["type"] == "dev.crefn.workload.created"


def test_concurrent_duplicate_launches_create_one_trainjob(functions: Callable[..., dict[str, str]],
                                                           world: Callable[..., World], gateway: Gateway,
                                                           namespace: str) -> None:
    urls = functions()
    w = world(urls)
    w.create_job()
    record = w.job_record()
    answers: list[int] = []
    threads = [threading.Thread(target=lambda: answers.append(send(urls["launch"], record).status))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(answers) <= {200, 202, 409} and 200 in answers
    assert len(gateway.list_all(TRAINJOBS, namespace)) == 1


def test_adopt_after_a_lost_status_write(functions: Callable[..., dict[str, str]], world: Callable[..., World],
                                         gateway: Gateway, namespace: str) -> None:
    urls = functions()
    w = world(urls)
    w.create_job()
    w.settle()
    tj = w.trainjob()
    assert tj is not None
    gateway.patch(JOBS, namespace, "llm", {"status": {"workloadRef": None}}, status=True)  # as if never recorded
    answer = send(urls["launch"], w.job_record())
    assert answer.status == 200 and answer.json()["adopted"] is True
    assert answer.json()["workload"]["uid"] == tj["metadata"]["uid"]
    status = w.job()["status"]
    assert status["workloadRef"]["name"] == "llm-workload"
    assert w.final()[:2] == ("InProgress", "WorkloadAdopted")


def test_the_real_crd_rejects_a_job_without_a_workload_variant(gateway: Gateway, namespace: str) -> None:
    """`launch`'s "no trainJob" path (in the table above) is for variants of newer CRE releases: today's
    CRD refuses a Job whose workload names none."""
    from functions.errors import PermanentError

    with pytest.raises(PermanentError, match=r"spec\.workload in body should have at least 1 properties"):
        gateway.create(JOBS, namespace, {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                                         "metadata": {"name": "llm"}, "spec": {"workload": {}}})


def test_legacy_cre_group(functions: Callable[..., dict[str, str]], world: Callable[..., World]) -> None:
    """CREFN_CRE_GROUP=cre.nvidia.com: early CRE releases, the same lifecycle, labels in that group."""
    w = world(functions(CREFN_CRE_GROUP="cre.nvidia.com"), group="cre.nvidia.com", overlay="overlays/legacy-group")
    w.create_job()
    w.checkpoint_evidence()
    w.settle()
    tj = w.trainjob()
    assert tj is not None and tj["metadata"]["labels"]["cre.nvidia.com/job"] == "llm"
    assert tj["metadata"]["ownerReferences"][0]["apiVersion"] == "cre.nvidia.com/v1alpha1"
    for step in ("run", "fail", "run", "complete"):
        w.trainer(step)
        w.settle()
    assert w.final() == ("Succeeded", "WorkloadCompleted", 1)
    assert w.trainjobs_created() == 2


@pytest.mark.parametrize("manage_all", [False, True], ids=["labelled-only", "manage-all"])
def test_unlabelled_jobs_are_managed_only_with_manage_all(manage_all: bool, functions: Callable[..., dict[str, str]],
                                                          world: Callable[..., World]) -> None:
    w = world(functions(CREFN_MANAGE_ALL="true") if manage_all else functions())
    w.create_job(managed=False)
    w.settle()
    assert (w.trainjob() is not None) is manage_all
    if manage_all:
        assert "crefn.dev/managed" not in (w.trainjob() or {})["metadata"]["labels"]
    else:
        assert {d.status for d in w.answers("launch")} == {202}


def test_a_refused_create_is_retried_with_a_warning_and_never_fails_the_job(
        functions: Callable[..., dict[str, str]], gateway: Gateway, namespace: str, relay: Any,
        tmp_path: Path) -> None:
    urls = functions()
    world = make_world(gateway, namespace, urls, poll=False)
    job = f"refused-{uuid.uuid4().hex[:6]}"
    world.create_job(name=job)
    probe = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
             "metadata": {"name": "probe", "labels": {"nvcre.nvidia.com/job": job}},
             "spec": {"runtimeRef": {"name": "torch-distributed"}}}
    webhook = DenyingWebhook(gateway, tmp_path, f"deny-{job}", object_selector={
        "matchLabels": {"nvcre.nvidia.com/job": job}}, message="TrainingRuntime torch-distributed is not ready",
        rules=[{"operations": ["CREATE"], "apiGroups": ["trainer.kubeflow.org"], "apiVersions": ["v1alpha1"],
                "resources": ["trainjobs"]}], probe=(TRAINJOBS, namespace, probe))
    try:
        probed = len(webhook.reviews)
        record = world.job_record(job)
        for _ in range(2):  # Knative's retries: the same answer, one Event
            answer = send(urls["launch"], record)
            assert answer.status == 503, answer.text
            assert f"Failed to create TrainJob/{job}-workload:" in answer.text
            assert "TrainingRuntime torch-distributed is not ready" in answer.text
        assert len(webhook.reviews) == probed + 2
        events = job_events(gateway, namespace, job)
        assert [(e["type"], e["reason"]) for e in events] == [("Warning", "WorkloadCreationError")]
        assert events[0]["message"].startswith(f"Failed to create TrainJob/{job}-workload: ")
        status = world.job(job).get("status") or {}
        assert not status.get("conditions") and gateway.get(TRAINJOBS, namespace, f"{job}-workload") is None
    finally:
        webhook.remove()
    relay.attach(world)
    world.resync_url = urls["resync"]
    world.tick()  # the resync tick retries the create once the webhook is gone
    assert gateway.get(TRAINJOBS, namespace, f"{job}-workload") is not None
    assert world.final(job)[0] == "InProgress"
    assert [e["reason"] for e in job_events(gateway, namespace, job)] == ["WorkloadCreationError", "WorkloadCreated"]


def test_a_foreign_object_fails_the_job_with_its_event(functions: Callable[..., dict[str, str]], gateway: Gateway,
                                                       namespace: str) -> None:
    urls = functions()
    world = make_world(gateway, namespace, urls, poll=False)
    world.create_job()
    annotate_nodes(gateway, namespace, "gpu-node-01")
    gateway.create(TRAINJOBS, namespace, {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                          "metadata": {"name": "llm-workload"}, "spec": {"runtimeRef": {"name": "x"}}})
    answer = send(urls["launch"], world.job_record())
    assert answer.status == 200 and answer.ce["jobcondition"] == "Failed"
    assert world.final()[:2] == ("Failed", "WorkloadCreationError")
    assert world.job()["status"]["failedNodes"] == [{  # the CRD's reasons: a creation error is a failed workload
        "name": "gpu-node-01", "reason": "WorkloadFailed",
        "message": "TrainJob llm-workload already exists and is not owned by Job llm"}]
    assert [(e["type"], e["reason"]) for e in job_events(gateway, namespace)] == [
        ("Warning", "WorkloadCreationError")]


def test_workload_metadata_labels_reach_the_trainjob(functions: Callable[..., dict[str, str]], gateway: Gateway,
                                                    namespace: str) -> None:
    """The refreshed Job CRD has spec.workloadMetadata: the labels are stored and carried, not pruned."""
    urls = functions()
    world = make_world(gateway, namespace, urls, poll=False)
    job = world.create_job()
    gateway.delete(JOBS, namespace, "llm")
    spec = {**job["spec"], "workloadMetadata": {"labels": {"kueue.x-k8s.io/queue-name": "team-a"}}}
    gateway.create(JOBS, namespace, {"apiVersion": job["apiVersion"], "kind": "Job",
                                     "metadata": {"name": "llm", "labels": {"crefn.dev/managed": "true"}},
                                     "spec": spec})
    assert world.job()["spec"]["workloadMetadata"] == {"labels": {"kueue.x-k8s.io/queue-name": "team-a"}}
    assert send(urls["launch"], world.job_record()).status == 200
    trainjob = gateway.get(TRAINJOBS, namespace, "llm-workload") or {}
    assert trainjob["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a"


def test_the_pod_label_patch_passes_the_real_trainer_crd(world: Callable[..., World]) -> None:
    """The runtime patch is stored whole (1.20 prunes unknown fields silently) and the admission rules
    of the real TrainJob CRD accept it."""
    w = world()
    w.create_job(max_restarts=0)
    w.settle()
    stored = w.trainjob()
    assert stored is not None
    (patch,) = stored["spec"]["runtimePatches"]
    sent = with_pod_labels({"runtimeRef": {"name": "torch-distributed"}}, "llm", 0, "nvcre.nvidia.com")
    assert missing(sent["runtimePatches"][0], patch) == []


def test_the_runtimes_replicated_jobs_win(world: Callable[..., World]) -> None:
    """A TrainingRuntime with an MPI launcher: its pods are labelled too (CRE labels only the workers)."""
    assert replicated_jobs({"runtimeRef": {"name": "x"}}, ("launcher", "node")) == ["launcher", "node"]
    w = world()
    container = {"template": {"spec": {"template": {"spec": {"containers": [{"name": "node", "image": "i"}]}}}}}
    w.gw.create(TRAINING_RUNTIMES, w.ns, {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainingRuntime", "metadata": {"name": "mpi-rt"},
        "spec": {"template": {"spec": {"replicatedJobs": [{"name": "launcher", "replicas": 1, **container},
                                                          {"name": "node", "replicas": 1, **container}]}}}})
    w.gw.create(w.jobs, w.ns, {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                               "metadata": {"name": "llm", "labels": {"crefn.dev/managed": "true"}},
                               "spec": {"workload": {"trainJob": {"runtimeRef": {
                                   "name": "mpi-rt", "kind": "TrainingRuntime"}}}}})
    w.settle()
    stored = w.trainjob()
    assert stored is not None
    (patch,) = stored["spec"]["runtimePatches"]
    assert [r["name"] for r in patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]] == [
        "launcher", "node"]
