"""RBAC of `knative/` for real: each function's ServiceAccount identity may do what its code does (the
lifecycle tests run every function as its ServiceAccount) and is refused the rest (403 here). And the
rendered base, and the oidc overlay, apply (server-side dry run) to an API server with the Knative CRDs installed."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from functions.errors import CrefnError, Forbidden, NotFound
from functions.gateway import Gateway
from functions.resources import CONFIGMAPS, CRDS, EVENTS, NAMESPACES, PODS, TRAINJOBS, cre_goodput, cre_jobs
from localstack.apiserver import LocalCluster
from localstack.manifests import NAMESPACE as SA_NAMESPACE
from localstack.manifests import kubectl, render, service_account_user
from tests.conftest import SERVICE_ACCOUNTS
from tests.support.helpers import missing

JOBS = cre_jobs("nvcre.nvidia.com")
TRAINJOB = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "x"},
            "spec": {"runtimeRef": {"name": "t"}}}

Call = Callable[[Gateway, str], Any]


def create_event(gw: Gateway, ns: str) -> Any:
    import uuid

    return gw.create(EVENTS, ns, {
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": f"llm.{uuid.uuid4().hex[:8]}"},
        "eventTime": "2026-11-30T12:00:00.000000Z", "reportingController": "crefn.dev/controller",
        "reportingInstance": "crefn-test", "action": "WorkloadCreated", "reason": "WorkloadCreated", "type": "Normal",
        "note": "n", "regarding": {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": "llm",
                                   "namespace": ns}})
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
REFUSED += [(f, "create events", create_event) for f in ("phase", "alert", "workloadrun", "apiserversource")]
REFUSED += [
    ("status", "get pods/log", lambda gw, ns: read_log(gw, ns)),
    ("phase", "list pods", lambda gw, ns: gw.list_all(PODS, ns)),
    ("resync", "list pods", lambda gw, ns: gw.list_all(PODS, ns)),
    ("timeout", "create trainjobs", lambda gw, ns: gw.create(TRAINJOBS, ns, TRAINJOB)),
    ("timeout", "patch jobs", lambda gw, ns: gw.patch(JOBS, ns, "llm", {"metadata": {"labels": {"a": "b"}}})),
    ("apiserversource", "get pods/log", lambda gw, ns: read_log(gw, ns)),
]
ALLOWED: list[tuple[str, str, Call]] = [
    *((f, "create events", create_event) for f in ("launch", "status", "restart", "resync")),
    ("phase", "get trainjobs", lambda gw, ns: gw.get(TRAINJOBS, ns, "x")),
    ("status", "get jobs", lambda gw, ns: gw.get(JOBS, ns, "llm")),
    ("restart", "list goodputmeasurements", lambda gw, ns: gw.list_all(cre_goodput("nvcre.nvidia.com"), ns)),
    ("resync", "list jobs in all namespaces", lambda gw, ns: gw.list_all(JOBS, None)),
    ("resync", "list trainjobs in all namespaces", lambda gw, ns: gw.list_all(TRAINJOBS, None)),
    ("apiserversource", "list trainjobs", lambda gw, ns: gw.list_all(TRAINJOBS, None)),
    ("alert", "get jobs", lambda gw, ns: gw.get(JOBS, ns, "llm")),
    ("workloadrun", "create configmaps", lambda gw, ns: gw.create(CONFIGMAPS, ns, {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}})),
    ("phase", "get pods", lambda gw, ns: gw.get(PODS, ns, "p")),
    *((f, "list pods", lambda gw, ns: gw.list_all(PODS, ns)) for f in ("status", "restart", "timeout", "launch")),
    *((f, "get pods/log", lambda gw, ns: read_log(gw, ns)) for f in ("restart", "timeout", "launch")),
    ("timeout", "delete trainjobs", lambda gw, ns: gw.delete(TRAINJOBS, ns, "x")),
    ("apiserversource", "watch pods in all namespaces", lambda gw, ns: gw.list_all(PODS, None)),
]


def read_log(gw: Gateway, ns: str) -> str:
    """A pod's log: a missing pod answers 404 once the identity may read logs at all (403 before that)."""
    try:
        return gw.read_log(ns, "p", "node", 10, 1024, 5)
    except NotFound:
        return ""


@pytest.mark.parametrize(("function", "what", "call"), REFUSED, ids=[f"{f}-{w}" for f, w, _ in REFUSED])
def test_refused_with_403(function: str, what: str, call: Call, cluster: LocalCluster, gateway: Gateway,
                          namespace: str) -> None:
    gateway.create(JOBS, namespace, {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                                     "metadata": {"name": "llm"},
                                     "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "t"}}}}})
    identity = cluster.gateway(service_account_user(f"crefn-{function}"))
    try:
        with pytest.raises(Forbidden, match="403 Forbidden"):
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


KNATIVE_CRDS = ("services.serving.knative.dev", "brokers.eventing.knative.dev", "triggers.eventing.knative.dev",
                "apiserversources.sources.knative.dev", "pingsources.sources.knative.dev",
                "sinkbindings.sources.knative.dev")


NO_UPSTREAM_CRD = frozenset({"EventPolicy"})
"""Kinds whose CRD is not among the upstream copies the API server loads: tests/test_manifests.py checks them."""


@pytest.mark.parametrize("overlay", ["base", "overlays/oidc"])
def test_applies_with_server_side_dry_run(overlay: str, cluster: LocalCluster, gateway: Gateway,
                                          tmp_path: Any) -> None:
    import time

    import yaml

    for name in KNATIVE_CRDS:  # the real Knative CRDs the suite's API server loaded, full schemas
        crd = gateway.get(CRDS, None, name) or {}
        schema = next(v for v in crd["spec"]["versions"] if v.get("storage"))["schema"]["openAPIV3Schema"]
        assert schema["properties"]["spec"].get("properties"), name
    docs = [d for d in render(overlay) if d["kind"] not in NO_UPSTREAM_CRD]
    if gateway.get(NAMESPACES, None, "crefn-system") is None:  # a dry run creates no namespace to put things in
        gateway.create(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace",
                                          "metadata": {"name": "crefn-system"}})
    rendered = tmp_path / "rendered.yaml"
    rendered.write_text(yaml.safe_dump_all(docs))
    argv = [kubectl(), "--kubeconfig", str(cluster.kubeconfig), "apply", "--dry-run=server", "-o", "json", "-f",
            str(rendered)]
    deadline = time.monotonic() + 30
    while True:  # the new CRDs take a moment to be served
        result = subprocess.run(argv, capture_output=True, text=True, check=False)
        if result.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert result.returncode == 0, result.stderr
    answered = json.loads(result.stdout)
    answers = answered["items"] if answered.get("kind") == "List" else [answered]
    assert len(answers) == len(docs)
    by_key = {(a["kind"], a["metadata"]["name"]): a for a in answers}
    for doc in docs:  # 1.20 drops unknown fields silently: each answer must hold all that was sent
        got = by_key[(doc["kind"], doc["metadata"]["name"])]
        assert missing(doc, got) == [], (doc["kind"], doc["metadata"]["name"], missing(doc, got))


VERBS = {"get": "GET", "list": "GET", "watch": "GET", "create": "POST", "update": "PUT", "patch": "PATCH",
         "delete": "DELETE", "deletecollection": "DELETE"}


def granted() -> dict[str, set[tuple[str, str, str]]]:
    """Each ServiceAccount's (apiGroup, resource, verb) rights, from knative/base's ClusterRoles and bindings."""
    docs = render("base")
    roles = {d["metadata"]["name"]: d["rules"] for d in docs if d["kind"] == "ClusterRole"}
    rights: dict[str, set[tuple[str, str, str]]] = {}
    for binding in (d for d in docs if d["kind"] == "ClusterRoleBinding"):
        for subject in binding["subjects"]:
            mine = rights.setdefault(subject["name"], set())
            for rule in roles[binding["roleRef"]["name"]]:
                mine |= {(g, r, v) for g in rule.get("apiGroups", []) for r in rule["resources"] for v in rule["verbs"]}
    return rights


RIGHTS = granted()
UNIVERSE = sorted({(g, r) for rights in RIGHTS.values() for g, r, _ in rights})
"""Every (apiGroup, resource) some function may touch: the ones whose refusals matter."""


def path_of(group: str, resource: str, verb: str, namespaced: dict[tuple[str, str], tuple[str, bool]],
            namespace: str) -> tuple[str, list[tuple[str, str]]]:
    plural, _, sub = resource.partition("/")
    version, scoped = namespaced[(group, plural)]
    base = f"/api/{version}" if not group else f"/apis/{group}/{version}"
    where = f"{base}/namespaces/{namespace}/{plural}" if scoped else f"{base}/{plural}"
    named = verb not in ("list", "watch", "create", "deletecollection") or sub
    path = f"{where}/anything" + (f"/{sub}" if sub else "") if named else where
    query = [("watch", "true"), ("timeoutSeconds", "1")] if verb == "watch" else []
    return path, query


def discovery(gw: Gateway) -> dict[tuple[str, str], tuple[str, bool]]:
    """(group, plural) → (preferred version, namespaced), from the API server's discovery."""
    found: dict[tuple[str, str], tuple[str, bool]] = {}
    for r in gw.request("GET", "/api/v1")["resources"]:
        found[("", r["name"])] = ("v1", r["namespaced"])
    for group in gw.request("GET", "/apis")["groups"]:
        version = group["preferredVersion"]["version"]
        for r in gw.request("GET", f"/apis/{group['name']}/{version}")["resources"]:
            found.setdefault((group["name"], r["name"].split("/")[0]), (version, r["namespaced"]))
    return found


@pytest.mark.parametrize("account", sorted(RIGHTS))
def test_every_verb_outside_the_role_is_refused(account: str, cluster: LocalCluster, gateway: Gateway,
                                               namespace: str) -> None:
    """Generated from the Roles: every (resource, verb) of UNIVERSE the account is not granted, tried for
    real as the account, is refused by the authorizer (403, before any validation)."""
    namespaced = discovery(gateway)
    identity = cluster.gateway(service_account_user(account)) if account in SERVICE_ACCOUNTS \
        else cluster.service_account_gateway(SA_NAMESPACE, account)  # made with a token on demand
    tried, allowed = 0, []
    try:
        for group, resource in UNIVERSE:
            for verb, method in VERBS.items():
                if (group, resource, verb) in RIGHTS[account] or (group, "*", verb) in RIGHTS[account]:
                    continue
                if "/" in resource and verb in ("list", "watch", "deletecollection"):
                    continue  # a subresource is reached through one object: get, create, update, patch, delete
                path, query = path_of(group, resource, verb, namespaced, namespace)
                body = {} if method in ("POST", "PUT", "PATCH") else None
                tried += 1
                try:
                    identity.request(method, path, body=body, query=query,
                                     content_type="application/merge-patch+json" if method == "PATCH"
                                     else "application/json")
                    allowed.append(f"{verb} {resource}")
                except Forbidden:
                    continue
                except CrefnError as e:
                    allowed.append(f"{verb} {resource}: {e}")
    finally:
        identity.close()
    assert tried > 20 and not allowed, allowed
