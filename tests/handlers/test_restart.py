"""`restart` over HTTP on the real API server, as its ServiceAccount (SPEC §6.3): forged and stale
failures, the Job's status when restarts run out, observe mode. The policy, pure: tests/rules/test_restart.py."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from functions.client import send
from functions.codec import to_envelope
from functions.gateway import Gateway
from functions.plan import WriteStatus
from functions.resources import TRAINJOBS, cre_goodput
from functions.settings import Settings
from localstack.cluster.apiserver import LocalCluster
from tests.support.world import JOBS, World, make_world, phase_record


def trainjob(conditions: list[dict[str, str]] | None = None, uid: str = "tj-uid",
             created: str = "2026-11-30T11:00:00Z") -> dict[str, Any]:
    """The attempt's TrainJob as read."""
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "llm-workload", "namespace": "ns", "uid": uid, "creationTimestamp": created},
            "spec": {"runtimeRef": {"name": "t"}}, "status": {"conditions": conditions or []}}


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
                                 "jobset node-0 failed: exit code 137 (OOMKilled) on gpu-node-11")
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


@pytest.mark.parametrize("grace", [30, 0], ids=["grace-30s", "no-grace"])
def test_a_crash_between_the_restarts_writes_never_leaves_a_commit_without_its_grace(
        world: Callable[..., World], cluster: LocalCluster, functions: Callable[..., dict[str, str]],
        namespace: str, grace: int) -> None:
    """The restart's plan cut after its first write (a crash): the Job is never committed without its grace
    (with no grace, the commit is the first write: there is none to record)."""
    from functions.apply import apply
    from functions.context import Context
    from functions.handlers import restart
    from functions.plan import Plan
    from functions.settings import Settings

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
    answer = send(functions(CREFN_RESTART_GRACE_SECONDS=str(grace))["launch"], w.job_record())
    assert answer.status != 503, answer.text  # never "restart recorded, its grace period not yet written"


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
    from functions.context import Context
    from functions.handlers import restart
    from functions.plan import Annotate, Delete
    from functions.settings import Settings

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


@pytest.mark.parametrize(("measurements", "evidence", "reads", "found"), [
    ({"llm-goodput": 5, "other": 0}, True, ["GET"], ["llm-goodput"]),
    ({"llm-goodput": 0, "a-earlier": 7}, True, ["GET", "GET"], ["a-earlier", "llm-goodput"]),
    ({"llm-goodput": 0, "a-earlier": 7}, False, ["GET"], ["llm-goodput"]),
    ({"a-earlier": 7, "b-later": 0}, False, ["GET", "GET"], ["a-earlier", "b-later"]),
    ({}, True, ["GET", "GET"], []),
], ids=["named-with-evidence", "named-without-evidence-lists", "named-for-the-stall", "unnamed-lists",
        "none"])
def test_the_jobs_goodput_measurement_is_one_get_when_it_has_its_name(
        cluster: LocalCluster, gateway: Gateway, namespace: str, measurements: dict[str, int], evidence: bool,
        reads: list[str], found: list[str]) -> None:
    """`<job>-goodput` is read by name, whatever else the namespace holds; only without it (or, for the
    evidence, without a checkpoint on it) are the namespace's measurements listed."""
    from functions.context import Context
    from functions.reads import read_goodputs, read_job
    from tests.handlers.test_resync import CountingGateway

    gm = cre_goodput("nvcre.nvidia.com")
    gateway.create(JOBS, namespace, {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                                     "metadata": {"name": "llm"},
                                     "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "t"}}}}})
    gateway.create(gm, namespace, {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "GoodputMeasurement",
                                   "metadata": {"name": "unrelated"},
                                   "spec": {"jobRef": {"name": "another-job", "kind": "Job"}, "logProfileRef": "p"}})
    for name, step in measurements.items():
        gateway.create(gm, namespace, {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "GoodputMeasurement",
                                       "metadata": {"name": name},
                                       "spec": {"jobRef": {"name": "llm", "kind": "Job"}, "logProfileRef": "p"}})
        gateway.patch(gm, namespace, name, {"status": {"lastCheckpointStep": step}}, status=True)
    counting = CountingGateway(cluster.gateway())
    ctx = Context(Settings(), gateway=counting)
    try:
        state = read_job(ctx, namespace, "llm")
        assert state is not None
        counting.calls.clear()
        got = read_goodputs(ctx, state, evidence)
        assert [method for method, _ in counting.calls] == reads
        assert [g["metadata"]["name"] for g in got] == found
    finally:
        counting.close()
