"""Shared data of the stall tests: CRE's stall messages, and on the real API server a Job with stall detection
whose GoodputMeasurement status the test writes through its status subresource (as CRE's GoodputMeasurement
controller would), so that the tick or a measurement change makes `status` find the stall."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from events.emitted import JobRef, WorkloadRef, WorkloadStalledData
from functions.runtime.resources import cre_goodput
from tests.support.helpers import NOW
from tests.support.world import GROUP, World

GOODPUT = cre_goodput(GROUP)
S = timedelta(seconds=1)
# CRE's job_controller.go `checkStallTimeout`, verbatim
STARTUP_MESSAGE = "Workload stalled: no training step observed within startup timeout"
TRAINING_MESSAGE = "Workload stalled: no training step within the configured threshold"


def at(delta: timedelta, now: datetime = NOW) -> str:
    return (now + delta).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_at(delta: timedelta) -> str:
    return at(delta, datetime.now(UTC))


def create_job(w: World, max_restarts: int | None = None, goodput_spec: bool = False, nodes: str = "") -> None:
    """A Job with stall detection (`stallMultiplier: 10`); `goodput_spec`: `measurements` creates its
    GoodputMeasurement (`spec.goodputMeasurement` has no sampleInterval, so the restart grace is the
    setting's)."""
    spec: dict[str, Any] = {"workload": {"trainJob": {"runtimeRef": {"name": "torch-distributed"}}},
                            "stallMultiplier": 10}
    if max_restarts is not None:
        spec["checkpoint"] = {"pvcName": "llm-ckpt", "maxRestarts": max_restarts}
    if goodput_spec:
        spec["goodputMeasurement"] = {"logProfileRef": "nemo"}
    annotations = {f"{GROUP}/group-nodes": nodes} if nodes else {}
    w.gw.create(w.jobs, w.ns, {"apiVersion": f"{GROUP}/v1alpha1", "kind": "Job", "metadata": {
        "name": "llm", "labels": {"crefn.dev/managed": "true"}, "annotations": annotations}, "spec": spec})


def hand_made_goodput(w: World, **status: Any) -> None:
    """A GoodputMeasurement made by hand (as CRE's docs allow), with its status."""
    w.gw.create(GOODPUT, w.ns, {"apiVersion": f"{GROUP}/v1alpha1", "kind": "GoodputMeasurement",
                                "metadata": {"name": "llm-goodput", "labels": {f"{GROUP}/job": "llm"}},
                                "spec": {"jobRef": {"kind": "Job", "name": "llm"}, "logProfileRef": "nemo"}})
    if status:
        measure(w, **status)


def measure(w: World, **status: Any) -> None:
    """What CRE's GoodputMeasurement controller writes: a merge patch of the status subresource."""
    w.gw.patch(GOODPUT, w.ns, "llm-goodput", {"status": status}, status=True)


def stalled_training(checkpoint_step: int = 0, average: str = "2.5") -> dict[str, Any]:
    """Steps of 2.5 s logged every 4 (threshold 10 x 2.5 x 4 + 120 = 220 s), the last 5 minutes ago."""
    return {"avgStepTimeSec": average, "logInterval": 4, "lastStepTimestamp": now_at(-300 * S),
            "startTime": now_at(-3600 * S), "applicationStartTime": now_at(-3500 * S),
            "lastCheckpointStep": checkpoint_step}


def stalled_record(ns: str, attempt: int = 0, uid: str = "") -> dict[str, Any]:
    """A `dev.crefn.workload.stalled` event as `status` sends it."""
    data = WorkloadStalledData(job=JobRef(name="llm", namespace=ns),
                               workload=WorkloadRef(api_version="trainer.kubeflow.org/v1alpha1", kind="TrainJob",
                                                    name="llm-workload", namespace=ns, uid=uid, attempt=attempt),
                               mode="training", elapsed_seconds=300, threshold_seconds=220, message=TRAINING_MESSAGE)
    return {"attributes": {"specversion": "1.0", "id": "s", "source": "/crefn/status",
                           "type": "dev.crefn.workload.stalled", "subject": f"{ns}/llm", "namespace": ns,
                           "job": "llm", "partitionkey": f"{ns}/llm"},
            "data": data.model_dump(mode="json", by_alias=True)}


def condition(w: World, type_: str) -> dict[str, Any]:
    return next(c for c in w.job()["status"]["conditions"] if c["type"] == type_)
