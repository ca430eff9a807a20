"""`measurements` on the real API server with the real GoodputMeasurement and BandwidthMeasurement CRDs,
as its ServiceAccount: created with the right bodies, labels and owner once the workload is created; an
existing one (or one created in a race) is left as it is; a create the API refuses is a Warning Event and
a 202, never a retry nor a verdict. The bodies, pure: tests/rules/test_measurements.py."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from events.emitted import JobRef, WorkloadCreatedData, WorkloadRef
from functions.client import send
from functions.codec import to_envelope
from functions.gateway import Gateway
from functions.resources import cre_goodput
from functions.rules.measurements import (
    bandwidth_measurements,
    goodput_name,
)
from localstack.cluster.apiserver import LocalCluster
from tests.support.helpers import job_events
from tests.support.webhook import DenyingWebhook
from tests.support.world import GROUP, JOBS, World

GOODPUT = cre_goodput(GROUP)
BANDWIDTH = bandwidth_measurements(GROUP)


# -- on the real API server ----------------------------------------------------------------------

def create_job(gw: Gateway, ns: str, name: str = "llm", goodput: dict[str, str] | None = None,
               bandwidth: dict[str, str] | None = None, managed: bool = True) -> dict[str, Any]:
    spec: dict[str, Any] = {"workload": {"trainJob": {"runtimeRef": {"name": "torch-distributed"}}}}
    if goodput:
        spec["goodputMeasurement"] = goodput
    if bandwidth:
        spec["bandwidthMeasurement"] = bandwidth
    labels = {"crefn.dev/managed": "true"} if managed else {}
    return gw.create(JOBS, ns, {"apiVersion": f"{GROUP}/v1alpha1", "kind": "Job",
                                "metadata": {"name": name, "labels": labels}, "spec": spec})


def launched(gw: Gateway, ns: str, name: str = "llm") -> None:
    """What `launch` records before it announces the workload."""
    gw.patch(JOBS, ns, name, {"status": {"workloadRef": {"apiVersion": "trainer.kubeflow.org/v1alpha1",
                                                         "kind": "TrainJob", "name": f"{name}-workload",
                                                         "namespace": ns}}}, status=True)


def created_record(ns: str, name: str = "llm") -> dict[str, Any]:
    """A `dev.crefn.workload.created` event as `launch` sends it."""
    data = WorkloadCreatedData(job=JobRef(name=name, namespace=ns),
                               workload=WorkloadRef(api_version="trainer.kubeflow.org/v1alpha1", kind="TrainJob",
                                                    name=f"{name}-workload", namespace=ns, attempt=0),
                               attempt=0, adopted=False)
    return {"attributes": {"specversion": "1.0", "id": "c", "source": "/crefn/launch",
                           "type": "dev.crefn.workload.created", "subject": f"{ns}/{name}", "namespace": ns,
                           "job": name, "partitionkey": f"{ns}/{name}"},
            "data": data.model_dump(mode="json", by_alias=True)}


def test_the_lifecycle_creates_the_measurements_cre_would(world: Callable[..., World]) -> None:
    w = world()
    made = create_job(w.gw, w.ns, goodput={"logProfileRef": "nemo", "sampleInterval": "45s"},
                      bandwidth={"logProfileRef": "nccl", "testType": "all_reduce"})
    w.settle()
    assert [a.status for a in w.answers("measurements")] == [202]
    owner = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": "llm",
             "uid": made["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
    labels = {"app.kubernetes.io/managed-by": "cre-functions", "nvcre.nvidia.com/job": "llm"}
    gm, bm = w.gw.get(GOODPUT, w.ns, "llm-goodput"), w.gw.get(BANDWIDTH, w.ns, "llm-bandwidth")
    assert gm is not None and bm is not None
    assert gm["metadata"]["labels"] == labels and gm["metadata"]["ownerReferences"] == [owner]
    assert gm["spec"] == {"jobRef": {"apiGroup": "nvcre.nvidia.com", "kind": "Job", "name": "llm"},
                          "logProfileRef": "nemo", "sampleInterval": "45s"}
    assert bm["metadata"]["labels"] == labels and bm["metadata"]["ownerReferences"] == [owner]
    assert bm["spec"] == {"jobRef": {"apiGroup": "nvcre.nvidia.com", "kind": "Job", "name": "llm"},
                          "logProfileRef": "nccl", "testType": "all_reduce"}


def test_existing_measurements_are_left_as_they_are(functions: Callable[..., dict[str, str]], gateway: Gateway,
                                                    namespace: str) -> None:
    create_job(gateway, namespace, goodput={"logProfileRef": "nemo"}, bandwidth={"logProfileRef": "nccl"})
    launched(gateway, namespace)
    handmade = gateway.create(GOODPUT, namespace, {
        "apiVersion": f"{GROUP}/v1alpha1", "kind": "GoodputMeasurement", "metadata": {"name": "llm-goodput"},
        "spec": {"jobRef": {"kind": "Job", "name": "llm"}, "logProfileRef": "by-hand"}})
    url = functions()["measurements"]
    assert send(url, created_record(namespace)).status == 202
    gm = gateway.get(GOODPUT, namespace, "llm-goodput") or {}
    assert gm["metadata"]["uid"] == handmade["metadata"]["uid"] and gm["spec"]["logProfileRef"] == "by-hand"
    assert gateway.get(BANDWIDTH, namespace, "llm-bandwidth") is not None
    assert send(url, created_record(namespace)).status == 202  # redelivered: nothing more


def test_an_event_saying_no_measurement_is_asked_creates_nothing(functions: Callable[..., dict[str, str]],
                                                                  gateway: Gateway, namespace: str) -> None:
    """`measurements: []` (launch says the Job's spec asks for none) is answered unread: about a Job that asks
    for one (forged), it only skips the work, which the same event without the field (an earlier release's)
    does."""
    create_job(gateway, namespace, goodput={"logProfileRef": "nemo"})
    launched(gateway, namespace)
    url = functions()["measurements"]
    none_asked = created_record(namespace)
    none_asked["data"]["measurements"] = []
    assert send(url, none_asked).status == 202
    assert gateway.get(GOODPUT, namespace, "llm-goodput") is None
    assert send(url, created_record(namespace)).status == 202
    assert gateway.get(GOODPUT, namespace, "llm-goodput") is not None


def test_a_name_taken_in_a_race_is_read_again(cluster: LocalCluster, gateway: Gateway, namespace: str) -> None:
    """The create meets AlreadyExists (the read said the name was free): the function reads again, finds
    the GoodputMeasurement there, leaves it as it is and creates only the BandwidthMeasurement."""
    from functions.apply import run
    from functions.context import Context
    from functions.handlers import measurements
    from functions.settings import Settings

    create_job(gateway, namespace, goodput={"logProfileRef": "nemo"}, bandwidth={"logProfileRef": "nccl"})
    launched(gateway, namespace)
    ctx = Context(Settings(kubeconfig=str(cluster.kubeconfig)))
    env = to_envelope(created_record(namespace))
    before = measurements.read(env, ctx)  # both names free
    gateway.create(GOODPUT, namespace, {"apiVersion": f"{GROUP}/v1alpha1", "kind": "GoodputMeasurement",
                                        "metadata": {"name": "llm-goodput"},
                                        "spec": {"jobRef": {"kind": "Job", "name": "llm"}, "logProfileRef": "won"}})
    reads = [before]
    outcome = run(ctx, lambda: reads.pop() if reads else measurements.read(env, ctx), measurements.decide)
    assert outcome.reply is None and "created BandwidthMeasurement llm-bandwidth" in outcome.reason
    assert (gateway.get(GOODPUT, namespace, "llm-goodput") or {})["spec"]["logProfileRef"] == "won"
    assert gateway.get(BANDWIDTH, namespace, "llm-bandwidth") is not None  # decided again on the second read


def test_a_refused_create_is_a_warning_and_never_keeps_the_other_back(
        functions: Callable[..., dict[str, str]], gateway: Gateway, namespace: str, tmp_path: Path) -> None:
    name = f"refused-{uuid.uuid4().hex[:6]}"
    create_job(gateway, namespace, name, goodput={"logProfileRef": "nemo"}, bandwidth={"logProfileRef": "nccl"})
    launched(gateway, namespace, name)
    probe = {"apiVersion": f"{GROUP}/v1alpha1", "kind": "GoodputMeasurement",
             "metadata": {"name": "probe", "labels": {f"{GROUP}/job": name}},
             "spec": {"jobRef": {"kind": "Job", "name": name}, "logProfileRef": "p"}}
    webhook = DenyingWebhook(gateway, tmp_path, f"deny-{name}", object_selector={"matchLabels": {f"{GROUP}/job": name}},
                             message="LogProfile nemo does not exist",
                             rules=[{"operations": ["CREATE"], "apiGroups": [GROUP], "apiVersions": ["v1alpha1"],
                                     "resources": ["goodputmeasurements"]}], probe=(GOODPUT, namespace, probe))
    try:
        url = functions()["measurements"]
        for _ in range(2):  # a redelivery: the same answer, one Event
            assert send(url, created_record(namespace, name)).status == 202
    finally:
        webhook.remove()
    assert gateway.get(GOODPUT, namespace, f"{name}-goodput") is None
    assert gateway.get(BANDWIDTH, namespace, f"{name}-bandwidth") is not None
    events = job_events(gateway, namespace, name)
    assert [(e["type"], e["reason"]) for e in events] == [("Warning", "MeasurementCreationError")]
    message = events[0]["message"]
    assert message.startswith("Failed to ensure GoodputMeasurement: failed to create GoodputMeasurement: ")
    assert "LogProfile nemo does not exist" in message
    assert not ((gateway.get(JOBS, namespace, name) or {}).get("status") or {}).get("conditions")  # not a verdict


@pytest.mark.parametrize(("settings", "managed", "terminal"), [
    ({"CREFN_MODE": "observe"}, True, False), ({}, False, False), ({}, True, True),
], ids=["observe-mode", "unmanaged", "terminal"])
def test_nothing_is_created_for_a_job_that_is_not_ours_to_measure(
        functions: Callable[..., dict[str, str]], gateway: Gateway, namespace: str, settings: dict[str, str],
        managed: bool, terminal: bool) -> None:
    create_job(gateway, namespace, goodput={"logProfileRef": "nemo"}, managed=managed)
    launched(gateway, namespace)
    if terminal:
        gateway.patch(JOBS, namespace, "llm", {"status": {"conditions": [{
            "type": "Succeeded", "status": "True", "reason": "WorkloadCompleted", "message": "done",
            "lastTransitionTime": "2026-11-30T10:00:00Z"}]}}, status=True)
    assert send(functions(**settings)["measurements"], created_record(namespace)).status == 202
    assert gateway.get(GOODPUT, namespace, "llm-goodput") is None


def test_a_job_without_its_workload_recorded_gets_none_yet(functions: Callable[..., dict[str, str]],
                                                           gateway: Gateway, namespace: str) -> None:
    create_job(gateway, namespace, goodput={"logProfileRef": "nemo"})
    assert send(functions()["measurements"], created_record(namespace)).status == 202
    assert gateway.get(GOODPUT, namespace, goodput_name("llm")) is None


