"""The kube-apiserver 1.20 compatibility step applied to the upstream CRDs; the project's fallback CRDs
(`localstack/cluster/fallback-crds/`) declare every field the code reads or writes, each with its upstream schema."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from events.objects import JobSpec, JobStatus, TrainJobSpec, TrainJobStatus, WorkloadRunStatus
from functions.domain.measurement_objects import GoodputSpec, GoodputStatus
from localstack.cluster.crds import fallback_crds, load_upstream, make_compatible


def walk(node: Any) -> list[dict[str, Any]]:
    out = []
    if isinstance(node, dict):
        out.append(node)
        for v in node.values():
            out += walk(v)
    elif isinstance(node, list):
        for v in node:
            out += walk(v)
    return out


def test_list_map_key_default_becomes_required_and_other_empty_defaults_go() -> None:
    schema = {
        "type": "object",
        "properties": {
            "ports": {
                "type": "array",
                "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
                "items": {"type": "object", "required": ["containerPort"], "properties": {
                    "containerPort": {"type": "integer"},
                    "protocol": {"type": "string", "default": ""},
                    "name": {"type": "string", "default": ""}}},
            },
            "kept": {"type": "string", "default": "TCP"},
            "dropped": {"type": "string", "default": ""},
        },
    }
    out = make_compatible(schema)
    items = out["properties"]["ports"]["items"]
    assert items["required"] == ["containerPort", "protocol"]
    assert "default" not in items["properties"]["protocol"] and "default" not in items["properties"]["name"]
    assert out["properties"]["kept"]["default"] == "TCP" and "default" not in out["properties"]["dropped"]
    assert schema["properties"]["dropped"]["default"] == ""  # the input is not modified


@cache
def loaded(directory: Path) -> list[dict[str, Any]]:
    return load_upstream(directory)


def test_upstream_crds_load_without_empty_defaults(upstream_crds: Path) -> None:
    crds = loaded(upstream_crds)
    names = sorted(c["metadata"]["name"] for c in crds)
    assert names == [
        "apiserversources.sources.knative.dev", "bandwidthmeasurements.nvcre.nvidia.com",
        "brokers.eventing.knative.dev",
        "channels.messaging.knative.dev", "clustertrainingruntimes.trainer.kubeflow.org",
        "containersources.sources.knative.dev", "eventpolicies.eventing.knative.dev",
        "goodputmeasurements.nvcre.nvidia.com",
        "inmemorychannels.messaging.knative.dev", "jobs.nvcre.nvidia.com", "kafkasinks.eventing.knative.dev",
        "kafkasources.sources.knative.dev", "logprofiles.nvcre.nvidia.com", "pingsources.sources.knative.dev",
        "services.serving.knative.dev", "sinkbindings.sources.knative.dev", "subscriptions.messaging.knative.dev",
        "trainingruntimes.trainer.kubeflow.org", "trainjobs.trainer.kubeflow.org", "triggers.eventing.knative.dev",
        "workloadruns.nvcre.nvidia.com"]
    assert not [n for c in crds for n in walk(c) if n.get("default") == ""]


def test_fallback_crds_cover_the_kinds_the_code_uses() -> None:
    kinds = sorted(c["spec"]["names"]["kind"] for c in fallback_crds())
    assert kinds == ["BandwidthMeasurement", "ClusterTrainingRuntime", "GoodputMeasurement", "Job", "LogProfile",
                     "TrainJob", "TrainingRuntime", "WorkloadRun"]
    assert {c["spec"]["group"] for c in fallback_crds("cre.nvidia.com")} == {"cre.nvidia.com", "trainer.kubeflow.org"}


FIELDS = {
    "Job": ("spec.workload.trainJob.suspend", "spec.workload.trainJob.managedBy",
            "spec.workload.trainJob.runtimeRef.name",
            "spec.checkpoint.pvcName", "spec.checkpoint.maxRestarts", "spec.workloadMetadata.labels",
            "spec.goodputMeasurement.logProfileRef", "spec.goodputMeasurement.sampleInterval",
            "spec.bandwidthMeasurement.logProfileRef", "spec.bandwidthMeasurement.sampleInterval",
            "spec.bandwidthMeasurement.testType", "spec.stallMultiplier", "spec.startupStallTimeoutSeconds",
            "spec.nodeHealthMonitor.cel.expression", "spec.thresholds", "spec.measurementTimeout",
            "spec.schedulingStallGraceSeconds",
            "status.conditions[].type", "status.conditions[].status", "status.conditions[].reason",
            "status.conditions[].message", "status.conditions[].observedGeneration",
            "status.conditions[].lastTransitionTime",
            "status.workloadRef.apiVersion", "status.workloadRef.kind", "status.workloadRef.name",
            "status.workloadRef.namespace", "status.workloadStartTime", "status.restartCount",
            "status.failedNodes[].name", "status.failedNodes[].reason", "status.failedNodes[].message",
            "status.failureLog.reason", "status.failureLog.podName", "status.failureLog.nodeName",
            "status.failureLog.exitCode", "status.failureLog.tail", "status.schedulingBlockedSince",
            "status.schedulingResumedTime"),
    "TrainJob": ("spec.suspend", "spec.managedBy", "spec.runtimeRef.name", "status.conditions[].type",
                 "status.jobsStatus[].name", "status.jobsStatus[].active", "status.jobsStatus[].ready",
                 "status.jobsStatus[].succeeded", "status.jobsStatus[].failed", "status.jobsStatus[].suspended"),
    "WorkloadRun": ("spec", "status.conditions[].type"),
    "GoodputMeasurement": ("spec.jobRef.apiGroup", "spec.jobRef.kind", "spec.jobRef.name", "spec.logProfileRef",
                           "spec.sampleInterval", "status.conditions[].type", "status.startTime",
                           "status.applicationStartTime", "status.lastStepTimestamp", "status.avgStepTimeSec",
                           "status.logInterval", "status.currentStep", "status.lastCheckpointStep", "status.result",
                           "status.avgTFLOPSPerGPU", "status.applicationStopTime", "status.checkpointSaveTimeSec",
                           "status.completionTime", "status.conditions[].reason", "status.conditions[].message",
                           "status.conditions[].status", "status.conditions[].lastTransitionTime",
                           "status.conditions[].observedGeneration", "status.highestStep", "status.interruptionCount",
                           "status.lastCheckpointTime", "status.lastNonWarmupStep", "status.lostWorkTimeSec",
                           "status.nonWarmupTimeSec", "status.pendingInterruption.tInterrupt",
                           "status.pendingInterruption.tCheckpoint", "status.pendingInterruption.checkpointStep",
                           "status.pendingInterruption.lastStep", "status.pendingInterruption.tCh",
                           "status.pendingInterruption.reason", "status.priorNonWarmupTimeSec",
                           "status.priorWarmupTimeSec", "status.rescheduleTimeSec", "status.resumeTimeSec",
                           "status.trainingTimeSec", "status.warmupBaseStep", "status.warmupTimeSec"),
    "LogProfile": ("spec.timestamp.layout", "spec.patterns.trainingStep.regex", "spec.patterns.trainingStep.example",
                   "spec.patterns.trainingStep.units", "spec.patterns.checkpointSave.regex",
                   "spec.patterns.checkpointDone.regex", "spec.patterns.checkpointRestore.regex",
                   "spec.patterns.checkpointLoaded.regex", "spec.patterns.applicationStart.regex",
                   "spec.patterns.warmupStep.regex", "spec.patterns.bandwidthResult.regex",
                   "spec.patterns.networkTransport.regex", "spec.workerStrategy.type",
                   "spec.workerStrategy.replicatedJobName", "spec.containerName", "spec.warmupSteps",
                   "spec.logInterval"),
    "BandwidthMeasurement": ("spec.jobRef.name", "spec.logProfileRef", "spec.sampleInterval", "spec.testType",
                             "status.conditions[].type", "status.conditions[].status", "status.conditions[].reason",
                             "status.conditions[].message", "status.conditions[].lastTransitionTime",
                             "status.conditions[].observedGeneration", "status.results[].busBW",
                             "status.results[].algBW", "status.results[].sizeBytes", "status.results[].samples",
                             "status.transport", "status.startTime", "status.completionTime"),
}
"""What the functions and the local stack read or write, per kind (`[]`: each item of a list)."""

MODELS: tuple[tuple[type[BaseModel], str, str], ...] = (
    (JobSpec, "Job", "spec"), (JobStatus, "Job", "status"), (TrainJobSpec, "TrainJob", "spec"),
    (TrainJobStatus, "TrainJob", "status"), (WorkloadRunStatus, "WorkloadRun", "status"),
    (GoodputSpec, "GoodputMeasurement", "spec"), (GoodputStatus, "GoodputMeasurement", "status"))


def schema_of(kind: str, crds: list[dict[str, Any]]) -> dict[str, Any]:
    (crd,) = [c for c in crds if c["spec"]["names"]["kind"] == kind]
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def at(schema: dict[str, Any], path: str) -> dict[str, Any] | None:
    """The declared schema of a field (`a.b[].c`), or None when a step is not declared."""
    node: dict[str, Any] | None = schema
    for step in path.split("."):
        name, items = step.removesuffix("[]"), step.endswith("[]")
        node = ((node or {}).get("properties") or {}).get(name)
        if node is not None and items:
            node = node.get("items")
    return node


@pytest.mark.parametrize(("kind", "path"), [(k, p) for k, paths in FIELDS.items() for p in paths],
                         ids=[f"{k}.{p}" for k, paths in FIELDS.items() for p in paths])
def test_fallback_crds_declare_each_field_the_code_uses(kind: str, path: str) -> None:
    assert at(schema_of(kind, fallback_crds()), path) is not None


@pytest.mark.parametrize(("model", "kind", "prefix"), MODELS, ids=[f"{k}.{p}" for _, k, p in MODELS])
def test_the_field_table_holds_every_field_of_the_models(model: type[BaseModel], kind: str, prefix: str) -> None:
    fields = {f"{prefix}.{info.alias or name}" for name, info in model.model_fields.items()}
    listed = {p.split("[]")[0] for p in FIELDS[kind]} | {".".join(p.split(".")[:2]) for p in FIELDS[kind]}
    assert fields - listed == set()


def projection_errors(mine: Any, theirs: Any, path: str) -> list[str]:
    """Where a fallback schema is not the upstream one restricted to the properties it declares. A node
    that keeps unknown fields where upstream does not (a spec passed on whole) may leave out upstream's
    properties; its other keys are upstream's."""
    if not isinstance(mine, dict) or not isinstance(theirs, dict):
        return [] if mine == theirs else [f"{path}: {mine!r} is not upstream's {theirs!r}"]
    theirs = {k: v for k, v in theirs.items() if k != "description"}
    errors: list[str] = []
    keeps = "x-kubernetes-preserve-unknown-fields"
    open_here = mine.get(keeps) and not theirs.get(keeps)
    for key in sorted(set(mine) | (set() if open_here else set(theirs))):
        if key == "properties":
            for name, sub in (mine.get("properties") or {}).items():
                if name not in (theirs.get("properties") or {}):
                    errors.append(f"{path}.{name}: not in the upstream CRD")
                else:
                    errors += projection_errors(sub, theirs["properties"][name], f"{path}.{name}")
        elif key in ("items", "additionalProperties"):
            errors += projection_errors(mine.get(key), theirs.get(key), f"{path}.{key}")
        elif open_here and key == keeps:
            continue
        elif mine.get(key) != theirs.get(key):
            errors.append(f"{path}: {key} is {mine.get(key)!r}, upstream {theirs.get(key)!r}")
    return errors


@pytest.mark.parametrize("kind", [*sorted(FIELDS), "TrainingRuntime", "ClusterTrainingRuntime"])
def test_fallback_crds_are_the_upstream_schemas_restricted_to_those_fields(upstream_crds: Path, kind: str) -> None:
    (mine,) = [c for c in fallback_crds() if c["spec"]["names"]["kind"] == kind]
    (theirs,) = [c for c in loaded(upstream_crds) if c["metadata"]["name"] == mine["metadata"]["name"]]
    assert [mine["spec"][k] for k in ("names", "scope")] == [theirs["spec"][k] for k in ("names", "scope")]
    (version,), (served,) = mine["spec"]["versions"], theirs["spec"]["versions"]
    assert {k: v for k, v in version.items() if k != "schema"} == {k: v for k, v in served.items() if k != "schema"}
    assert projection_errors(version["schema"]["openAPIV3Schema"], served["schema"]["openAPIV3Schema"], kind) == []
