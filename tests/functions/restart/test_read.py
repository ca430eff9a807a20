"""`restart` over HTTP on the real API server, as its ServiceAccount (SPEC §6.3): forged and stale
failures, the Job's status when restarts run out (its Events, its failed nodes: the first attribution wins),
observe mode; a stall `status` finds restarts the Job from its checkpoint or fails it, a stale stall event
changes nothing. The policy, pure: tests/functions/restart/test_decide.py."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from functions.runtime.client import send
from functions.runtime.codec import to_envelope
from functions.runtime.effects import WriteStatus
from functions.runtime.errors import NotYet
from functions.runtime.gateway import Gateway
from functions.runtime.resources import TRAINJOBS, cre_goodput
from localstack.cluster.apiserver import LocalCluster
from localstack.manifests import kubectl
from tests.support.helpers import annotate_nodes, job_events
from tests.support.stall import (
    GOODPUT,
    TRAINING_MESSAGE,
    S,
    condition,
    create_job,
    hand_made_goodput,
    measure,
    now_at,
    stalled_record,
    stalled_training,
)
from tests.support.world import JOBS, Relay, World, make_world, phase_record


def test_object_gone_is_202(functions: Callable[..., dict[str, str]], namespace: str) -> None:
    answer = send(functions()["restart"], phase_record(namespace, "never-was", "Failed"))
    assert answer.status == 202, answer.text


def test_stale_and_forged_failed_events_do_not_restart(functions: Callable[..., dict[str, str]],
                                                       world: Callable[..., World], namespace: str) -> None:
    urls = functions()
    w = world(urls)
    w.create_job()
    w.checkpoint_evidence()
    w.settle()
    w.trainer("run")
    w.settle()
    # forged: says Failed, but the TrainJob is running on a fresh read
    assert send(urls["restart"], phase_record(namespace, "llm", "Failed")).status == 202
    # stale: an older attempt
    assert send(urls["restart"], phase_record(namespace, "llm", "Failed", attempt=5)).status == 202
    assert w.final() == ("InProgress", "WorkloadRunning", 0)
    assert (w.trainjob() or {}).get("metadata", {}).get("deletionTimestamp") is None


def test_failed_nodes_and_messages_when_restarts_run_out(world: Callable[..., World]) -> None:
    w = world()
    w.create_job(max_restarts=0, nodes="gpu-node-11,gpu-node-07")
    w.checkpoint_evidence()
    w.settle()
    w.trainer("fail")
    w.settle()
    status = w.job()["status"]
    failed = next(c for c in status["conditions"] if c["type"] == "Failed")
    assert failed["message"] == ("Workload TrainJob/llm-workload failed: "
                                 "jobset node-0 failed: exit code 137 (OOMKilled)")
    assert [(n["name"], n["reason"]) for n in status["failedNodes"]] == [
        ("gpu-node-07", "WorkloadFailed"), ("gpu-node-11", "WorkloadFailed")]
    others = {c["type"]: c for c in status["conditions"] if c["type"] != "Failed"}
    assert {k: (v["status"], v["reason"], v["message"]) for k, v in others.items()} == {
        "InProgress": ("False", "NotApplicable", ""), "Succeeded": ("False", "NotApplicable", "")}
    assert all(c["observedGeneration"] == w.job()["metadata"]["generation"] for c in status["conditions"])
    changed = [trigger for trigger, type_ in w.replies() if type_ == "dev.crefn.job.condition.changed"]
    assert changed[-1] == "crefn-restart-failures"


def test_observe_mode_writes_nothing_and_still_emits(functions: Callable[..., dict[str, str]],
                                                     world: Callable[..., World]) -> None:
    w = world(functions(CREFN_MODE="observe"))
    w.create_job()
    w.checkpoint_evidence()
    tj = w.launched_by_cre()
    before = w.job()["metadata"]["resourceVersion"]
    w.settle()
    w.trainer("fail")
    w.settle()
    assert w.job()["metadata"]["resourceVersion"] == before
    assert (w.trainjob() or {})["metadata"]["uid"] == tj["metadata"]["uid"]
    replies = {type_ for _, type_ in w.replies()}
    assert {"dev.crefn.workload.phase", "dev.crefn.job.condition.changed", "dev.crefn.job.restarted"} <= replies


def test_restart_grace_is_twice_the_goodput_sample_interval(functions: Callable[..., dict[str, str]],
                                                           gateway: Gateway, namespace: str) -> None:
    urls = functions(CREFN_RESTART_GRACE_SECONDS="0")
    world = make_world(gateway, namespace, urls)
    for name, interval in (("sampled", "45s"), ("unsampled", None)):
        body: dict[str, Any] = {
            "apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "labels": {"crefn.dev/managed": "true"}},
            "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "torch-distributed"}}},
                     "checkpoint": {"pvcName": "p", "maxRestarts": 1}}}
        if interval:
            body["spec"]["goodputMeasurement"] = {"logProfileRef": "default", "sampleInterval": interval}
        gateway.create(JOBS, namespace, body)
        world.checkpoint_evidence(job=name)
    world.settle()
    for name in ("sampled", "unsampled"):
        world.trainer("fail", job=name)
    world.settle()
    restarted = {o.record["attributes"]["job"] for o in world.broker.outcomes
                 if o.reply and o.reply["attributes"]["type"] == "dev.crefn.job.restarted"}
    assert set(restarted) == {"sampled", "unsampled"}
    now = datetime.now(UTC)
    ahead = (datetime.fromisoformat(world.job("sampled")["metadata"]["annotations"]["crefn.dev/restart-not-before"]
                                    .replace("Z", "+00:00")) - now).total_seconds()
    assert 45 < ahead <= 91, ahead
    assert "crefn.dev/restart-not-before" not in world.job("unsampled")["metadata"].get("annotations", {})  # grace 0
    assert world.job("sampled")["status"]["restartCount"] == 1
    assert gateway.get(TRAINJOBS, namespace, "sampled-workload") is None  # still within its 90 s grace


def test_a_restart_with_no_grace_writes_none_and_launch_never_waits_for_it(world: Callable[..., World]) -> None:
    w = world()
    w.create_job(max_restarts=1)
    w.checkpoint_evidence()
    w.settle()
    w.trainer("fail")
    w.settle()
    job = w.job()
    assert job["status"]["restartCount"] == 1
    assert "crefn.dev/restart-not-before" not in job["metadata"].get("annotations", {})  # one Job write fewer
    assert (w.trainjob() or {})["metadata"]["labels"]["crefn.dev/attempt"] == "1"  # grace 0: launched at once
    waits = [a.text for a in w.answers("launch") if a.status == 503]
    assert not [t for t in waits if "not yet written" in t], waits


def test_a_restart_with_no_grace_launches_the_next_attempt_itself(world: Callable[..., World], relay: Relay) -> None:
    """One function for the transition: the restart's plan, then the next attempt on the Job its commit left
    (created, recorded, its first phase), its events sent; `launch` answers the commit's update unread."""
    w = world()
    w.create_job(max_restarts=1)
    w.checkpoint_evidence()
    w.settle()
    relay.attach(w)
    before = len(w.resynced)  # what launch sent for the first attempt (its first phase)
    w.trainer("fail")
    w.settle()
    status = w.job()["status"]
    assert status["restartCount"] == 1 and status["workloadRef"]["name"] == "llm-workload"
    (true,) = [c for c in status["conditions"] if c["status"] == "True"]
    assert (true["reason"], true["message"]) == ("WorkloadRunning", "Workload TrainJob/llm-workload is running")
    assert (w.trainjob() or {})["metadata"]["labels"]["crefn.dev/attempt"] == "1"
    sent = [(r["attributes"]["source"], r["attributes"]["type"]) for r in w.resynced[before:]]
    assert sent == [("/crefn/restart", "dev.crefn.workload.created"),
                    ("/crefn/restart", "dev.crefn.job.condition.changed")]
    assert [r["data"]["workload"]["attempt"] for r in w.resynced[before:]] == [1, 1]
    assert ("crefn-restart-failures", "dev.crefn.job.restarted") in w.replies()
    assert [a.reply["data"]["attempt"] for a in w.answers("launch") if a.reply] == [0]  # the first attempt only


def test_a_trainjob_held_by_a_finalizer_leaves_the_next_attempt_to_the_tick(world: Callable[..., World],
                                                                             gateway: Gateway, namespace: str) -> None:
    w = world()
    w.create_job(max_restarts=1)
    w.checkpoint_evidence()
    w.settle()
    gateway.patch(TRAINJOBS, namespace, "llm-workload", {"metadata": {"finalizers": ["example.com/hold"]}})
    w.trainer("fail")
    w.settle()
    status, held = w.job()["status"], w.trainjob() or {}
    assert status["restartCount"] == 1 and "workloadRef" not in status
    assert held["metadata"]["labels"]["crefn.dev/attempt"] == "0" and held["metadata"].get("deletionTimestamp")
    gateway.patch(TRAINJOBS, namespace, "llm-workload", {"metadata": {"finalizers": None}})
    w.settle()
    w.tick()
    assert (w.trainjob() or {})["metadata"]["labels"]["crefn.dev/attempt"] == "1"
    assert w.job()["status"]["workloadRef"]["name"] == "llm-workload"


def test_a_deleted_attempt_is_relaunched_with_the_replicated_jobs_its_training_runtime_names(
        world: Callable[..., World]) -> None:
    """The failed attempt's TrainJob is gone (its delete is the failure), so no runtime patch of it names the
    next attempt's replicatedJobs: the restart reads the Job's TrainingRuntime, and the next attempt's patch
    labels its `launcher` too (by its name alone, only `node` would be)."""
    from functions.runtime.resources import TRAINING_RUNTIMES

    w = world()
    container = {"template": {"spec": {"template": {"spec": {"containers": [{"name": "node", "image": "i"}]}}}}}
    w.gw.create(TRAINING_RUNTIMES, w.ns, {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainingRuntime", "metadata": {"name": "two-jobs"},
        "spec": {"template": {"spec": {"replicatedJobs": [{"name": "launcher", "replicas": 1, **container},
                                                          {"name": "node", "replicas": 1, **container}]}}}})
    w.checkpoint_evidence()
    w.gw.create(w.jobs, w.ns, {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                               "metadata": {"name": "llm", "labels": {"crefn.dev/managed": "true"}},
                               "spec": {"workload": {"trainJob": {"runtimeRef": {
                                   "name": "two-jobs", "kind": "TrainingRuntime"}}},
                                        "checkpoint": {"pvcName": "llm-ckpt", "maxRestarts": 1}}})
    w.settle()
    assert (w.trainjob() or {})["metadata"]["labels"]["crefn.dev/attempt"] == "0"
    w.gw.delete(TRAINJOBS, w.ns, "llm-workload")
    w.settle()
    assert w.job()["status"]["restartCount"] == 1
    relaunched = w.trainjob() or {}
    assert relaunched["metadata"]["labels"]["crefn.dev/attempt"] == "1"
    (patch,) = relaunched["spec"]["runtimePatches"]
    assert [r["name"] for r in patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]] == [
        "launcher", "node"]


@pytest.mark.parametrize("grace", [30, 0], ids=["grace-30s", "no-grace"])
def test_a_crash_between_the_restarts_writes_never_leaves_a_commit_without_its_grace(
        world: Callable[..., World], cluster: LocalCluster, functions: Callable[..., dict[str, str]],
        namespace: str, grace: int) -> None:
    """The restart's plan cut after its first write (a crash): the Job is never committed without its grace
    (with no grace, the commit is the first write: there is none to record)."""
    from functions.restart import read as restart
    from functions.runtime.apply import apply
    from functions.runtime.context import Context
    from functions.runtime.plan import Plan
    from functions.runtime.settings import Settings

    w = world()
    w.create_job(max_restarts=1)
    w.checkpoint_evidence()
    w.settle()
    w.trainer("fail")
    tj = w.trainjob() or {}
    failed = phase_record(namespace, "llm", "Failed")
    failed["data"]["workload"]["uid"] = tj["metadata"]["uid"]
    env = to_envelope(failed)
    ctx = Context(Settings(kubeconfig=str(cluster.kubeconfig), restart_grace_seconds=grace))
    plan = restart.decide(restart.read(env, ctx), ctx.settings, ctx.clock())
    first = plan.effects[0]
    apply(Plan((first,)), ctx)  # ... and the process dies here
    job = w.job()
    committed = job["status"].get("restartCount", 0) == 1
    assert committed == (grace == 0)
    assert not committed or grace == 0 or "crefn.dev/restart-not-before" in job["metadata"].get("annotations", {})
    assert isinstance(first, WriteStatus) == (grace == 0)
    urls = functions(CREFN_RESTART_GRACE_SECONDS=str(grace))
    answer = send(urls["launch"], w.job_record())
    assert answer.status != 503, answer.text  # never "restart recorded, its grace period not yet written"
    if grace == 0:  # Knative delivers the failure again: the recorded restart is finished, the next attempt launched
        assert send(urls["restart"], failed).status == 202
        assert (w.trainjob() or {})["metadata"]["labels"]["crefn.dev/attempt"] == "1"
        assert w.job()["status"]["workloadRef"]["name"] == "llm-workload"


def test_a_restart_resets_the_goodputs_stall_state_after_its_commit(world: Callable[..., World]) -> None:
    """CRE's reset: the next attempt's stall detection starts from the restart; the rest is kept."""
    w = world()
    w.create_job(max_restarts=1)
    w.checkpoint_evidence()
    goodput = cre_goodput("nvcre.nvidia.com")
    w.gw.patch(goodput, w.ns, "llm-goodput", {"status": {
        "lastStepTimestamp": "2026-11-30T09:00:00Z", "avgStepTimeSec": "2.5", "applicationStartTime":
        "2026-11-30T08:00:00Z", "startTime": "2026-11-30T07:00:00Z", "currentStep": 1300}}, status=True)
    w.settle()
    w.trainer("fail")
    w.settle()
    assert w.job()["status"]["restartCount"] == 1
    status = (w.gw.get(goodput, w.ns, "llm-goodput") or {})["status"]
    assert "lastStepTimestamp" not in status and "applicationStartTime" not in status
    assert (status["avgStepTimeSec"], status["lastCheckpointStep"], status["currentStep"]) == ("", 1200, 1300)
    started = datetime.fromisoformat(status["startTime"].replace("Z", "+00:00"))
    assert abs(started - datetime.now(UTC)) < timedelta(seconds=60)


def test_the_reset_is_the_restarts_last_step(cluster: LocalCluster, world: Callable[..., World]) -> None:
    """After the commit and the delete, so that nothing it meets holds the restart back; unlocked."""
    from functions.restart import read as restart
    from functions.runtime.context import Context
    from functions.runtime.effects import Annotate, Delete
    from functions.runtime.settings import Settings

    w = world()
    w.create_job(max_restarts=1)
    w.checkpoint_evidence()
    w.settle()
    w.trainer("fail")
    failed = phase_record(w.ns, "llm", "Failed")
    ctx = Context(Settings(kubeconfig=str(cluster.kubeconfig)))
    plan = restart.decide(restart.read(to_envelope(failed), ctx), ctx.settings, ctx.clock())
    assert [type(e) for e in plan.effects] == [Annotate, WriteStatus, Delete, WriteStatus]
    reset = plan.effects[-1]
    assert isinstance(reset, WriteStatus) and reset.res.plural == "goodputmeasurements"
    assert reset.name == "llm-goodput" and reset.resource_version == ""


def crash_before_the_reset(cluster: LocalCluster, record: dict[str, Any]) -> None:
    """The restart decided in process and its plan applied but for the GoodputMeasurement reset, its last step
    (the process dies there); nothing of what follows the plan (the next attempt) is done."""
    from functions.restart import read as restart
    from functions.runtime.apply import apply
    from functions.runtime.context import Context
    from functions.runtime.plan import Plan
    from functions.runtime.settings import Settings

    ctx = Context(Settings(kubeconfig=str(cluster.kubeconfig), restart_grace_seconds=0))
    plan = restart.decide(restart.read(to_envelope(record), ctx), ctx.settings, ctx.clock())
    last = plan.effects[-1]
    assert isinstance(last, WriteStatus) and last.res.plural == "goodputmeasurements"
    apply(Plan(plan.effects[:-1]), ctx)


def test_a_redelivered_stall_finishes_the_reset_a_crash_left_undone(
        world: Callable[..., World], cluster: LocalCluster, functions: Callable[..., dict[str, str]]) -> None:
    """Without the reset, the next attempt's stall check measures from the failed attempt's last step and
    restarts it at once: two restarts for one stall."""
    w = world()
    create_job(w, max_restarts=3, goodput_spec=True)
    w.settle()
    w.trainer("run")
    w.settle()
    measure(w, **stalled_training(checkpoint_step=1200))
    stalled = stalled_record(w.ns, attempt=0, uid=(w.trainjob() or {})["metadata"]["uid"])
    crash_before_the_reset(cluster, stalled)
    assert (w.gw.get(GOODPUT, w.ns, "llm-goodput") or {})["status"]["avgStepTimeSec"] == "2.5"
    assert send(functions()["restart"], stalled).status == 202  # Knative delivers the stall again
    status = (w.gw.get(GOODPUT, w.ns, "llm-goodput") or {})["status"]
    assert "lastStepTimestamp" not in status and "applicationStartTime" not in status
    assert (status["avgStepTimeSec"], status["lastCheckpointStep"]) == ("", 1200)
    w.settle()
    w.tick()
    w.settle()
    assert w.final() == ("InProgress", "WorkloadRunning", 1)
    assert (w.trainjob() or {})["metadata"]["labels"]["crefn.dev/attempt"] == "1"


def test_a_redelivered_failure_finishes_the_reset_of_the_jobs_last_restart(
        world: Callable[..., World], cluster: LocalCluster, functions: Callable[..., dict[str, str]]) -> None:
    """The Job has no restart left after this one, so nothing else makes the redelivery read the measurement."""
    w = world()
    w.create_job(max_restarts=1)
    w.checkpoint_evidence()
    measure(w, lastStepTimestamp="2026-11-30T09:00:00Z", avgStepTimeSec="2.5",
            applicationStartTime="2026-11-30T08:00:00Z")
    w.settle()
    w.trainer("fail")
    failed = phase_record(w.ns, "llm", "Failed")
    failed["data"]["workload"]["uid"] = (w.trainjob() or {})["metadata"]["uid"]
    crash_before_the_reset(cluster, failed)
    assert w.job()["status"]["restartCount"] == 1
    assert (w.gw.get(GOODPUT, w.ns, "llm-goodput") or {})["status"]["lastStepTimestamp"] == "2026-11-30T09:00:00Z"
    assert send(functions()["restart"], failed).status == 202
    status = (w.gw.get(GOODPUT, w.ns, "llm-goodput") or {})["status"]
    assert "lastStepTimestamp" not in status and "applicationStartTime" not in status
    assert (status["avgStepTimeSec"], status["lastCheckpointStep"]) == ("", 1200)
    assert (w.trainjob() or {})["metadata"]["labels"]["crefn.dev/attempt"] == "1"  # and the next attempt launched


def test_an_old_attempts_failure_never_resets_a_terminal_jobs_measurement(
        world: Callable[..., World], cluster: LocalCluster) -> None:
    """Restart 1 recorded, then attempt 1 failed before it was seen running: the Job is terminal, its
    measurement the record of attempt 1. A copy of attempt 0's failure (replayed, forged) resets nothing."""
    from functions.restart import read as restart
    from functions.runtime.context import Context
    from functions.runtime.settings import Settings

    w = world()
    w.create_job(max_restarts=1)
    w.checkpoint_evidence()
    measure(w, lastStepTimestamp="2026-11-30T09:00:00Z", avgStepTimeSec="2.5",
            applicationStartTime="2026-11-30T08:00:00Z")
    at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    generation = w.job()["metadata"]["generation"]
    conditions = [{"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": at,
                   "observedGeneration": generation}
                  for kind, status, reason, message in (("Failed", "True", "WorkloadStalled", "stalled"),
                                                        ("InProgress", "False", "NotApplicable", ""),
                                                        ("Succeeded", "False", "NotApplicable", ""))]
    w.gw.patch(JOBS, w.ns, "llm", {"status": {"restartCount": 1, "conditions": conditions, "workloadRef": {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "llm-workload",
        "namespace": w.ns}}}, status=True)
    outcome = restart.handle(to_envelope(phase_record(w.ns, "llm", "Failed", attempt=0)),
                             Context(Settings(kubeconfig=str(cluster.kubeconfig))))
    assert outcome.reply is None
    status = (w.gw.get(GOODPUT, w.ns, "llm-goodput") or {})["status"]
    assert (status["lastStepTimestamp"], status["avgStepTimeSec"], status["applicationStartTime"]) == (
        "2026-11-30T09:00:00Z", "2.5", "2026-11-30T08:00:00Z")


def test_a_stall_restarts_the_job_from_its_checkpoint_and_resets_the_goodput(
        world: Callable[..., World], functions: Callable[..., dict[str, str]]) -> None:
    w = world(functions(CREFN_RESTART_GRACE_SECONDS="30"))  # the grace holds the next attempt back
    create_job(w, max_restarts=2, goodput_spec=True)
    w.settle()
    assert w.gw.get(GOODPUT, w.ns, "llm-goodput") is not None  # created by `measurements`
    assert w.final() == ("InProgress", "WorkloadRunning", 0)  # no step, no anchor yet: nothing to judge
    measure(w, **stalled_training(checkpoint_step=1200))
    w.tick()  # nothing changed but time: the tick re-drives the running Job
    w.settle()
    assert ("crefn-restart-stalls", "dev.crefn.job.restarted") in w.replies()
    assert any(type_ == "dev.crefn.workload.stalled" for _, type_ in w.replies())
    assert w.final() == ("InProgress", "WorkloadRestarting", 1)
    assert condition(w, "InProgress")["message"] == "Restarting workload from checkpoint (restart 1/2)"
    assert w.trainjob() is None  # the stalled attempt was deleted; the next waits for its grace
    status = (w.gw.get(GOODPUT, w.ns, "llm-goodput") or {})["status"]
    assert "lastStepTimestamp" not in status and "applicationStartTime" not in status
    assert status["avgStepTimeSec"] == "" and status["lastCheckpointStep"] == 1200
    started = datetime.fromisoformat(status["startTime"].replace("Z", "+00:00"))
    assert abs(started - datetime.now(UTC)) < timedelta(seconds=60)
    assert "failureLog" not in w.job()["status"]


@pytest.mark.parametrize("average", ["2.5", "2.5s"], ids=["number", "with-unit"])
def test_a_stall_without_a_checkpoint_fails_the_job(world: Callable[..., World], average: str) -> None:
    """`2.5s` is read as CRE's `parseStallFloat` reads it (`fmt.Sscanf("%f")`): 2.5, the same stall."""
    w = world()
    create_job(w, nodes="gpu-node-02,gpu-node-01")
    hand_made_goodput(w)
    w.settle()
    w.trainer("run")  # the pods run
    w.settle()
    assert "workloadStartTime" in w.job()["status"]
    measure(w, **stalled_training(average=average))
    w.tick()
    w.settle()
    assert w.final() == ("Failed", "WorkloadStalled", 0)
    assert condition(w, "Failed")["message"] == TRAINING_MESSAGE
    status = w.job()["status"]
    assert status["failedNodes"] == [{"name": n, "reason": "WorkloadFailed", "message": TRAINING_MESSAGE}
                                     for n in ("gpu-node-01", "gpu-node-02")]
    assert status["failureLog"]["reason"] == "NoTerminatedContainer"  # running pods, none failed
    events = job_events(w.gw, w.ns)
    assert [(e["type"], e["reason"]) for e in events] == [("Normal", "WorkloadCreated"), ("Warning", "WorkloadStalled")]
    assert events[-1]["message"] == TRAINING_MESSAGE
    assert ("crefn-restart-stalls", "dev.crefn.job.condition.changed") in w.replies()
    assert w.trainjob() is not None  # as CRE: the Job fails, its TrainJob is kept


def test_a_job_stalled_on_its_first_running_sight_never_records_its_start(world: Callable[..., World]) -> None:
    w = world()
    hand_made_goodput(w, **stalled_training())  # the measurement of an earlier run, never reset
    create_job(w)
    w.settle()
    status = w.job()["status"]
    assert w.final() == ("Failed", "WorkloadStalled", 0)
    assert "workloadStartTime" not in status
    assert status["failureLog"]["reason"] == "PodNotFound"  # no pod was ever made


def restart_decides(cluster: LocalCluster, record: dict[str, Any]) -> str:
    """What `restart` decides for an event, in process (a 202's reason is logged, not answered)."""
    from functions.restart import read as restart
    from functions.runtime.context import Context
    from functions.runtime.settings import Settings

    ctx = Context(Settings(kubeconfig=str(cluster.kubeconfig)))
    plan = restart.decide(restart.read(to_envelope(record), ctx), ctx.settings, ctx.clock())
    assert not plan.effects and plan.reply is None
    return plan.reason


def test_stale_and_recovered_stall_events_change_nothing(world: Callable[..., World], cluster: LocalCluster,
                                                         functions: Callable[..., dict[str, str]]) -> None:
    urls = functions()
    w = world(urls)
    create_job(w, max_restarts=2)
    hand_made_goodput(w, avgStepTimeSec="2.5", lastStepTimestamp=now_at(-10 * S), lastCheckpointStep=100)
    w.settle()
    before = w.job()["metadata"]["resourceVersion"]
    cases = [(stalled_record(w.ns), "is not stalled on a fresh read"),
             (stalled_record(w.ns, attempt=3), "stale: TrainJob llm-workload attempt 3 is not the current attempt"),
             (stalled_record(w.ns, uid="not-the-trainjob"), "is not running on a fresh read")]
    for record, why in cases:
        assert send(urls["restart"], record).status == 202
        assert why in restart_decides(cluster, record)
    assert w.job()["metadata"]["resourceVersion"] == before
    w.trainer("suspend")
    w.settle()
    measure(w, lastStepTimestamp=now_at(-3600 * S))  # stale steps, but the workload is not running
    assert send(urls["restart"], stalled_record(w.ns)).status == 202
    assert "is not running on a fresh read" in restart_decides(cluster, stalled_record(w.ns))
    assert w.final() == ("InProgress", "WorkloadPending", 0)
    assert (w.gw.get(TRAINJOBS, w.ns, "llm-workload") or {}).get("metadata", {}).get("deletionTimestamp") is None


def test_fail_restart_exhausted_events_and_failed_nodes(functions: Callable[..., dict[str, str]], gateway: Gateway,
                                                        cluster: LocalCluster, namespace: str) -> None:
    world = make_world(gateway, namespace, functions(), duplicate=True)  # every event twice: still one Event each
    world.create_job(max_restarts=1)
    annotate_nodes(gateway, namespace, " gpu-node-11,gpu-node-07, gpu-node-11")
    world.checkpoint_evidence()
    world.settle()
    for step in ("run", "fail", "run", "fail"):
        world.trainer(step)
        world.settle()
    status = world.job()["status"]
    assert world.final() == ("Failed", "WorkloadFailed", 1)
    message = "Workload TrainJob/llm-workload failed: jobset node-0 failed: exit code 137 (OOMKilled)"
    assert status["failedNodes"] == [{"name": "gpu-node-07", "reason": "WorkloadFailed", "message": message},
                                     {"name": "gpu-node-11", "reason": "WorkloadFailed", "message": message}]
    events = job_events(gateway, namespace)
    assert [(e["type"], e["reason"], e["message"]) for e in events] == [
        ("Normal", "WorkloadCreated", "Workload TrainJob/llm-workload created and is starting"),
        ("Warning", "WorkloadFailed", message)]
    assert {e["reportingComponent"] for e in events} == {"crefn.dev/controller"}
    described = subprocess.run([kubectl(), "--kubeconfig", str(cluster.kubeconfig), "-n", namespace, "describe",
                                "jobs.nvcre.nvidia.com", "llm"], capture_output=True, text=True, check=True).stdout
    section = described.split("Events:", 1)[1]
    assert "WorkloadCreated" in section and "WorkloadFailed" in section and "Warning" in section


def test_first_attribution_wins_and_a_deleted_workload_attributes_nodes(functions: Callable[..., dict[str, str]],
                                                                       gateway: Gateway, namespace: str) -> None:
    world = make_world(gateway, namespace, functions())
    world.create_job(max_restarts=None)
    annotate_nodes(gateway, namespace, "gpu-node-03")
    world.settle()
    world.trainer("delete")
    world.settle()
    status = world.job()["status"]
    assert world.final() == ("Failed", "WorkloadFailed", 0)
    assert status["failedNodes"] == [{"name": "gpu-node-03", "reason": "WorkloadFailed",
                                      "message": "Workload TrainJob/llm-workload was deleted"}]

    world.create_job(name="hw", max_restarts=None)
    annotate_nodes(gateway, namespace, "gpu-node-03,gpu-node-04", job="hw")
    world.settle()
    earlier = [{"name": "gpu-node-09", "reason": "HardwareFailureDetected", "message": "xid 79"}]
    gateway.patch(JOBS, namespace, "hw", {"status": {"failedNodes": earlier}}, status=True)
    world.trainer("fail", job="hw")
    world.settle()
    assert world.final("hw")[:2] == ("Failed", "WorkloadFailed")
    assert world.job("hw")["status"]["failedNodes"] == earlier


def test_a_verdict_delivered_again_after_a_crash_sends_its_event_and_its_reply(
        gateway: Gateway, namespace: str, cluster: LocalCluster, functions: Callable[..., dict[str, str]]) -> None:
    """Killed after the Failed write, before its Event and its reply: the same event, delivered again, records the
    Event and answers the `job.condition.changed` that makes the WorkloadRun mirror the verdict; delivered once
    more (the Broker refused that answer), it answers again and records nothing twice; another event, or the
    same one past the hour, restates nothing."""
    from functions.restart import read as restart
    from functions.runtime.apply import apply
    from functions.runtime.context import Context
    from functions.runtime.effects import KubeEvent
    from functions.runtime.plan import Plan
    from functions.runtime.resources import cre_workloadruns
    from functions.runtime.settings import Settings
    from localstack.eventing.apisource import apiserver_record

    runs, jobs, ns = cre_workloadruns("nvcre.nvidia.com"), JOBS, namespace
    urls = functions()
    run = gateway.create(runs, ns, {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "WorkloadRun",
                                    "metadata": {"name": "wr", "labels": {"crefn.dev/managed": "true"}},
                                    "spec": {"image": "img", "numNodes": 1, "gpusPerNode": 1,
                                             "framework": {"exec": {"command": ["true"]}}}})
    assert send(urls["workloadrun"], apiserver_record("add", run, runs, gateway.host)).status == 202
    job = gateway.get(jobs, ns, "wr-job") or {}
    assert send(urls["launch"], apiserver_record("update", job, jobs, gateway.host)).status == 200
    gateway.patch(TRAINJOBS, ns, "wr-job-workload", {"status": {"conditions": [
        {"type": "Failed", "status": "True", "reason": "FailedJobs", "message": "node-0 failed",
         "lastTransitionTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}]}}, status=True)
    decided = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=40)
    failed = phase_record(ns, "wr-job", "Failed")
    failed["data"]["workload"]["uid"] = (gateway.get(TRAINJOBS, ns, "wr-job-workload") or {})["metadata"]["uid"]
    failed["data"]["observedAt"] = decided.strftime("%Y-%m-%dT%H:%M:%SZ")
    ctx = Context(Settings(kubeconfig=str(cluster.kubeconfig)), clock=lambda: decided)
    plan = restart.decide(restart.read(to_envelope(failed), ctx), ctx.settings, ctx.clock())
    assert [type(e) for e in plan.effects] == [WriteStatus, KubeEvent]
    apply(Plan(plan.effects[:1]), ctx)  # the verdict written, then the process dies
    assert job_events(gateway, ns, "wr-job")[-1]["reason"] == "WorkloadCreated"
    with pytest.raises(NotYet) as waited:  # 10 s after the write, its decider may still be at work
        restart.handle(to_envelope(failed), Context(ctx.settings, clock=lambda: decided + timedelta(seconds=10)))
    assert waited.value.retry_after == 20
    observing = Context(Settings(kubeconfig=str(cluster.kubeconfig), mode="observe"))
    assert restart.handle(to_envelope(failed), observing).reply is None  # the functions wrote nothing to restate

    answer = send(urls["restart"], failed)  # Knative delivers it again
    assert answer.status == 200 and answer.ce["type"] == "dev.crefn.job.condition.changed", answer.text
    assert answer.ce["jobcondition"] == "Failed"
    reply = json.loads(answer.body)
    assert reply["new"] == {"type": "Failed", "reason": "WorkloadFailed",
                            "message": "Workload TrainJob/wr-job-workload failed: node-0 failed"}
    assert reply["previous"] is None and reply["workloadRun"] == "wr"
    events = [(e["type"], e["reason"], e["message"]) for e in job_events(gateway, ns, "wr-job")]
    assert events[-1] == ("Warning", "WorkloadFailed", "Workload TrainJob/wr-job-workload failed: node-0 failed")
    cause = job_events(gateway, ns, "wr-job")[-1]["metadata"]["annotations"]["crefn.dev/cause"]
    assert cause == failed["attributes"]["id"]

    again = send(urls["restart"], failed)  # the Broker refused the answer: Knative retries
    assert again.status == 200 and json.loads(again.body)["new"] == reply["new"]
    assert [(e["type"], e["reason"], e["message"]) for e in job_events(gateway, ns, "wr-job")] == events
    assert send(urls["workloadrun"], {"attributes": answer.ce, "data": reply}).status == 202
    mirrored = [(c["type"], c["reason"]) for c in (gateway.get(runs, ns, "wr") or {})["status"]["conditions"]
                if c["status"] == "True"]
    assert mirrored == [("Failed", "WorkflowFailed")]

    raced = {"attributes": {**failed["attributes"], "id": "another-event"}, "data": failed["data"]}
    assert send(urls["restart"], raced).status == 202  # announced by the event that decided it
    later = datetime.now(UTC) + timedelta(hours=2)
    old = restart.handle(to_envelope(failed), Context(ctx.settings, clock=lambda: later))
    assert old.reply is None and "is terminal" in old.reason
