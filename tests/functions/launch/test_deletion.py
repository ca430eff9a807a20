"""CRE's deletion of a Job finished by `launch` (and the resync tick) on the real API server, as its ServiceAccount:
a Job carrying CRE's finalizer `nvcre.nvidia.com/finalizer` is kept while its pods run, its TrainJob deleted at
once, and released (the finalizer removed, the API server deleting it) once they end, or five minutes after its
deletion with an injected clock; observe mode touches nothing. The decision, pure: tests/domain/test_deletion.py."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from functions.domain.conditions import parse_rfc3339
from functions.runtime.client import Answer, send
from functions.runtime.gateway import Gateway
from functions.runtime.resources import TRAINJOBS
from localstack.cluster.apiserver import LocalCluster
from localstack.cluster.pods import create_pod, set_running, terminate
from localstack.eventing.apisource import apiserver_record
from localstack.manifests import service_account_user
from tests.support.inprocess import InProcessFunction
from tests.support.world import JOBS, World

CRE_FINALIZER = "nvcre.nvidia.com/finalizer"  # CRE's, verbatim


def cres_job_with_running_pods(w: World, gateway: Gateway, namespace: str) -> dict[str, Any]:
    """A Job as CRE leaves it: its finalizer, its TrainJob (no attempt label) and two running pods; then deleted."""
    job = w.create_job()
    gateway.patch(JOBS, namespace, "llm", {"metadata": {"finalizers": [CRE_FINALIZER]}})
    gateway.create(TRAINJOBS, namespace, {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": "llm-workload", "labels": {"app.kubernetes.io/managed-by": "nvcre",
                                                        "nvcre.nvidia.com/job": "llm"},
                     "ownerReferences": [{"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": "llm",
                                          "uid": job["metadata"]["uid"], "controller": True}]},
        "spec": {"runtimeRef": {"name": "torch-distributed"}}})
    for name in ("llm-workload-node-0-0", "llm-workload-node-0-1"):
        create_pod(gateway, namespace, name, {"nvcre.nvidia.com/job": "llm"}, node="gpu-node-1")
        set_running(gateway, namespace, name)
    gateway.delete(JOBS, namespace, "llm")
    deleted = w.job()
    assert deleted["metadata"]["deletionTimestamp"] and deleted["metadata"]["finalizers"] == [CRE_FINALIZER]
    return deleted


def answer_of(cluster: LocalCluster, target: str, record: Any, clock: Callable[[], datetime] | None = None,
              **env: str) -> Answer:
    """One event to `target` served in this process as its ServiceAccount (with `clock`, when given)."""
    kubeconfig = str(cluster.kubeconfig_for(service_account_user(f"crefn-{target}")))
    served = InProcessFunction(target, {"CREFN_KUBECONFIG": kubeconfig, **env}, clock=clock).start()
    try:
        return send(served.url, record)
    finally:
        served.stop()


def test_a_deleted_job_is_kept_while_its_pods_run_and_gone_once_they_end(
        functions: Callable[..., dict[str, str]], world: Callable[..., World], gateway: Gateway,
        namespace: str) -> None:
    urls = functions()
    w = world(urls)
    cres_job_with_running_pods(w, gateway, namespace)
    waiting = send(urls["launch"], w.job_record())
    assert waiting.status == 503 and waiting.headers["retry-after"] == "15", waiting.text
    assert waiting.text == (f"Job {namespace}/llm is being deleted: its pods have not ended (llm-workload-node-0-0, "
                            "llm-workload-node-0-1)")
    assert gateway.get(TRAINJOBS, namespace, "llm-workload") is None  # deleted at once, as CRE does
    assert w.job()["metadata"]["finalizers"] == [CRE_FINALIZER]
    terminate(gateway, namespace, "llm-workload-node-0-0", {"node": (0, "Completed")})
    assert send(urls["launch"], w.job_record()).status == 503  # one still runs
    terminate(gateway, namespace, "llm-workload-node-0-1", {"node": (137, "OOMKilled")})
    record = w.job_record()
    done = send(urls["launch"], record)
    assert done.status == 202, done.text
    assert gateway.get(JOBS, namespace, "llm") is None
    assert send(urls["launch"], record).status == 202  # the same event again: the Job is gone, nothing to do


def test_pods_that_never_end_hold_the_job_five_minutes_then_it_is_released(
        world: Callable[..., World], gateway: Gateway, namespace: str, cluster: LocalCluster) -> None:
    w = world()
    deleted = cres_job_with_running_pods(w, gateway, namespace)
    at = parse_rfc3339(deleted["metadata"]["deletionTimestamp"])
    assert at is not None
    for after, still_there in ((timedelta(minutes=5) - timedelta(seconds=1), True), (timedelta(minutes=5), False)):
        now = at + after
        answer = answer_of(cluster, "launch", w.job_record(), clock=lambda: now)  # noqa: B023 (used at once)
        assert answer.status == (503 if still_there else 202), answer.text
        assert (gateway.get(JOBS, namespace, "llm") is not None) is still_there


def test_the_tick_finishes_what_the_event_left_waiting(world: Callable[..., World], gateway: Gateway,
                                                       namespace: str, cluster: LocalCluster) -> None:
    """The Broker's retries for the Job's event ran out while the pods ran: the resync tick finishes it."""
    w = world()
    cres_job_with_running_pods(w, gateway, namespace)
    for name in ("llm-workload-node-0-0", "llm-workload-node-0-1"):
        terminate(gateway, namespace, name, {"node": (0, "Completed")})
    tick = {"attributes": {"specversion": "1.0", "id": "tick", "source": "/ping", "type": "dev.knative.sources.ping"},
            "data": {}}
    answer = answer_of(cluster, "resync", tick, K_SINK="http://127.0.0.1:9/")
    assert answer.status in (200, 202), answer.text
    assert gateway.get(JOBS, namespace, "llm") is None
    assert gateway.get(TRAINJOBS, namespace, "llm-workload") is None


def test_the_tick_keeps_a_deleted_job_while_one_of_its_pods_runs(world: Callable[..., World], gateway: Gateway,
                                                                  namespace: str, cluster: LocalCluster) -> None:
    """The tick reads the pods of a Job whose deletion it finishes: while one still runs, the TrainJob is deleted
    and the Job keeps CRE's finalizer (a later tick looks again)."""
    from functions.resync import read as resync
    from functions.runtime.context import Context
    from functions.runtime.settings import Settings

    w = world()
    cres_job_with_running_pods(w, gateway, namespace)
    terminate(gateway, namespace, "llm-workload-node-0-0", {"node": (0, "Completed")})
    ctx = Context(Settings(kubeconfig=str(cluster.kubeconfig), k_sink="http://127.0.0.1:9/"), gateway=cluster.gateway())
    try:
        result = resync.resync_job(w.job(), {}, ctx)
    finally:
        ctx.gateway.close()
    assert (result.job, result.event, result.error) == (f"{namespace}/llm", "", "")
    assert w.job()["metadata"]["finalizers"] == [CRE_FINALIZER]
    assert gateway.get(TRAINJOBS, namespace, "llm-workload") is None
    gateway.patch(JOBS, namespace, "llm", {"metadata": {"finalizers": None}})  # gone: no later tick meets it


def test_observe_mode_touches_nothing(world: Callable[..., World], gateway: Gateway, namespace: str,
                                      cluster: LocalCluster) -> None:
    w = world()
    cres_job_with_running_pods(w, gateway, namespace)
    for name in ("llm-workload-node-0-0", "llm-workload-node-0-1"):
        terminate(gateway, namespace, name, {"node": (0, "Completed")})
    answer = answer_of(cluster, "launch", apiserver_record("update", w.job(), JOBS, gateway.host), CREFN_MODE="observe")
    assert answer.status == 202, answer.text
    assert w.job()["metadata"]["finalizers"] == [CRE_FINALIZER]
    assert gateway.get(TRAINJOBS, namespace, "llm-workload") is not None
