"""`measurements` on the real API server with the real GoodputMeasurement and BandwidthMeasurement CRDs,
as its ServiceAccount: created with the right bodies, labels, owner and job-uid annotation once the
workload is created, and ensured again on every resync tick (CRE's `reconcileWorkload` ensures them on
every reconcile: a deleted one comes back, a BandwidthMeasurement left by an earlier Job of the same
name is replaced, a succeeded Job awaiting thresholds keeps only its BandwidthMeasurement); an existing
one (or one created in a race) is left as it is; a create the API refuses is a Warning Event and a 202,
never a retry nor a verdict. The bodies, pure: tests/domain/test_measurement_objects.py; which are ensured when:
tests/functions/measurements/test_decide.py."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from events.emitted import JobRef, WorkloadCreatedData, WorkloadRef
from functions.domain.measurement_objects import bandwidth_measurements, goodput_name
from functions.runtime.client import send
from functions.runtime.codec import to_envelope
from functions.runtime.gateway import Gateway
from functions.runtime.resources import cre_goodput
from localstack.cluster.apiserver import LocalCluster
from tests.support.helpers import job_events
from tests.support.webhook import DenyingWebhook
from tests.support.world import GROUP, JOBS, World

GOODPUT = cre_goodput(GROUP)
BANDWIDTH = bandwidth_measurements(GROUP)


# -- on the real API server ----------------------------------------------------------------------

def create_job(gw: Gateway, ns: str, name: str = "llm", goodput: dict[str, str] | None = None,
               bandwidth: dict[str, str] | None = None, managed: bool = True,
               thresholds: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"workload": {"trainJob": {"runtimeRef": {"name": "torch-distributed"}}}}
    if thresholds:
        spec["thresholds"] = thresholds
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
    labels = {"app.kubernetes.io/managed-by": "nvcre", "nvcre.nvidia.com/job": "llm"}
    gm, bm = w.gw.get(GOODPUT, w.ns, "llm-goodput"), w.gw.get(BANDWIDTH, w.ns, "llm-bandwidth")
    assert gm is not None and bm is not None
    assert gm["metadata"]["labels"] == labels and gm["metadata"]["ownerReferences"] == [owner]
    assert gm["spec"] == {"jobRef": {"apiGroup": "nvcre.nvidia.com", "kind": "Job", "name": "llm"},
                          "logProfileRef": "nemo", "sampleInterval": "45s"}
    assert bm["metadata"]["labels"] == labels and bm["metadata"]["ownerReferences"] == [owner]
    assert bm["metadata"]["annotations"] == {"nvcre.nvidia.com/job-uid": made["metadata"]["uid"]}  # annotationJobUID
    assert "annotations" not in gm["metadata"]
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
    from functions.measurements import read as measurements
    from functions.runtime.apply import run
    from functions.runtime.context import Context
    from functions.runtime.settings import Settings

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


@pytest.mark.parametrize(("kind", "plural"), [
    ("GoodputMeasurement", "goodputmeasurements"), ("BandwidthMeasurement", "bandwidthmeasurements"),
], ids=["goodput", "bandwidth"])
def test_a_refused_create_is_a_warning_and_never_keeps_the_other_back(
        kind: str, plural: str, functions: Callable[..., dict[str, str]], gateway: Gateway, namespace: str,
        tmp_path: Path) -> None:
    """CRE's `MeasurementCreationError`: `Failed to ensure <kind>: failed to create <kind>: <err>`, the API's
    message in full; the other measurement is created all the same, and the Job gets no verdict."""
    name = f"refused-{uuid.uuid4().hex[:6]}"
    create_job(gateway, namespace, name, goodput={"logProfileRef": "nemo"}, bandwidth={"logProfileRef": "nccl"})
    launched(gateway, namespace, name)
    spec: dict[str, Any] = {"jobRef": {"kind": "Job", "name": name}, "logProfileRef": "p"}
    probe = {"apiVersion": f"{GROUP}/v1alpha1", "kind": kind,
             "metadata": {"name": "probe", "labels": {f"{GROUP}/job": name}}, "spec": spec}
    (denied, denied_name), (other, other_name) = sorted(
        [(GOODPUT, f"{name}-goodput"), (BANDWIDTH, f"{name}-bandwidth")], key=lambda r: r[0].kind != kind)
    webhook = DenyingWebhook(gateway, tmp_path, f"deny-{name}", object_selector={"matchLabels": {f"{GROUP}/job": name}},
                             message="LogProfile nemo does not exist",
                             rules=[{"operations": ["CREATE"], "apiGroups": [GROUP], "apiVersions": ["v1alpha1"],
                                     "resources": [plural]}], probe=(denied, namespace, probe))
    try:
        url = functions()["measurements"]
        for _ in range(2):  # a redelivery: the same answer, one Event
            assert send(url, created_record(namespace, name)).status == 202
    finally:
        webhook.remove()
    assert gateway.get(denied, namespace, denied_name) is None
    assert gateway.get(other, namespace, other_name) is not None
    events = job_events(gateway, namespace, name)
    assert [(e["type"], e["reason"], e["message"]) for e in events] == [(
        "Warning", "MeasurementCreationError",
        f'Failed to ensure {kind}: failed to create {kind}: admission webhook "deny-{name}.crefn.test" denied the '
        'request: LogProfile nemo does not exist')]
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




# -- ensured on every tick (CRE: job_controller.go reconcileWorkload, ensureBandwidthMeasurement) -------

def checks_sent(w: World) -> list[list[str]]:
    return [r["data"]["checks"] for r in w.resynced if r["attributes"]["type"] == "dev.crefn.job.check"]


def test_the_tick_ensures_them_again(world: Callable[..., World]) -> None:
    """A measurement deleted (or whose create event was lost) is created again by the next tick's check."""
    w = world()
    create_job(w.gw, w.ns, goodput={"logProfileRef": "nemo"}, bandwidth={"logProfileRef": "nccl"})
    w.settle()
    first = w.gw.get(GOODPUT, w.ns, "llm-goodput")
    assert first is not None
    w.gw.delete(GOODPUT, w.ns, "llm-goodput")
    w.gw.delete(BANDWIDTH, w.ns, "llm-bandwidth")
    w.tick(rounds=1)
    assert checks_sent(w) == [["measurements"]]
    again, bm = w.gw.get(GOODPUT, w.ns, "llm-goodput"), w.gw.get(BANDWIDTH, w.ns, "llm-bandwidth")
    assert again is not None and bm is not None and again["metadata"]["uid"] != first["metadata"]["uid"]
    assert again["spec"] == first["spec"]
    assert bm["metadata"]["annotations"] == {"nvcre.nvidia.com/job-uid": w.job()["metadata"]["uid"]}
    w.tick(rounds=1)  # in place: the check finds them and creates nothing
    assert (w.gw.get(GOODPUT, w.ns, "llm-goodput") or {})["metadata"]["uid"] == again["metadata"]["uid"]
    assert [a.status for a in w.answers("measurements")] == [202, 202, 202]


def test_an_earlier_jobs_bandwidth_measurement_is_replaced(world: Callable[..., World]) -> None:
    """A Job of the same name deleted and created again finds the BandwidthMeasurement of the earlier one
    (a foreground-less delete, or one CRE's Workflow kept): deleted with a uid precondition, then created
    for this Job. One without the annotation predates it and is kept (CRE's `measuresJob`)."""
    w = world()
    earlier = w.gw.create(BANDWIDTH, w.ns, {
        "apiVersion": f"{GROUP}/v1alpha1", "kind": "BandwidthMeasurement",
        "metadata": {"name": "llm-bandwidth", "annotations": {"nvcre.nvidia.com/job-uid": "uid-of-an-earlier-llm"}},
        "spec": {"jobRef": {"apiGroup": GROUP, "kind": "Job", "name": "llm"}, "logProfileRef": "old"}})
    made = create_job(w.gw, w.ns, bandwidth={"logProfileRef": "nccl", "testType": "all_reduce"})
    w.settle()
    bm = w.gw.get(BANDWIDTH, w.ns, "llm-bandwidth")
    assert bm is not None and bm["metadata"]["uid"] != earlier["metadata"]["uid"]
    assert bm["metadata"]["annotations"] == {"nvcre.nvidia.com/job-uid": made["metadata"]["uid"]}
    assert bm["spec"]["logProfileRef"] == "nccl"
    assert [a.status for a in w.answers("measurements")] == [202]
    w.gw.delete(BANDWIDTH, w.ns, "llm-bandwidth")
    kept = w.gw.create(BANDWIDTH, w.ns, {
        "apiVersion": f"{GROUP}/v1alpha1", "kind": "BandwidthMeasurement", "metadata": {"name": "llm-bandwidth"},
        "spec": {"jobRef": {"apiGroup": GROUP, "kind": "Job", "name": "llm"}, "logProfileRef": "unannotated"}})
    w.tick(rounds=1)
    assert (w.gw.get(BANDWIDTH, w.ns, "llm-bandwidth") or {})["metadata"]["uid"] == kept["metadata"]["uid"]


def test_a_succeeded_job_awaiting_thresholds_keeps_only_its_bandwidth_measurement(world: Callable[..., World]) -> None:
    """After the success CRE ensures no GoodputMeasurement, but the BandwidthMeasurement still while the
    thresholds wait for it (it is measured from the Job's full log after the success); once the verdict
    is written, neither."""
    w = world()
    create_job(w.gw, w.ns, goodput={"logProfileRef": "nemo"}, bandwidth={"logProfileRef": "nccl"},
               thresholds={"busBandwidthGBps": "value >= 400"})
    w.succeed()
    w.gw.delete(GOODPUT, w.ns, "llm-goodput")
    w.gw.delete(BANDWIDTH, w.ns, "llm-bandwidth")
    w.tick(rounds=1)
    assert checks_sent(w) == [["validation", "measurements"]]
    assert w.gw.get(GOODPUT, w.ns, "llm-goodput") is None
    assert w.gw.get(BANDWIDTH, w.ns, "llm-bandwidth") is not None
    w.gw.patch(BANDWIDTH, w.ns, "llm-bandwidth", {"status": {
        "conditions": [{"type": "Complete", "status": "True", "reason": "JobSucceeded", "message": "measured",
                        "lastTransitionTime": "2026-12-01T00:00:00Z"}],
        "results": [{"sizeBytes": 1 << 30, "busBW": "410.5", "algBW": "205.2", "samples": 5}]}}, status=True)
    w.tick(rounds=1)
    conditions = {c["type"]: (c["status"], c["reason"], c["message"]) for c in w.job()["status"]["conditions"]}
    assert conditions["ValidationFailed"] == ("False", "ThresholdsMet", "All performance thresholds satisfied")
    w.gw.delete(BANDWIDTH, w.ns, "llm-bandwidth")
    w.tick(rounds=1)  # validated: nothing is ensured any more
    assert w.gw.get(BANDWIDTH, w.ns, "llm-bandwidth") is None
