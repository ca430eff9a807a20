"""RBAC of `knative/` for real: each function's ServiceAccount identity may do what its code does (the
lifecycle tests run every function as its ServiceAccount) and is refused the rest (403 here); under the
closed install (namespaced) only in its tenant namespaces, under the observe install without any write. Every
documented install applied and asked what it grants: tests/system/test_installs.py."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from functions.domain.measurement_objects import bandwidth_measurements
from functions.runtime.client import send
from functions.runtime.errors import CrefnError, Forbidden, NotFound
from functions.runtime.gateway import Gateway
from functions.runtime.resources import (
    CONFIGMAPS,
    EVENTS,
    NAMESPACES,
    NODES,
    PODS,
    TRAINJOBS,
    Resource,
    cre_goodput,
    cre_jobs,
)
from localstack.cluster.apiserver import LocalCluster
from localstack.eventing.apisource import apiserver_record
from localstack.manifests import NAMESPACE as SA_NAMESPACE
from localstack.manifests import render, service_account_user
from tests.conftest import CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES, SERVICE_ACCOUNTS
from tests.support.helpers import Receiver
from tests.support.world import Relay, World, cache_caught_up, ping

JOBS = cre_jobs("nvcre.nvidia.com")
BANDWIDTH = bandwidth_measurements("nvcre.nvidia.com")
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
def label_missing(res: Resource) -> Call:
    """A label patch of an object of `res` that is not there: 404 once the authorizer lets it through (403
    otherwise)."""
    def call(gw: Gateway, ns: str) -> None:
        with contextlib.suppress(NotFound):
            gw.patch(res, ns, "missing", {"metadata": {"labels": {"a": "b"}}})
    return call


REFUSED: list[tuple[str, str, Call]] = [
    ("phase", "patch jobs/status", lambda gw, ns: gw.patch(JOBS, ns, "llm", {"status": {}}, status=True)),
    ("phase", "create trainjobs", lambda gw, ns: gw.create(TRAINJOBS, ns, TRAINJOB)),
    ("launch", "list goodputmeasurements", lambda gw, ns: gw.list_all(cre_goodput("nvcre.nvidia.com"), ns)),
    ("status", "delete trainjobs", lambda gw, ns: gw.delete(TRAINJOBS, ns, "x")),
    ("status", "list jobs", lambda gw, ns: gw.list_all(JOBS, ns)),
    ("restart", "delete jobs", lambda gw, ns: gw.delete(JOBS, ns, "llm")),
    ("resync", "delete jobs", lambda gw, ns: gw.delete(JOBS, ns, "llm")),
    ("apiserversource", "create trainjobs", lambda gw, ns: gw.create(TRAINJOBS, ns, TRAINJOB)),
    ("workloadrun", "delete jobs", lambda gw, ns: gw.delete(JOBS, ns, "llm")),
    ("alert", "patch jobs/status", lambda gw, ns: gw.patch(JOBS, ns, "llm", {"status": {}}, status=True)),
    ("workloadrun", "create trainjobs", lambda gw, ns: gw.create(TRAINJOBS, ns, TRAINJOB)),
]
REFUSED += [(f, "create events", create_event) for f in ("phase", "alert", "apiserversource")]
REFUSED += [
    ("status", "get pods/log", lambda gw, ns: read_log(gw, ns)),
    ("phase", "list pods", lambda gw, ns: gw.list_all(PODS, ns)),
    ("timeout", "create trainjobs", lambda gw, ns: gw.create(TRAINJOBS, ns, TRAINJOB)),
    ("timeout", "patch jobs", lambda gw, ns: gw.patch(JOBS, ns, "llm", {"metadata": {"labels": {"a": "b"}}})),
    ("apiserversource", "get pods/log", lambda gw, ns: read_log(gw, ns)),
    ("measurements", "delete goodputmeasurements", lambda gw, ns: gw.delete(cre_goodput("nvcre.nvidia.com"), ns, "x")),
    ("measurements", "list bandwidthmeasurements", lambda gw, ns: gw.list_all(BANDWIDTH, ns)),
    ("workloadrun", "get nodes", lambda gw, ns: gw.get(NODES, None, "x")),
]
ALLOWED: list[tuple[str, str, Call]] = [
    *((f, "create events", create_event) for f in ("launch", "status", "restart", "resync")),
    ("phase", "get trainjobs", lambda gw, ns: gw.get(TRAINJOBS, ns, "x")),
    ("status", "get jobs", lambda gw, ns: gw.get(JOBS, ns, "llm")),
    ("status", "get trainjobs", lambda gw, ns: gw.get(TRAINJOBS, ns, "x")),
    ("restart", "list goodputmeasurements", lambda gw, ns: gw.list_all(cre_goodput("nvcre.nvidia.com"), ns)),
    ("restart", "create trainjobs", lambda gw, ns: gw.create(TRAINJOBS, ns, TRAINJOB)),  # the next attempt
    # CRE's TrainJob, adopted: labelled as the current attempt
    *((f, "patch trainjobs", label_missing(TRAINJOBS)) for f in ("launch", "restart")),
    ("resync", "list jobs in all namespaces", lambda gw, ns: gw.list_all(JOBS, None)),
    ("resync", "list trainjobs in all namespaces", lambda gw, ns: gw.list_all(TRAINJOBS, None)),
    ("resync", "patch jobs", label_missing(JOBS)),
    ("apiserversource", "list trainjobs", lambda gw, ns: gw.list_all(TRAINJOBS, None)),
    ("alert", "get jobs", lambda gw, ns: gw.get(JOBS, ns, "llm")),
    ("alert", "list events", lambda gw, ns: gw.list_all(EVENTS, ns, field_selector="regarding.uid=x", page_size=1)),
    ("workloadrun", "create configmaps", lambda gw, ns: gw.create(CONFIGMAPS, ns, {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}})),
    ("phase", "get pods", lambda gw, ns: gw.get(PODS, ns, "p")),
    *((f, "list pods", lambda gw, ns: gw.list_all(PODS, ns))
      for f in ("status", "restart", "timeout", "launch", "validate", "resync")),
    ("launch", "patch jobs", label_missing(JOBS)),  # CRE's finalizer removed
    *((f, "get pods/log", lambda gw, ns: read_log(gw, ns)) for f in ("restart", "timeout", "launch")),
    ("timeout", "delete trainjobs", lambda gw, ns: gw.delete(TRAINJOBS, ns, "x")),
    ("apiserversource", "watch pods in all namespaces", lambda gw, ns: gw.list_all(PODS, None)),
    ("measurements", "delete bandwidthmeasurements", lambda gw, ns: gw.delete(BANDWIDTH, ns, "x")),
    ("workloadrun", "list nodes", lambda gw, ns: gw.list_all(NODES, None)),
    ("workloadrun", "create events", create_event),  # a run's transitions (CRE's WorkloadRun controller)
    ("measurements", "create bandwidthmeasurements", lambda gw, ns: create_bandwidth(gw, ns)),
]


def create_bandwidth(gw: Gateway, ns: str) -> Any:
    return gw.create(BANDWIDTH, ns, {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "BandwidthMeasurement",
                                     "metadata": {"name": f"bm-{uuid.uuid4().hex[:6]}"},
                                     "spec": {"jobRef": {"kind": "Job", "name": "llm"}, "logProfileRef": "nccl"}})


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


VERBS = {"get": "GET", "list": "GET", "watch": "GET", "create": "POST", "update": "PUT", "patch": "PATCH",
         "delete": "DELETE", "deletecollection": "DELETE"}


Right = tuple[str, str, str]
"""(apiGroup, resource, verb)"""


@dataclass(frozen=True)
class Bound:
    """What an account is granted: by ClusterRoleBindings (everywhere), and by RoleBindings (per namespace)."""

    cluster: frozenset[Right] = frozenset()
    namespaces: Mapping[str, frozenset[Right]] = field(default_factory=dict)


def bound_rights(docs: list[dict[str, Any]]) -> dict[str, Bound]:
    """Each ServiceAccount's rights, from the ClusterRoles and bindings of rendered manifests."""
    roles = {d["metadata"]["name"]: d["rules"] for d in docs if d["kind"] == "ClusterRole"}
    cluster: dict[str, set[Right]] = {}
    namespaces: dict[str, dict[str, set[Right]]] = {}
    for binding in (d for d in docs if d["kind"] in ("ClusterRoleBinding", "RoleBinding")):
        rules = roles[binding["roleRef"]["name"]]
        rights = {(g, r, v) for rule in rules for g in rule.get("apiGroups", []) for r in rule["resources"]
                  for v in rule["verbs"]}
        for subject in binding["subjects"]:
            if binding["kind"] == "ClusterRoleBinding":
                cluster.setdefault(subject["name"], set()).update(rights)
            else:
                namespaces.setdefault(subject["name"], {}).setdefault(binding["metadata"]["namespace"], set()) \
                    .update(rights)
    return {account: Bound(frozenset(cluster.get(account, ())),
                           {ns: frozenset(r) for ns, r in namespaces.get(account, {}).items()})
            for account in cluster.keys() | namespaces.keys()}


def granted() -> dict[str, set[Right]]:
    """Each ServiceAccount's (apiGroup, resource, verb) rights, from knative/base's ClusterRoles and bindings."""
    return {account: set(bound.cluster) for account, bound in bound_rights(render("base")).items()}


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
    query = [("watch", "true"), ("timeoutSeconds", "1"), ("labelSelector", "crefn.dev/none=none")] \
        if verb == "watch" else []  # a watch allowed ends after a second, having sent nothing
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
                tried += 1
                if authorized(identity, method, *path_of(group, resource, verb, namespaced, namespace)):
                    allowed.append(f"{verb} {resource}")
    finally:
        identity.close()
    assert tried > 20 and not allowed, allowed


def authorized(identity: Gateway, method: str, path: str, query: list[tuple[str, str]]) -> bool:
    """Whether the authorizer lets `identity` make the request: any answer but its 403 (404 for the object
    `anything`, 400 or 422 for an empty body, a watch's stream) is past it."""
    try:
        identity.request(method, path, body={} if method in ("POST", "PUT", "PATCH") else None, query=query,
                         content_type="application/merge-patch+json" if method == "PATCH" else "application/json")
    except Forbidden:
        return False
    except (CrefnError, ValueError):  # ValueError: an answer that is not one JSON document
        return True
    return True


# -- the installs that narrow the rights: closed (namespaced: writes in the tenant namespaces only), observe (no write)

NAMESPACED, OBSERVE = "installs/closed", "installs/observe"
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
RBAC_KINDS = {"ClusterRole": CLUSTER_ROLES, "ClusterRoleBinding": CLUSTER_ROLE_BINDINGS,
              "RoleBinding": Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")}


@dataclass(frozen=True)
class Loaded:
    """An install's ClusterRoles and bindings as loaded into the API server, under names of their own (they
    meet neither knative/base's, which the session loads, nor another run's): its ServiceAccounts in the
    namespace `accounts`, each of its tenant namespaces renamed (`tenants`: the install's name → the name here)."""

    accounts: str
    tenants: Mapping[str, str]
    rights: Mapping[str, Bound]


def load_rbac(gw: Gateway, install: str) -> Loaded:
    tag = uuid.uuid4().hex[:6]
    docs = [d for d in render(install) if d["kind"] in RBAC_KINDS]
    rights = bound_rights(docs)
    accounts = f"crefn-{install.rsplit('/', 1)[-1]}-{tag}"
    tenants = {d["metadata"]["namespace"]: f"{d['metadata']['namespace']}-{tag}" for d in docs
               if d["kind"] == "RoleBinding"}
    for name in (accounts, *tenants.values()):
        gw.create(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    for doc in docs:
        meta = doc["metadata"]
        if doc["kind"] == "RoleBinding":
            meta["namespace"] = tenants[meta["namespace"]]
        else:
            meta["name"] += f"-{tag}"
        if doc["kind"] != "ClusterRole":
            doc["roleRef"]["name"] += f"-{tag}"
            doc["subjects"] = [{**s, "namespace": accounts} for s in doc["subjects"]]
        gw.create(RBAC_KINDS[doc["kind"]], meta.get("namespace"), doc)
    roles = {d["metadata"]["name"]: d["rules"] for d in docs if d["kind"] == "ClusterRole"}
    for kind in ("ClusterRoleBinding", "RoleBinding"):  # each kind's bindings reach the authorizer in order
        last = [d for d in docs if d["kind"] == kind][-1:]
        for binding in last:
            rule = roles[binding["roleRef"]["name"]][0]
            until_allowed(gw, binding["subjects"][0], binding["metadata"].get("namespace", "default"), rule)
    return Loaded(accounts, tenants, rights)


def until_allowed(gw: Gateway, subject: dict[str, str], namespace: str, rule: dict[str, Any]) -> None:
    """Waits (10 s at most) until the authorizer grants `subject` the first verb of `rule` in `namespace`."""
    import time

    resource, _, sub = rule["resources"][0].partition("/")
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {
        "user": f"system:serviceaccount:{subject['namespace']}:{subject['name']}",
        "resourceAttributes": {"namespace": namespace, "group": rule["apiGroups"][0], "verb": rule["verbs"][0],
                               "resource": resource, "subresource": sub}}}
    deadline = time.monotonic() + 10
    while not gw.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", review)["status"].get("allowed"):
        assert time.monotonic() < deadline, review
        time.sleep(0.1)


@pytest.fixture(scope="module")
def install_rbac(gateway: Gateway) -> Iterator[Callable[[str], Loaded]]:
    """install_rbac(install) → its RBAC, loaded once for the module."""
    loaded: dict[str, Loaded] = {}

    def load(install: str) -> Loaded:
        if install not in loaded:
            loaded[install] = load_rbac(gateway, install)
        return loaded[install]

    yield load


def tried_writes(identity: Gateway, namespaced: dict[tuple[str, str], tuple[str, bool]], namespace: str,
                 expected: Callable[[Right, bool], bool]) -> tuple[set[Right], list[str]]:
    """Every (resource, verb) of UNIVERSE tried for real in `namespace` (a resource of no namespace too):
    the writes the authorizer let through, and every answer that is not the `expected(right, scoped)` one."""
    writes, wrong = set(), []
    for group, resource in UNIVERSE:
        scoped = namespaced[(group, resource.partition("/")[0])][1]
        for verb, method in VERBS.items():
            if "/" in resource and verb in ("list", "watch", "deletecollection"):
                continue
            allowed = authorized(identity, method, *path_of(group, resource, verb, namespaced, namespace))
            if allowed and verb in WRITE_VERBS:
                writes.add((group, resource, verb))
            if allowed != expected((group, resource, verb), scoped):
                wrong.append(f"{verb} {resource} in {namespace}: {'allowed' if allowed else 'refused'}")
    return writes, wrong


@pytest.mark.parametrize("install", [NAMESPACED, OBSERVE])
@pytest.mark.parametrize("account", sorted(RIGHTS))
def test_install_rights_hold_exactly_where_they_are_bound(install: str, account: str, cluster: LocalCluster,
                                                          gateway: Gateway, namespace: str,
                                                          install_rbac: Callable[[str], Loaded]) -> None:
    """Every (resource, verb) of UNIVERSE, tried for real in each tenant namespace and in another one, is
    allowed exactly when the install's bindings grant it there. namespaced: each write of knative/base is
    allowed in every tenant namespace and refused (403) in any other, and nothing is writable cluster-wide
    (nor a pod's log readable); observe: every write is refused everywhere, but `parity`'s Events (its report of
    a verdict that differs from CRE's)."""
    loaded = install_rbac(install)
    bound = loaded.rights.get(account, Bound())
    base_writes = {right for right in RIGHTS[account] if right[2] in WRITE_VERBS}
    everywhere = {("events.k8s.io", "events", "create")} if (install, account) == (OBSERVE, "crefn-parity") else set()
    assert {right for right in bound.cluster if right[2] in WRITE_VERBS} == everywhere
    assert ("", "pods/log", "get") not in bound.cluster or install == OBSERVE  # observe reads as base does
    namespaced = discovery(gateway)
    identity = cluster.service_account_gateway(loaded.accounts, account)
    try:
        elsewhere, wrong = tried_writes(identity, namespaced, namespace,
                                        lambda right, scoped: right in bound.cluster)
        assert elsewhere == everywhere and wrong == []
        for listed, here in loaded.tenants.items():
            granted_here = bound.cluster | bound.namespaces.get(listed, frozenset())
            writes, wrong = tried_writes(identity, namespaced, here, lambda right, scoped, granted=granted_here:
                                         right in (granted if scoped else bound.cluster))
            assert (writes, wrong) == (base_writes, []), listed
    finally:
        identity.close()
    assert sorted(loaded.tenants) == (["team-a", "team-b"] if install == NAMESPACED else [])


def served_as(serve: Callable[..., Any], cluster: LocalCluster, loaded: Loaded, target: str, **env: str) -> str:
    """`target` served as its ServiceAccount of `loaded` (that install's rights and no others)."""
    kubeconfig = cluster.service_account_kubeconfig(loaded.accounts, f"crefn-{target}")
    return str(serve(target, CREFN_KUBECONFIG=str(kubeconfig), CREFN_LOG_LEVEL="WARNING", **env).url)


def test_namespaced_launches_in_a_tenant_namespace_and_names_the_refusal_elsewhere(
        install_rbac: Callable[[str], Loaded], serve: Callable[..., Any], cluster: LocalCluster, gateway: Gateway,
        namespace: str) -> None:
    """A Job outside the tenant namespaces (no source watches it; a replayed event, or a Job resync lists)
    is refused by the API server: the function answers 503 with the refusal, which names its ServiceAccount,
    the verb, the resource and the namespace. Knative retries it, then keeps it as a dead letter."""
    loaded = install_rbac(NAMESPACED)
    tenant = loaded.tenants["team-a"]
    url = served_as(serve, cluster, loaded, "launch")
    job = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
           "metadata": {"name": "llm", "labels": {"crefn.dev/managed": "true"}},
           "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "torch-distributed"}}}}}
    try:
        for ns in (tenant, namespace):
            gateway.create(JOBS, ns, job)
        launched = send(url, apiserver_record("add", gateway.get(JOBS, tenant, "llm") or {}, JOBS, "test"))
        assert (launched.status, launched.ce.get("type")) == (200, "dev.crefn.workload.created"), launched.text
        assert gateway.get(TRAINJOBS, tenant, "llm-workload") is not None
        refused = send(url, apiserver_record("add", gateway.get(JOBS, namespace, "llm") or {}, JOBS, "test"))
        assert refused.status == 503  # the answer is one line of at most 300 characters: the refusal's start
        assert refused.text.startswith(
            f'GET /apis/nvcre.nvidia.com/v1alpha1/namespaces/{namespace}/jobs/llm: 403 Forbidden: jobs.nvcre.nvidia.com'
            f' "llm" is forbidden: User "system:serviceaccount:{loaded.accounts}:crefn-launch" cannot get resource'
            ' "jobs"'), refused.text
        assert gateway.get(TRAINJOBS, namespace, "llm-workload") is None
        sink = Receiver(default=202)
        cache_caught_up(gateway, namespace, (JOBS,))  # resync lists from the API server's watch cache
        try:  # resync's LIST is cluster-wide: it meets the Job, is refused, names it and answers 503
            tick = send(served_as(serve, cluster, loaded, "resync", K_SINK=sink.url), ping())
        finally:
            sink.close()
        assert tick.status == 503
        assert f"failed; first: {namespace}/llm: POST /apis/trainer.kubeflow.org/v1alpha1/namespaces/{namespace}" \
            "/trainjobs: 403 Forbidden: trainjobs.trainer.kubeflow.org is forbidden: User " in tick.text, tick.text
    finally:  # a later resync tick of another test lists Jobs across namespaces
        for res, name in ((TRAINJOBS, "llm-workload"), (JOBS, "llm")):
            with contextlib.suppress(NotFound):
                gateway.delete(res, tenant, name)


def test_observe_mode_writes_nothing_on_the_observe_installs_rights(
        install_rbac: Callable[[str], Loaded], serve: Callable[..., Any], cluster: LocalCluster, relay: Relay,
        world: Callable[..., World]) -> None:
    """The functions a failing attempt reaches, served in observe mode as the observe install's ServiceAccounts:
    they answer every event (no 403 turned 503), emit their verdicts, and call no write at all."""
    loaded = install_rbac(OBSERVE)
    targets = ("phase", "launch", "status", "restart", "measurements")
    urls = {t: served_as(serve, cluster, loaded, t, CREFN_MODE="observe", K_SINK=relay.url,
                         CREFN_RESTART_GRACE_SECONDS="0") for t in targets}
    w = world(urls)
    w.create_job()
    w.checkpoint_evidence()
    w.settle()  # launch in observe mode: CRE's own controller launches
    assert w.trainjob() is None
    w.launched_by_cre()
    before = w.job()["metadata"]["resourceVersion"]
    w.settle()
    w.trainer("fail")
    w.settle()
    assert w.job()["metadata"]["resourceVersion"] == before
    assert {o.status for o in w.broker.outcomes} <= {200, 202} and not w.dead_letters, w.dump()
    assert {"dev.crefn.workload.phase", "dev.crefn.job.condition.changed", "dev.crefn.job.restarted"} \
        <= {type_ for _, type_ in w.replies()}
    calls = {target: kube_calls(url) for target, url in urls.items()}
    assert {verb for made in calls.values() for verb, _, _ in made} == {"get", "list"}, calls
    assert {code for made in calls.values() for _, _, code in made} <= {"200", "404"}, calls


def kube_calls(url: str) -> set[tuple[str, str, str]]:
    """(verb, resource, code) of every Kubernetes API call a served function counted (its /metrics)."""
    import re
    import urllib.request

    with urllib.request.urlopen(url.rstrip("/") + "/metrics", timeout=10) as answer:
        text = answer.read().decode()
    return {(m["verb"], m["resource"], m["code"]) for m in re.finditer(
        r'^crefn_kube_requests_total\{(?=[^}]*verb="(?P<verb>[^"]+)")(?=[^}]*resource="(?P<resource>[^"]+)")'
        r'(?=[^}]*code="(?P<code>[^"]+)")[^}]*\}', text, re.MULTILINE)}
