"""SPEC §4.3 on the real API server: each retry answer of the lifecycle functions, for real."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from events.emitted import JobRef, WorkloadPhaseData, WorkloadRef
from events.types import Phase
from functions.apply import run
from functions.context import Context
from functions.errors import Conflict
from functions.gateway import Gateway
from functions.plan import Plan
from functions.reads import read_job
from functions.resources import TRAINJOBS
from functions.rules.jobs import JobState, write_status
from functions.settings import Settings
from functions.transport import send
from localstack.apiserver import LocalCluster
from tests.kube.conftest import Relay
from tests.kube.lifecycle import JOBS, World, make_world, ping


def phase_record(ns: str, job: str, phase: str, attempt: int = 0, reason: str = "") -> dict[str, Any]:
    data = WorkloadPhaseData(job=JobRef(name=job, namespace=ns),
                             workload=WorkloadRef(api_version="trainer.kubeflow.org/v1alpha1", kind="TrainJob",
                                                  name=f"{job}-workload", namespace=ns, attempt=attempt),
                             phase=Phase(phase), reason=reason, observed_at=datetime.now(UTC))
    return {"attributes": {"specversion": "1.0", "id": "x", "source": "/crefn/phase",
                           "type": "dev.crefn.workload.phase", "subject": f"{ns}/{job}", "workloadphase": phase,
                           "namespace": ns, "job": job, "partitionkey": f"{ns}/{job}"},
            "data": data.model_dump(mode="json", by_alias=True)}


def job_record(world: World, name: str = "llm") -> dict[str, Any]:
    from localstack.apisource import apiserver_record

    return apiserver_record("update", world.job(name), JOBS, world.gw.host)


def test_status_write_on_a_stale_resource_version_retries_once_then_409(cluster: LocalCluster, gateway: Gateway,
                                                                         namespace: str) -> None:
    world = make_world(gateway, namespace, {})
    world.create_job()
    ctx = Context(Settings(kubeconfig=str(cluster.kubeconfig)))
    seen: list[str] = []

    def read() -> JobState:
        state = read_job(ctx, namespace, "llm")
        assert state is not None
        seen.append(state.job.metadata.resource_version)
        return state

    def decide_racing(state: JobState, settings: Settings, now: datetime) -> Plan:
        # another writer changes the Job between our read and our write, every time
        gateway.patch(JOBS, namespace, "llm", {"metadata": {"labels": {"n": str(len(seen))}}})
        return Plan((write_status(state, {"restartCount": 1}, settings.cre_group),))

    with pytest.raises(Conflict):
        run(ctx, read, decide_racing)
    assert len(seen) == 2 and seen[0] != seen[1]
    assert "restartCount" not in (world.job().get("status") or {})

    seen.clear()

    def decide_once(state: JobState, settings: Settings, now: datetime) -> Plan:
        if len(seen) == 1:
            gateway.patch(JOBS, namespace, "llm", {"metadata": {"labels": {"n": "x"}}})
        return Plan((write_status(state, {"restartCount": 1}, settings.cre_group),))

    run(ctx, read, decide_once)
    assert len(seen) == 2 and world.job()["status"]["restartCount"] == 1


def test_trainjob_held_by_a_finalizer_is_503_until_it_is_gone(functions: Callable[..., dict[str, str]],
                                                              gateway: Gateway, namespace: str) -> None:
    urls = functions()
    world = make_world(gateway, namespace, urls)
    job = world.create_job()
    gateway.patch(JOBS, namespace, "llm", {"status": {"restartCount": 1}}, status=True)
    gateway.create(TRAINJOBS, namespace, {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": "llm-workload", "labels": {"crefn.dev/attempt": "0"}, "finalizers": ["example.com/x"],
                     "ownerReferences": [{"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": "llm",
                                          "uid": job["metadata"]["uid"], "controller": True}]},
        "spec": {"runtimeRef": {"name": "torch"}}})
    gateway.delete(TRAINJOBS, namespace, "llm-workload")
    answer = send(urls["launch"], job_record(world))
    assert answer.status == 503 and "terminating" in answer.text
    gateway.patch(TRAINJOBS, namespace, "llm-workload", {"metadata": {"finalizers": None}})
    answer = send(urls["launch"], job_record(world))
    assert answer.status == 200 and answer.ce["type"] == "dev.crefn.workload.created"
    assert (world.trainjob() or {})["metadata"]["labels"]["crefn.dev/attempt"] == "1"


def test_stale_attempt_is_deleted_and_503(functions: Callable[..., dict[str, str]], gateway: Gateway,
                                          namespace: str) -> None:
    urls = functions()
    world = make_world(gateway, namespace, urls)
    world.create_job()
    world.settle()
    old = world.trainjob()
    assert old is not None
    gateway.patch(JOBS, namespace, "llm", {"status": {"restartCount": 1, "workloadRef": None}}, status=True)
    answer = send(urls["launch"], job_record(world))
    assert answer.status == 503 and "earlier attempt" in answer.text
    assert world.trainjob() is None
    assert send(urls["launch"], job_record(world)).status == 200


def test_name_collision_fails_the_job(functions: Callable[..., dict[str, str]], gateway: Gateway,
                                      namespace: str) -> None:
    urls = functions()
    world = make_world(gateway, namespace, urls)
    gateway.create(TRAINJOBS, namespace, {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                          "metadata": {"name": "llm-workload"}, "spec": {"runtimeRef": {"name": "t"}}})
    world.create_job()
    answer = send(urls["launch"], job_record(world))
    assert answer.status == 200 and answer.ce["jobcondition"] == "Failed"
    assert answer.json()["new"]["reason"] == "WorkloadCreationError"
    assert "already exists and is not owned by Job llm" in answer.json()["new"]["message"]
    assert send(urls["launch"], job_record(world)).status == 202  # terminal now


def test_restart_grace_is_503_until_over_then_resync_launches(functions: Callable[..., dict[str, str]],
                                                              gateway: Gateway, namespace: str, relay: Relay) -> None:
    urls = functions(CREFN_RESTART_GRACE_SECONDS="30")
    world = make_world(gateway, namespace, urls)
    world.create_job()
    world.checkpoint_evidence()
    world.settle()
    world.trainer("fail")
    world.settle()
    job = world.job()
    assert job["status"]["restartCount"] == 1 and "workloadRef" not in job["status"]
    not_before = job["metadata"]["annotations"]["crefn.dev/restart-not-before"]
    assert datetime.fromisoformat(not_before.replace("Z", "+00:00")) > datetime.now(UTC) + timedelta(seconds=20)
    launches = [d for d in world.bus.log if d.function == "launch"]
    assert launches[-1].status == 503 and "restart grace not over" in launches[-1].reason
    # Knative retried until its retries ran out; the dead letters say why
    assert {d.reason.split(":")[0] for d in world.bus.dead_letters} == {"restart grace not over"}
    answer = send(urls["launch"], job_record(world))
    assert answer.status == 503 and "restart grace not over" in answer.text
    # the grace ends (here: moved into the past); the next resync tick launches attempt 1
    past = (datetime.now(UTC) - timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    gateway.patch(JOBS, namespace, "llm", {"metadata": {"annotations": {"crefn.dev/restart-not-before": past}}})
    relay.bus, relay.received = world.bus, []
    assert send(urls["resync"], ping()).status == 202
    ours = [r for r in relay.received if r["attributes"]["namespace"] == namespace]
    assert [r["attributes"]["type"] for r in ours] == ["dev.crefn.workload.created"]
    assert (world.trainjob() or {})["metadata"]["labels"]["crefn.dev/attempt"] == "1"


def test_object_gone_is_202(functions: Callable[..., dict[str, str]], namespace: str) -> None:
    urls = functions()
    for target, phase in (("status", "Running"), ("restart", "Failed")):
        answer = send(urls[target], phase_record(namespace, "never-was", phase))
        assert answer.status == 202, (target, answer.text)


def test_stale_and_forged_failed_events_do_not_restart(functions: Callable[..., dict[str, str]], gateway: Gateway,
                                                       namespace: str) -> None:
    urls = functions()
    world = make_world(gateway, namespace, urls)
    world.create_job()
    world.checkpoint_evidence()
    world.settle()
    world.trainer("run")
    world.settle()
    # forged: says Failed, but the TrainJob is running on a fresh read
    assert send(urls["restart"], phase_record(namespace, "llm", "Failed")).status == 202
    # stale: an older attempt
    assert send(urls["restart"], phase_record(namespace, "llm", "Failed", attempt=5)).status == 202
    assert world.final() == ("InProgress", "WorkloadRunning", 0)
    assert (world.trainjob() or {}).get("metadata", {}).get("deletionTimestamp") is None


def test_bad_events_are_400(functions: Callable[..., dict[str, str]], namespace: str) -> None:
    urls = functions()
    record = phase_record(namespace, "llm", "Running")
    record["data"]["phase"] = "Exploded"
    answer = send(urls["status"], record)
    assert answer.status == 400 and "invalid dev.crefn.workload.phase data: phase" in answer.text
    batch_job = {"attributes": {**phase_record(namespace, "x", "Running")["attributes"],
                                "type": "dev.knative.apiserver.resource.update"},
                 "data": {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x", "namespace": namespace}}}
    answer = send(urls["launch"], batch_job)
    assert answer.status == 400 and "expected nvcre.nvidia.com/v1alpha1 Job, got batch/v1/Job" in answer.text
    answer = send(urls["resync"], {"attributes": record["attributes"], "data": {}})
    assert answer.status == 400


def test_api_server_stopped_mid_test_is_503_then_recovers(functions: Callable[..., dict[str, str]],
                                                          cluster: LocalCluster, gateway: Gateway,
                                                          namespace: str) -> None:
    urls = functions(CREFN_KUBE_TIMEOUT_SECONDS="3")
    world = make_world(gateway, namespace, urls)
    world.create_job()
    record = job_record(world)
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
                                                           gateway: Gateway, namespace: str) -> None:
    urls = functions()
    world = make_world(gateway, namespace, urls)
    world.create_job()
    record = job_record(world)
    answers: list[int] = []
    threads = [threading.Thread(target=lambda: answers.append(send(urls["launch"], record).status))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(answers) <= {200, 202, 409} and 200 in answers
    assert len(gateway.list_all(TRAINJOBS, namespace)) == 1


def test_adopt_after_a_lost_status_write(functions: Callable[..., dict[str, str]], gateway: Gateway,
                                         namespace: str) -> None:
    urls = functions()
    world = make_world(gateway, namespace, urls)
    world.create_job()
    world.settle()
    tj = world.trainjob()
    assert tj is not None
    gateway.patch(JOBS, namespace, "llm", {"status": {"workloadRef": None}}, status=True)  # as if never recorded
    answer = send(urls["launch"], job_record(world))
    assert answer.status == 200 and answer.json()["adopted"] is True
    assert answer.json()["workload"]["uid"] == tj["metadata"]["uid"]
    status = world.job()["status"]
    assert status["workloadRef"]["name"] == "llm-workload"
    assert world.final()[:2] == ("InProgress", "WorkloadAdopted")



def test_the_real_crd_rejects_a_job_without_a_workload_variant(gateway: Gateway, namespace: str) -> None:
    """`launch`'s "no trainJob" path (unit-tested) is for variants of newer CRE releases: today's CRD
    refuses a Job whose workload names none."""
    from functions.errors import PermanentError

    with pytest.raises(PermanentError, match=r"spec\.workload in body should have at least 1 properties"):
        gateway.create(JOBS, namespace, {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                                         "metadata": {"name": "llm"}, "spec": {"workload": {}}})
