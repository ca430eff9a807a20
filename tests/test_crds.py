"""The kube-apiserver 1.20 compatibility step applied to the upstream CRDs."""

from __future__ import annotations

from typing import Any

from localstack.apiserver import default_crd_dir
from localstack.crds import fallback_crds, load_upstream, make_compatible


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


def test_upstream_crds_load_without_empty_defaults() -> None:
    crds = load_upstream(default_crd_dir())
    names = sorted(c["metadata"]["name"] for c in crds)
    assert names == [
        "apiserversources.sources.knative.dev", "bandwidthmeasurements.nvcre.nvidia.com",
        "brokers.eventing.knative.dev",
        "channels.messaging.knative.dev", "clustertrainingruntimes.trainer.kubeflow.org",
        "containersources.sources.knative.dev", "goodputmeasurements.nvcre.nvidia.com",
        "inmemorychannels.messaging.knative.dev", "jobs.nvcre.nvidia.com", "kafkasinks.eventing.knative.dev",
        "kafkasources.sources.knative.dev", "logprofiles.nvcre.nvidia.com", "pingsources.sources.knative.dev",
        "services.serving.knative.dev", "sinkbindings.sources.knative.dev", "subscriptions.messaging.knative.dev",
        "trainingruntimes.trainer.kubeflow.org", "trainjobs.trainer.kubeflow.org", "triggers.eventing.knative.dev",
        "workloadruns.nvcre.nvidia.com"]
    assert not [n for c in crds for n in walk(c) if n.get("default") == ""]


def test_fallback_crds_cover_the_same_kinds() -> None:
    kinds = sorted(c["spec"]["names"]["kind"] for c in fallback_crds())
    assert kinds == ["ClusterTrainingRuntime", "GoodputMeasurement", "Job", "TrainJob", "TrainingRuntime",
                     "WorkloadRun"]
