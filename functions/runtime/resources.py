"""Kubernetes resources by address (group, version, plural): plain data, shared by the gateway that
calls them and the decisions that name them in plans."""

from __future__ import annotations

from dataclasses import dataclass

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
