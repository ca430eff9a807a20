"""Job lifecycles on the real API server, every function over HTTP (SPEC §5, §6): each lifecycle
once as delivered, once with every event delivered twice, once with neighbouring events swapped, and
once driven by resync alone (no ApiServerSource events at all)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from functions.gateway import Gateway
from functions.resources import TRAINJOBS
from tests.kube.conftest import Relay
from tests.kube.lifecycle import World, make_world


@dataclass(frozen=True)
class Scenario:
    name: str
    steps: tuple[str, ...]
    final: tuple[str, str, int]
    trainjobs: int
    max_restarts: int | None = 2
    evidence: bool = True
    suspend: bool = False


SCENARIOS = [
    Scenario("happy-path", ("run", "complete"), ("Succeeded", "WorkloadCompleted", 0), 1),
    Scenario("fail-restart-twice-then-succeed", ("run", "fail", "run", "fail", "run", "complete"),
             ("Succeeded", "WorkloadCompleted", 2), 3),
    Scenario("restarts-exhausted", ("run", "fail", "run", "fail"), ("Failed", "WorkloadFailed", 1), 2,
             max_restarts=1),
    Scenario("trainjob-deleted-by-hand-restarts", ("run", "delete", "run", "complete"),
             ("Succeeded", "WorkloadCompleted", 1), 2),
    Scenario("suspended-pending-then-running", ("resume", "run", "complete"), ("Succeeded", "WorkloadCompleted", 0),
             1, suspend=True),
    Scenario("no-checkpoint-fails", ("run", "fail"), ("Failed", "WorkloadFailed", 0), 1, max_restarts=None),
    Scenario("no-evidence-fails", ("run", "fail"), ("Failed", "WorkloadFailed", 0), 1, evidence=False),
]
DELIVERY = {"once": {}, "twice": {"duplicate": True}, "swapped": {"swap": True}}


def start(world: World, sc: Scenario) -> None:
    world.create_job(max_restarts=sc.max_restarts, suspend=sc.suspend)
    if sc.evidence:
        world.checkpoint_evidence()


@pytest.mark.parametrize("delivery", list(DELIVERY))
@pytest.mark.parametrize("sc", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_lifecycle(sc: Scenario, delivery: str, functions: Callable[..., dict[str, str]], gateway: Gateway,
                   namespace: str) -> None:
    world = make_world(gateway, namespace, functions(), **DELIVERY[delivery])
    start(world, sc)
    world.settle()
    if sc.suspend:
        assert world.final()[:2] == ("InProgress", "WorkloadPending"), world.dump()
    for step in sc.steps:
        world.trainer(step)
        world.settle()
    assert world.final() == sc.final, world.dump()
    assert world.trainjobs_created() == sc.trainjobs
    assert not world.bus.dead_letters, world.bus.dead_letters


@pytest.mark.parametrize("sc", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_resync_alone_reaches_the_same_end(sc: Scenario, functions: Callable[..., dict[str, str]],
                                           gateway: Gateway, namespace: str, relay: Relay) -> None:
    world = make_world(gateway, namespace, functions(), poll=False)
    world.resync_url = functions()["resync"]
    relay.bus, relay.received = world.bus, []
    start(world, sc)
    world.tick()
    for step in sc.steps:
        world.trainer(step)
        world.tick()
    assert world.final() == sc.final, world.dump()
    uids = {r["data"]["workload"]["uid"] for r in relay.received
            if r["attributes"]["type"] == "dev.crefn.workload.created" and r["attributes"]["namespace"] == namespace}
    assert len(uids) == sc.trainjobs


def test_failed_nodes_and_messages_when_restarts_run_out(functions: Callable[..., dict[str, str]],
                                                          gateway: Gateway, namespace: str) -> None:
    world = make_world(gateway, namespace, functions())
    world.create_job(max_restarts=0)
    world.checkpoint_evidence()
    world.settle()
    world.trainer("fail")
    world.settle()
    status = world.job()["status"]
    failed = next(c for c in status["conditions"] if c["type"] == "Failed")
    assert failed["message"] == "Workload TrainJob/llm-workload failed: jobset node-0 failed: exit code 137"
    assert [(n["name"], n["reason"]) for n in status["failedNodes"]] == [
        ("gpu-node-07", "WorkloadFailed"), ("gpu-node-11", "WorkloadFailed")]
    others = {c["type"]: c for c in status["conditions"] if c["type"] != "Failed"}
    assert {k: (v["status"], v["reason"], v["message"]) for k, v in others.items()} == {
        "InProgress": ("False", "NotApplicable", ""), "Succeeded": ("False", "NotApplicable", "")}
    assert all(c["observedGeneration"] == world.job()["metadata"]["generation"] for c in status["conditions"])
    changed = [e for e in world.bus.log if e.reply_type == "dev.crefn.job.condition.changed"]
    assert [e.function for e in changed][-1] == "restart"


def test_launch_labels_owner_and_workload_ref(functions: Callable[..., dict[str, str]], gateway: Gateway,
                                              namespace: str) -> None:
    world = make_world(gateway, namespace, functions())
    job = world.create_job()
    world.settle()
    tj = world.trainjob()
    assert tj is not None
    assert tj["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "cre-functions", "nvcre.nvidia.com/job": "llm",
                                        "crefn.dev/attempt": "0", "crefn.dev/managed": "true"}
    owner = tj["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == ("Job", "llm", job["metadata"]["uid"],
                                                                                  True)
    assert tj["spec"]["trainer"]["numNodes"] == 2
    status = world.job()["status"]
    assert status["workloadRef"] == {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                     "name": "llm-workload", "namespace": namespace}
    in_progress = next(c for c in status["conditions"] if c["type"] == "InProgress")
    assert in_progress["status"] == "True"
    assert "workloadStartTime" in status  # the TrainJob's first phase is Running


def test_observe_mode_writes_nothing_and_still_emits(functions: Callable[..., dict[str, str]], gateway: Gateway,
                                                     namespace: str) -> None:
    world = make_world(gateway, namespace, functions(CREFN_MODE="observe"))
    job = world.create_job()
    world.checkpoint_evidence()
    # CRE's own controller launched the workload
    tj = gateway.create(TRAINJOBS, namespace, {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": "llm-workload", "labels": {"crefn.dev/attempt": "0"}, "ownerReferences": [{
            "apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": "llm", "uid": job["metadata"]["uid"],
            "controller": True}]},
        "spec": {"runtimeRef": {"name": "torch-distributed"}}})
    gateway.patch(world.source.resources[1], namespace, "llm", {"status": {"workloadRef": {  # type: ignore[union-attr]
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "llm-workload",
        "namespace": namespace}}}, status=True)
    before = world.job()["metadata"]["resourceVersion"]
    world.settle()
    world.trainer("fail")
    world.settle()
    assert world.job()["metadata"]["resourceVersion"] == before
    assert (world.trainjob() or {})["metadata"]["uid"] == tj["metadata"]["uid"]
    replies = {e.reply_type for e in world.bus.log if e.reply_type}
    assert {"dev.crefn.workload.phase", "dev.crefn.job.condition.changed", "dev.crefn.job.restarted"} <= replies


def test_legacy_cre_group(functions: Callable[..., dict[str, str]], gateway: Gateway, namespace: str) -> None:
    """CREFN_CRE_GROUP=cre.nvidia.com: early CRE releases, the same lifecycle, labels in that group."""
    world = make_world(gateway, namespace, functions(CREFN_CRE_GROUP="cre.nvidia.com"), group="cre.nvidia.com")
    world.create_job()
    world.checkpoint_evidence()
    world.settle()
    tj = world.trainjob()
    assert tj is not None and tj["metadata"]["labels"]["cre.nvidia.com/job"] == "llm"
    assert tj["metadata"]["ownerReferences"][0]["apiVersion"] == "cre.nvidia.com/v1alpha1"
    for step in ("run", "fail", "run", "complete"):
        world.trainer(step)
        world.settle()
    assert world.final() == ("Succeeded", "WorkloadCompleted", 1)
    assert world.trainjobs_created() == 2


@pytest.mark.parametrize("manage_all", [False, True], ids=["labelled-only", "manage-all"])
def test_unlabelled_jobs_are_managed_only_with_manage_all(manage_all: bool, functions: Callable[..., dict[str, str]],
                                                          gateway: Gateway, namespace: str) -> None:
    urls = functions(CREFN_MANAGE_ALL="true") if manage_all else functions()
    world = make_world(gateway, namespace, urls)
    world.create_job(managed=False)
    world.settle()
    assert (world.trainjob() is not None) is manage_all
    if manage_all:
        assert "crefn.dev/managed" not in (world.trainjob() or {})["metadata"]["labels"]
    else:
        assert {d.status for d in world.bus.log if d.function == "launch"} == {202}
