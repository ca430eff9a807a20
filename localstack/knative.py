"""The install's Knative objects in the stack's API server, with the status Knative's controllers would give them
from what the stack's stand-ins serve: `cre-fn doctor` reads a local stack as it reads a cluster.

`write_objects` creates the install's Knative Services (reading the settings ConfigMap served from,
`localstack.revisions`), Broker, Triggers, sources, SinkBindings, other ConfigMaps and the recorder's Deployment.
`Reconciler` keeps their status every `interval`: a Service Ready while its process runs, reading the ConfigMap
served from now; the recorder Available while the Broker's dead-letter sink serves; the Broker while it serves; a
Trigger when its Broker is Ready and its subscriber has an address; an ApiServerSource's SufficientPermissions from
a SubjectAccessReview for get, list and watch of each resource (asked again every `recheck` seconds), Ready when
its watch runs too. Nothing else of Knative is emulated (no revision, route or channel) and nothing else written.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from functions.runtime.errors import AlreadyExists, CrefnError
from functions.runtime.gateway import Gateway
from functions.runtime.resources import (
    APISERVERSOURCES,
    BROKERS,
    CONFIGMAPS,
    CRDS,
    DEPLOYMENTS,
    KSERVICES,
    PINGSOURCES,
    SINKBINDINGS,
    TRIGGERS,
    Resource,
)
from localstack.background import Background

KINDS: dict[tuple[str, str], Resource] = {
    ("v1", "ConfigMap"): CONFIGMAPS, ("serving.knative.dev/v1", "Service"): KSERVICES,
    ("eventing.knative.dev/v1", "Broker"): BROKERS, ("eventing.knative.dev/v1", "Trigger"): TRIGGERS,
    ("sources.knative.dev/v1", "ApiServerSource"): APISERVERSOURCES,
    ("sources.knative.dev/v1", "PingSource"): PINGSOURCES, ("sources.knative.dev/v1", "SinkBinding"): SINKBINDINGS,
    ("apps/v1", "Deployment"): DEPLOYMENTS,
}
"""What is written, by apiVersion and kind; the Knative kinds need Knative's CRDs (the upstream ones)."""
ACCESS_REVIEWS = Resource("authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", False)
SOURCE_VERBS = ("get", "list", "watch")


@dataclass(frozen=True)
class Endpoint:
    """What serves a Knative Service of the install here: its URL, whether it runs now, the environment it
    runs with."""

    url: str
    running: Callable[[], bool]
    env: Mapping[str, str]


def missing_crds(gw: Gateway, docs: Iterable[Mapping[str, Any]]) -> list[str]:
    """The CRDs of the Knative kinds among `docs` that the API server does not serve."""
    names = {f"{KINDS[key].plural}.{KINDS[key].group}" for d in docs
             if (key := (d["apiVersion"], d["kind"])) in KINDS and KINDS[key].group.endswith(".knative.dev")}
    return sorted(name for name in names if gw.get(CRDS, None, name) is None)


def write_objects(gw: Gateway, docs: Iterable[Mapping[str, Any]], endpoints: Mapping[str, Endpoint],
                  served: str, settings: Mapping[str, str]) -> int:
    """Create the install's objects of `KINDS`: the Services reading, with `envFrom`, the ConfigMap `served` (which
    holds `settings`, written by the stack) in place of the install's own settings ConfigMap, which is not written;
    a Service whose function runs with another value of one of those keys gets it in its `env` (as a component's
    patch would). Returns how many were created."""
    objects = [dict(d) for d in docs if (d["apiVersion"], d["kind"]) in KINDS]
    read = {ref for d in objects if d["kind"] == "Service" for ref in env_from(d)}
    created = 0
    for doc in objects:
        if doc["kind"] == "ConfigMap" and doc["metadata"]["name"] in read:
            continue
        if doc["kind"] == "Service":  # Knative's: the only Service of `KINDS`
            doc = reading(doc, served)
            if (endpoint := endpoints.get(doc["metadata"]["name"])) is not None:
                doc = with_env(doc, {k: v for k, v in endpoint.env.items() if k in settings and settings[k] != v})
        with contextlib.suppress(AlreadyExists):
            gw.create(KINDS[(doc["apiVersion"], doc["kind"])], doc["metadata"].get("namespace"), doc)
            created += 1
    return created


def reading(service: dict[str, Any], settings: str) -> dict[str, Any]:
    """The Knative Service with its container's `envFrom` ConfigMap named `settings`."""
    sources = service["spec"]["template"]["spec"]["containers"][0].get("envFrom") or ()
    return with_container(service, envFrom=[{**s, "configMapRef": {**s["configMapRef"], "name": settings}}
                                            if s.get("configMapRef") else s for s in sources])


def with_container(service: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """The Knative Service with `fields` set on its (first) container, the rest of it as it was."""
    template = service["spec"]["template"]
    container = {**template["spec"]["containers"][0], **fields}
    spec = {**template["spec"], "containers": [container, *template["spec"]["containers"][1:]]}
    return {**service, "spec": {**service["spec"], "template": {**template, "spec": spec}}}


def env_from(service: Mapping[str, Any]) -> list[str]:
    """The ConfigMaps a Knative Service's container reads with `envFrom`."""
    container = service["spec"]["template"]["spec"]["containers"][0]
    return [str(s["configMapRef"]["name"]) for s in container.get("envFrom") or () if s.get("configMapRef")]


def with_env(service: dict[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    """The Knative Service with `env` added to its container's."""
    if not env:
        return service
    held = service["spec"]["template"]["spec"]["containers"][0].get("env") or ()
    return with_container(service, env=[*held, *({"name": k, "value": v} for k, v in sorted(env.items()))])


def condition(type_: str, ok: bool, reason: str = "", message: str = "") -> dict[str, str]:
    found = {"type": type_, "status": "True" if ok else "False"}
    return found | ({"reason": reason, "message": message} if not ok else {})


def ready_of(conditions: list[dict[str, str]]) -> list[dict[str, str]]:
    """The conditions with `Ready` last: True when all are, else the first that is not, as Knative's
    condition sets make it."""
    failing = next((c for c in conditions if c["status"] != "True"), None)
    ready = condition("Ready", True) if failing is None else {**failing, "type": "Ready"}
    return [*conditions, ready]


class Reconciler(Background):
    """Writes the status of the install's Knative objects in `namespace` every `interval` seconds, in a thread
    of its own, from `start` until `stop` (which waits for a pass under way at most a second).
    `broker_url()` is the Broker's address ("" while it does not serve); `sources` says, by ApiServerSource
    name, whether its watches run."""

    join_timeout = 1.0

    def __init__(self, gw: Gateway, namespace: str, endpoints: Mapping[str, Endpoint], broker_url: Callable[[], str],
                 sources: Mapping[str, Callable[[], bool]], interval: float = 1.0, recheck: float = 30.0,
                 settings: Callable[[], str] | None = None) -> None:
        super().__init__()
        self.gw, self.namespace, self.endpoints, self.settings = gw, namespace, endpoints, settings
        self.broker_url, self.sources = broker_url, sources
        self.interval, self.recheck = interval, recheck
        self._reviews: dict[tuple[str, str], tuple[float, str]] = {}

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            with contextlib.suppress(CrefnError):  # the API server away: the next pass writes it
                self.reconcile()

    def reconcile(self) -> None:
        services = {s["metadata"]["name"]: self.revised(s) for s in self.gw.list_all(KSERVICES, self.namespace)}
        for deployment in self.gw.list_all(DEPLOYMENTS, self.namespace):
            self.deployment_status(deployment)
        addresses = {name: url for name in services if (url := self.service_status(services[name]))}
        brokers = {b["metadata"]["name"]: self.broker_status(b) for b in self.gw.list_all(BROKERS, self.namespace)}
        for trigger in self.gw.list_all(TRIGGERS, self.namespace):
            self.trigger_status(trigger, brokers, addresses)
        for source in self.gw.list_all(APISERVERSOURCES, self.namespace):
            self.source_status(source, brokers)

    def write(self, res: Resource, obj: Mapping[str, Any], status: dict[str, Any]) -> None:
        """`status` written when it differs from the object's; a condition that keeps its status keeps its time."""
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        held = {c.get("type"): c for c in (obj.get("status") or {}).get("conditions") or ()}
        conditions = [{**c, "lastTransitionTime": held[c["type"]].get("lastTransitionTime", now)}
                      if c["type"] in held and held[c["type"]].get("status") == c["status"]
                      else {**c, "lastTransitionTime": now} for c in status.pop("conditions")]
        status = {**status, "conditions": conditions,
                  "observedGeneration": (obj.get("metadata") or {}).get("generation", 1)}
        if {k: (obj.get("status") or {}).get(k) for k in status} != status:
            self.gw.patch(res, self.namespace, obj["metadata"]["name"], {"status": status}, status=True)

    def revised(self, service: dict[str, Any]) -> dict[str, Any]:
        """The Service, its template made to read the settings ConfigMap served from now (`settings()`): a new one
        is a new revision, as a kustomize build with changed settings applied would make it."""
        if self.settings is None or env_from(service) == [name := self.settings()] or not env_from(service):
            return service
        containers = reading(service, name)["spec"]["template"]["spec"]["containers"]  # a merge patch: the whole list
        return self.gw.patch(KSERVICES, self.namespace, service["metadata"]["name"],
                             {"spec": {"template": {"spec": {"containers": containers}}}})

    def deployment_status(self, deployment: Mapping[str, Any]) -> None:
        """A Deployment of the install (the dead-letter recorder): Available while what serves it here runs."""
        endpoint = self.endpoints.get(deployment["metadata"]["name"])
        up = endpoint is not None and endpoint.running()
        replicas = 1 if up else 0
        self.write(DEPLOYMENTS, deployment, {
            "conditions": [condition("Available", up, "MinimumReplicasUnavailable",
                                     "Deployment does not have minimum availability.")],
            "replicas": 1, "readyReplicas": replicas, "availableReplicas": replicas, "updatedReplicas": 1})

    def service_status(self, service: Mapping[str, Any]) -> str:
        """A Knative Service's status; its address ("" when it is not Ready)."""
        name = service["metadata"]["name"]
        endpoint = self.endpoints.get(name)
        revision = f"{name}-00001"
        if endpoint is None:
            ok, reason, message = False, "RevisionMissing", f"the local stack serves no {name}"
        elif not endpoint.running():
            ok, reason, message = False, "RevisionFailed", f"Revision {revision!r} failed: its process exited"
        else:
            ok, reason, message = True, "", ""
        conditions = [condition("ConfigurationsReady", ok, reason, message), condition("RoutesReady", ok, reason,
                                                                                       message)]
        url = endpoint.url if ok and endpoint is not None else None
        self.write(KSERVICES, service, {
            "conditions": ready_of(conditions), "latestCreatedRevisionName": revision, "url": url,
            "address": {"url": url} if url else None, "latestReadyRevisionName": revision if url else None})
        return url or ""

    def broker_status(self, broker: Mapping[str, Any]) -> bool:
        url = self.broker_url()
        serving = condition("IngressReady", bool(url), "NotServing", "the local Broker does not serve")
        addressable = condition("Addressable", bool(url), "NoAddress", "the local Broker has no address")
        self.write(BROKERS, broker, {"conditions": ready_of([serving, addressable]),
                                     "address": {"url": url} if url else None})
        return bool(url)

    def trigger_status(self, trigger: Mapping[str, Any], brokers: Mapping[str, bool],
                       addresses: Mapping[str, str]) -> None:
        spec = trigger.get("spec") or {}
        broker = str(spec.get("broker", ""))
        ref = (spec.get("subscriber") or {}).get("ref") or {}
        subscriber = addresses.get(str(ref.get("name"))) if ref.get("kind") == "Service" else None
        if broker not in brokers:
            brokered = condition("BrokerReady", False, "BrokerDoesNotExist", f"Broker {broker!r} does not exist")
        else:
            brokered = condition("BrokerReady", brokers[broker], "BrokerNotReady", f"Broker {broker!r} is not Ready")
        resolved = condition("SubscriberResolved", bool(subscriber), "Unable to get the Subscriber's URI",
                             f"{ref.get('kind')} {self.namespace}/{ref.get('name')} is not found or has no address")
        subscribed = condition("Subscribed", bool(subscriber), "NotSubscribed", "no subscriber to deliver to")
        self.write(TRIGGERS, trigger, {"conditions": ready_of([brokered, resolved, subscribed]),
                                       "subscriberUri": subscriber or None})

    def source_status(self, source: Mapping[str, Any], brokers: Mapping[str, bool]) -> None:
        spec = source.get("spec") or {}
        name = source["metadata"]["name"]
        account = str(spec.get("serviceAccountName") or "default")
        refused = [why for res in spec.get("resources") or () if (why := self.refused(account, res))]
        sink = str(((spec.get("sink") or {}).get("ref") or {}).get("name", ""))
        watching = self.sources.get(name)
        conditions = [
            condition("SufficientPermissions", not refused, "InsufficientPermission", "; ".join(refused)),
            condition("SinkProvided", brokers.get(sink, False), "NotFound", f"sink {sink!r} is not a Ready Broker"),
            condition("Deployed", watching is not None and watching(), "NotDeployed",
                      "the local stack runs no watch for this source")]
        self.write(APISERVERSOURCES, source, {"conditions": ready_of(conditions)})

    def refused(self, account: str, resource: Mapping[str, Any]) -> str:
        """What the ServiceAccount may not do of get, list and watch on the resource, cluster-wide ("": it may),
        asked again after `recheck` seconds."""
        group = str(resource.get("apiVersion", "")).rpartition("/")[0]
        plural = f"{str(resource.get('kind', '')).lower()}s"
        key = (account, f"{plural}.{group}")
        asked, answer = self._reviews.get(key, (0.0, ""))
        if asked and time.monotonic() - asked < self.recheck:
            return answer
        user = f"system:serviceaccount:{self.namespace}:{account}"
        denied = [verb for verb in SOURCE_VERBS if not self.allowed(user, verb, group, plural)]
        answer = (f"User {user!r} cannot {', '.join(denied)} resource {plural!r} in API group {group!r}"
                  if denied else "")
        self._reviews[key] = (time.monotonic(), answer)
        return answer

    def allowed(self, user: str, verb: str, group: str, plural: str) -> bool:
        review = self.gw.create(ACCESS_REVIEWS, None, {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": user, "groups": ["system:serviceaccounts", f"system:serviceaccounts:{self.namespace}",
                                              "system:authenticated"],
                     "resourceAttributes": {"verb": verb, "group": group, "resource": plural}}})
        return bool((review.get("status") or {}).get("allowed"))


