"""RBAC of `knative/` for real: each function's ServiceAccount identity may do what its code does (the
lifecycle tests run every function as its ServiceAccount) and is refused the rest (403 here). And the
rendered base applies (server-side dry run) to an API server with the Knative CRDs installed."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from functions.errors import PermanentError
from functions.gateway import Gateway
from functions.resources import CONFIGMAPS, CRDS, NAMESPACES, TRAINJOBS, cre_goodput, cre_jobs
from localstack.apiserver import LocalCluster
from localstack.manifests import kubectl, render, service_account_user

JOBS = cre_jobs("nvcre.nvidia.com")
TRAINJOB = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "x"},
            "spec": {"runtimeRef": {"name": "t"}}}

Call = Callable[[Gateway, str], Any]
REFUSED: list[tuple[str, str, Call]] = [
    ("phase", "patch jobs/status", lambda gw, ns: gw.patch(JOBS, ns, "llm", {"status": {}}, status=True)),
    ("phase", "create trainjobs", lambda gw, ns: gw.create(TRAINJOBS, ns, TRAINJOB)),
    ("launch", "list goodputmeasurements", lambda gw, ns: gw.list_all(cre_goodput("nvcre.nvidia.com"), ns)),
    ("launch", "patch jobs", lambda gw, ns: gw.patch(JOBS, ns, "llm", {"metadata": {"labels": {"a": "b"}}})),
    ("status", "delete trainjobs", lambda gw, ns: gw.delete(TRAINJOBS, ns, "x")),
    ("status", "list jobs", lambda gw, ns: gw.list_all(JOBS, ns)),
    ("restart", "create trainjobs", lambda gw, ns: gw.create(TRAINJOBS, ns, TRAINJOB)),
    ("resync", "patch jobs", lambda gw, ns: gw.patch(JOBS, ns, "llm", {"metadata": {"labels": {"a": "b"}}})),
    ("apiserversource", "create trainjobs", lambda gw, ns: gw.create(TRAINJOBS, ns, TRAINJOB)),
    ("workloadrun", "delete jobs", lambda gw, ns: gw.delete(JOBS, ns, "llm")),
    ("alert", "patch jobs/status", lambda gw, ns: gw.patch(JOBS, ns, "llm", {"status": {}}, status=True)),
    ("workloadrun", "create trainjobs", lambda gw, ns: gw.create(TRAINJOBS, ns, TRAINJOB)),
]
ALLOWED: list[tuple[str, str, Call]] = [
    ("phase", "get trainjobs", lambda gw, ns: gw.get(TRAINJOBS, ns, "x")),
    ("status", "get jobs", lambda gw, ns: gw.get(JOBS, ns, "llm")),
    ("restart", "list goodputmeasurements", lambda gw, ns: gw.list_all(cre_goodput("nvcre.nvidia.com"), ns)),
    ("resync", "list jobs in all namespaces", lambda gw, ns: gw.list_all(JOBS, None)),
    ("apiserversource", "list trainjobs", lambda gw, ns: gw.list_all(TRAINJOBS, None)),
    ("alert", "get jobs", lambda gw, ns: gw.get(JOBS, ns, "llm")),
    ("workloadrun", "create configmaps", lambda gw, ns: gw.create(CONFIGMAPS, ns, {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}})),
]


@pytest.mark.parametrize(("function", "what", "call"), REFUSED, ids=[f"{f}-{w}" for f, w, _ in REFUSED])
def test_refused_with_403(function: str, what: str, call: Call, cluster: LocalCluster, gateway: Gateway,
                          namespace: str) -> None:
    gateway.create(JOBS, namespace, {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                                     "metadata": {"name": "llm"},
                                     "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "t"}}}}})
    identity = cluster.gateway(service_account_user(f"crefn-{function}"))
    try:
        with pytest.raises(PermanentError, match="403 Forbidden"):
            call(identity, namespace)
    finally:
        identity.close()


@pytest.mark.parametrize(("function", "what", "call"), ALLOWED, ids=[f"{f}-{w}" for f, w, _ in ALLOWED])
def test_allowed(function: str, what: str, call: Call, cluster: LocalCluster, namespace: str) -> None:
    identity = cluster.gateway(service_account_user(f"crefn-{function}"))
    try:
        call(identity, namespace)
    finally:
        identity.close()


def knative_crd(group: str, kind: str, plural: str) -> dict[str, Any]:
    """A minimal CRD for a Knative kind: served, structural, everything under spec/status preserved."""
    open_object = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                                   "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                       "spec": open_object, "status": open_object}}}}]}}


KNATIVE_KINDS = [("serving.knative.dev", "Service", "services"), ("eventing.knative.dev", "Broker", "brokers"),
                 ("eventing.knative.dev", "Trigger", "triggers"),
                 ("sources.knative.dev", "ApiServerSource", "apiserversources"),
                 ("sources.knative.dev", "PingSource", "pingsources"),
                 ("sources.knative.dev", "SinkBinding", "sinkbindings")]


def test_base_applies_with_server_side_dry_run(cluster: LocalCluster, gateway: Gateway, tmp_path: Any) -> None:
    import time

    import yaml

    for group, kind, plural in KNATIVE_KINDS:
        if gateway.get(CRDS, None, f"{plural}.{group}") is None:
            gateway.create(CRDS, None, knative_crd(group, kind, plural))
    docs = render("base")
    if gateway.get(NAMESPACES, None, "crefn-system") is None:  # a dry run creates no namespace to put things in
        gateway.create(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace",
                                          "metadata": {"name": "crefn-system"}})
    rendered = tmp_path / "base.yaml"
    rendered.write_text(yaml.safe_dump_all(docs))
    argv = [kubectl(), "--kubeconfig", str(cluster.kubeconfig), "apply", "--dry-run=server", "-f", str(rendered)]
    deadline = time.monotonic() + 30
    while True:  # the new CRDs take a moment to be served
        result = subprocess.run(argv, capture_output=True, text=True, check=False)
        if result.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == len(docs) and all("(server dry run)" in line for line in lines)
