"""The stack's stand-in for Knative's controllers (`localstack.knative`) against the real API server with the
upstream CRDs: the default install's objects written in the test's namespace, the settings ConfigMap holding the
values the functions run with (a function's own value in its Service's `env`, read back as `cre-fn doctor` reads
it), and the status of each kind as Knative's controllers would write it, from what runs: a Service Ready only
while its process runs, a Trigger only when its subscriber resolves, an ApiServerSource's SufficientPermissions
only when a SubjectAccessReview grants its ServiceAccount get, list and watch. The whole stack under `cre-fn
doctor`: tests/localstack/test_dev.py."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest

from functions.runtime.gateway import Gateway
from functions.runtime.resources import APISERVERSOURCES, BROKERS, DEPLOYMENTS, KSERVICES, TRIGGERS, Resource
from functions.tools.services import service
from localstack.knative import KINDS, Endpoint, Reconciler, env_from, write_objects
from localstack.manifests import NAMESPACE, render
from localstack.revisions import apply_settings, settings_of

BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False)
BROKER_URL = "http://127.0.0.1:8080/"
PHASE_URL = "http://127.0.0.1:8081/"


def in_namespace(doc: dict[str, Any], namespace: str) -> dict[str, Any]:
    return {**doc, "metadata": {**doc["metadata"], "namespace": namespace}}


def conditions(gw: Gateway, res: Resource, namespace: str, name: str) -> dict[str, tuple[str, str]]:
    obj = gw.get(res, namespace, name) or {}
    return {c["type"]: (c["status"], c.get("reason", "")) for c in (obj.get("status") or {}).get("conditions") or ()}


@pytest.fixture
def written(gateway: Gateway, namespace: str, upstream_crds: Path) -> Reconciler:
    """The default install's objects in the test's namespace; `phase` (manage mode) and `parity` (observe mode)
    running behind their Services, nothing behind the others; the Broker serving; the source crefn-jobs
    watching."""
    endpoints = {"crefn-phase": Endpoint(PHASE_URL, lambda: True, {"CREFN_MODE": "manage", "K_SINK": BROKER_URL}),
                 "crefn-parity": Endpoint("http://127.0.0.1:8082/", lambda: True, {"CREFN_MODE": "observe"})}
    docs = [in_namespace(d, namespace) for d in render("installs/default")
            if d["metadata"].get("namespace") == NAMESPACE]
    install_settings = {n for d in docs if d["kind"] == "ConfigMap" and (n := d["metadata"]["name"]).startswith(
        "crefn-settings-")}
    data = {**settings_of(docs), "CREFN_MODE": "manage", "CREFN_LOG_LEVEL": "ERROR"}
    served = apply_settings(gateway, namespace, data)  # as the stack does before it serves the functions
    written = write_objects(gateway, docs, endpoints, served, data)
    for (api_version, kind), res in KINDS.items():  # every object of the install of these kinds, and no other
        names = sorted(d["metadata"]["name"] for d in docs if (d["apiVersion"], d["kind"]) == (api_version, kind)
                       and d["metadata"]["name"] not in install_settings)
        names = sorted([*names, served]) if kind == "ConfigMap" else names
        assert sorted(o["metadata"]["name"] for o in gateway.list_all(res, namespace)) == names, kind
    assert len(install_settings) == 1  # the install's settings ConfigMap: the one served from stands for it
    assert written == sum(1 for d in docs if (d["apiVersion"], d["kind"]) in KINDS) - 1 > 40
    reconciler = Reconciler(gateway, namespace, endpoints, lambda: BROKER_URL, {"crefn-jobs": lambda: True},
                            recheck=0, settings=lambda: served)
    reconciler.reconcile()
    return reconciler


def test_the_settings_are_the_ones_the_functions_run_with(gateway: Gateway, namespace: str,
                                                          written: Reconciler) -> None:
    (name,) = {n for s in gateway.list_all(KSERVICES, namespace) for n in env_from(s)}  # all read the served one
    assert name.startswith("crefn-settings-") and written.settings is not None and name == written.settings()
    settings = (gateway.get(Resource("", "v1", "configmaps", "ConfigMap"), namespace, name) or {})["data"]
    assert (settings["CREFN_MODE"], settings["CREFN_LOG_LEVEL"], settings["CREFN_RESTART_GRACE_SECONDS"]) == (
        "manage", "ERROR", "30")  # the stack's values; what the stack does not set stays the install's
    assert service(gateway, namespace, "crefn-phase").mode == "manage"
    assert service(gateway, namespace, "crefn-parity").mode == "observe"  # its own value, in its Service's env


def test_services_and_triggers_are_ready_as_what_serves_them(gateway: Gateway, namespace: str,
                                                              written: Reconciler) -> None:
    ready = ("True", "")
    assert conditions(gateway, KSERVICES, namespace, "crefn-phase") == {
        "ConfigurationsReady": ready, "RoutesReady": ready, "Ready": ready}
    assert (gateway.get(KSERVICES, namespace, "crefn-phase") or {})["status"]["url"] == PHASE_URL
    assert conditions(gateway, KSERVICES, namespace, "crefn-launch")["Ready"] == ("False", "RevisionMissing")
    assert conditions(gateway, BROKERS, namespace, "crefn")["Ready"] == ready
    assert conditions(gateway, TRIGGERS, namespace, "crefn-phase-trainjobs") == {
        "BrokerReady": ready, "SubscriberResolved": ready, "Subscribed": ready, "Ready": ready}
    assert (gateway.get(TRIGGERS, namespace, "crefn-phase-trainjobs") or {})["status"]["subscriberUri"] == PHASE_URL
    assert conditions(gateway, TRIGGERS, namespace, "crefn-launch-jobs")["Ready"] == (
        "False", "Unable to get the Subscriber's URI")


def test_a_service_whose_process_exited_is_not_ready_and_its_triggers_neither(
        gateway: Gateway, namespace: str, written: Reconciler) -> None:
    before = (gateway.get(KSERVICES, namespace, "crefn-phase") or {})["status"]["conditions"]
    written.reconcile()  # nothing changed: nothing written, the times kept
    assert (gateway.get(KSERVICES, namespace, "crefn-phase") or {})["status"]["conditions"] == before
    gone = Reconciler(gateway, namespace, {"crefn-phase": Endpoint(PHASE_URL, lambda: False, {})},
                      written.broker_url, written.sources)
    gone.reconcile()
    assert conditions(gateway, KSERVICES, namespace, "crefn-phase")["Ready"] == ("False", "RevisionFailed")
    assert "url" not in (gateway.get(KSERVICES, namespace, "crefn-phase") or {})["status"]
    assert conditions(gateway, TRIGGERS, namespace, "crefn-phase-trainjobs")["SubscriberResolved"] == (
        "False", "Unable to get the Subscriber's URI")


def test_a_source_has_sufficient_permissions_as_rbac_grants_them(
        gateway: Gateway, namespace: str, written: Reconciler) -> None:
    refused = (gateway.get(APISERVERSOURCES, namespace, "crefn-jobs") or {})["status"]["conditions"]
    assert {c["type"]: (c["status"], c.get("message", "")) for c in refused}["SufficientPermissions"] == (
        "False", f"User 'system:serviceaccount:{namespace}:crefn-apiserversource' cannot get, list, watch resource "
                 "'jobs' in API group 'nvcre.nvidia.com'")
    binding = f"crefn-apiserversource-{namespace}"
    gateway.create(BINDINGS, None, {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": binding},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "crefn-apiserversource"},
        "subjects": [{"kind": "ServiceAccount", "name": "crefn-apiserversource", "namespace": namespace}]})
    try:
        written.reconcile()
        assert conditions(gateway, APISERVERSOURCES, namespace, "crefn-jobs") == {
            "SufficientPermissions": ("True", ""), "SinkProvided": ("True", ""), "Deployed": ("True", ""),
            "Ready": ("True", "")}
        # granted, but no watch of the stack runs for it: not Ready
        assert conditions(gateway, APISERVERSOURCES, namespace, "crefn-pods")["Ready"] == ("False", "NotDeployed")
    finally:
        with contextlib.suppress(Exception):
            gateway.delete(BINDINGS, None, binding)


def test_a_new_settings_configmap_is_read_by_every_service_and_the_recorder_is_available_as_it_serves(
        gateway: Gateway, namespace: str, written: Reconciler) -> None:
    """A roll of the stack (`localstack.revisions`) makes every Service read the new ConfigMap, as a kustomize
    build with a changed setting would; the dead-letter recorder's Deployment is Available while the local
    Broker's dead-letter sink serves, and not when nothing serves it."""
    before = {n for s in gateway.list_all(KSERVICES, namespace) for n in env_from(s)}
    observe = apply_settings(gateway, namespace, {"CREFN_MODE": "observe", "CREFN_LOG_LEVEL": "ERROR"})
    assert before != {observe}
    rolled = Reconciler(gateway, namespace, {"crefn-dead-letters": Endpoint(BROKER_URL, lambda: True, {})},
                        written.broker_url, written.sources, recheck=0, settings=lambda: observe)
    rolled.reconcile()
    assert {n for s in gateway.list_all(KSERVICES, namespace) for n in env_from(s)} == {observe}
    assert service(gateway, namespace, "crefn-phase").mode == "observe"
    deployment = gateway.get(DEPLOYMENTS, namespace, "crefn-dead-letters") or {}
    assert [(c["type"], c["status"]) for c in deployment["status"]["conditions"]] == [("Available", "True")]
    assert deployment["status"]["availableReplicas"] == 1
    written.reconcile()  # nothing serves the recorder in this one
    deployment = gateway.get(DEPLOYMENTS, namespace, "crefn-dead-letters") or {}
    assert [(c["type"], c["status"], c["reason"]) for c in deployment["status"]["conditions"]] == [
        ("Available", "False", "MinimumReplicasUnavailable")]
