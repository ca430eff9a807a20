"""Kubernetes resources by address (group, version, plural): plain data, shared by the gateway that
calls them and the decisions that name them in plans; and back from a REST call to the verb and resource
it is (`kube_call_of`, the labels the gateway counts calls by)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from events.types import CRE_VERSION, TRAINER_GROUP, TRAINER_VERSION


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None, sub: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
        if sub:
            base += f"/{sub}"
        return base


TRAINJOBS = Resource(TRAINER_GROUP, TRAINER_VERSION, "trainjobs", "TrainJob")
TRAINING_RUNTIMES = Resource(TRAINER_GROUP, TRAINER_VERSION, "trainingruntimes", "TrainingRuntime")
CLUSTER_TRAINING_RUNTIMES = Resource(TRAINER_GROUP, TRAINER_VERSION, "clustertrainingruntimes",
                                     "ClusterTrainingRuntime", namespaced=False)
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
PVCS = Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim")
PODS = Resource("", "v1", "pods", "Pod")
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
EVENTS = Resource("events.k8s.io", "v1", "events", "Event")
CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False)
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")
KSERVICES = Resource("serving.knative.dev", "v1", "services", "Service")
BROKERS = Resource("eventing.knative.dev", "v1", "brokers", "Broker")
TRIGGERS = Resource("eventing.knative.dev", "v1", "triggers", "Trigger")
APISERVERSOURCES = Resource("sources.knative.dev", "v1", "apiserversources", "ApiServerSource")
PINGSOURCES = Resource("sources.knative.dev", "v1", "pingsources", "PingSource")
SINKBINDINGS = Resource("sources.knative.dev", "v1", "sinkbindings", "SinkBinding")
KAFKASINKS = Resource("eventing.knative.dev", "v1alpha1", "kafkasinks", "KafkaSink")


def cre_jobs(group: str) -> Resource:
    return Resource(group, CRE_VERSION, "jobs", "Job")


def cre_workloadruns(group: str) -> Resource:
    return Resource(group, CRE_VERSION, "workloadruns", "WorkloadRun")


def cre_goodput(group: str) -> Resource:
    return Resource(group, CRE_VERSION, "goodputmeasurements", "GoodputMeasurement")


def cre_logprofiles(group: str) -> Resource:
    return Resource(group, CRE_VERSION, "logprofiles", "LogProfile", namespaced=False)


VERBS = {"POST": "create", "PATCH": "patch", "PUT": "update"}


def kube_call_of(method: str, path: str, query: list[tuple[str, Any]]) -> tuple[str, str]:
    """The Kubernetes verb and resource (`plural`, or `plural/subresource`) of a REST call:
    `/api/v1/namespaces/ml/pods/p/log` → (`get`, `pods/log`)."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    parts = parts[2:] if parts[:1] == ["api"] else parts[3:]  # past /api/<version> or /apis/<group>/<version>
    if parts[:1] == ["namespaces"] and len(parts) > 2 and parts[2:] not in (["status"], ["finalize"]):
        parts = parts[2:]  # a namespaced resource (not a namespace's own subresource)
    plural, named, sub = (parts[:1] or [""])[0], len(parts) > 1, "/".join(parts[2:])
    if method == "GET":
        watch = any(k == "watch" and str(v).lower() in ("1", "true") for k, v in query)
        verb = "watch" if watch else "get" if named else "list"
    elif method == "DELETE":
        verb = "delete" if named else "deletecollection"
    else:
        verb = VERBS.get(method, method.lower())
    return verb, f"{plural}/{sub}" if sub else plural
