"""An install's objects applied for real to the test API server (the Knative CRDs loaded), and that API server then
asked what each ServiceAccount was granted (a SelfSubjectRulesReview as the account, in a tenant namespace and in
another one): exactly what the objects' bindings say, and what each component promises (observe no write but
parity's Events, namespaced no write outside the tenant namespaces, base its writes everywhere). Each application
gets a namespace, tenant namespaces, cluster-wide names and a part-of label value of its own (`isolated`), so that
it meets neither another nor the session's RBAC of knative/base. Used for knative/installs/ and the release bundle
(tests/system/test_installs.py, tests/system/test_release.py)."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from functions.runtime.errors import AlreadyExists
from functions.runtime.gateway import Gateway
from functions.runtime.resources import CRDS, NAMESPACES
from localstack.cluster.apiserver import LocalCluster
from localstack.manifests import kubectl
from tests.support.helpers import missing

KNATIVE_CRDS = ("services.serving.knative.dev", "brokers.eventing.knative.dev", "triggers.eventing.knative.dev",
                "apiserversources.sources.knative.dev", "pingsources.sources.knative.dev",
                "sinkbindings.sources.knative.dev", "eventpolicies.eventing.knative.dev",
                "kafkasinks.eventing.knative.dev")
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
NOT_SERVED = frozenset({"PodMonitor", "PrometheusRule"})
"""Kinds whose CRDs (the Prometheus Operator's) the test API server does not load."""
PARITY_EVENTS = ("events.k8s.io", "events", "create")
TENANTS = ("team-a", "team-b")
Right = tuple[str, str, str]


def isolated(docs: list[dict[str, Any]], tag: str) -> list[dict[str, Any]]:
    """`docs` with every namespace, cluster-wide name and the part-of label value suffixed with `tag`."""
    text = yaml.safe_dump_all([d for d in docs if d["kind"] not in NOT_SERVED])
    for name in ("crefn-system", *TENANTS):
        text = re.sub(rf"(?<![\w-]){name}(?![\w-])", f"{name}-{tag}", text)
    text = text.replace("app.kubernetes.io/part-of: cre-functions", f"app.kubernetes.io/part-of: cre-functions-{tag}")
    out = list(yaml.safe_load_all(text))
    for doc in out:
        if doc["kind"] in ("ClusterRole", "ClusterRoleBinding"):
            doc["metadata"]["name"] += f"-{tag}"
        if doc["kind"] in ("ClusterRoleBinding", "RoleBinding"):
            doc["roleRef"]["name"] += f"-{tag}"
    return out


def apply(cluster: LocalCluster, docs: list[dict[str, Any]], path: Path, *flags: str) -> str:
    """`kubectl apply -f` the objects, their namespaces first (retried while new CRDs are not served yet)."""
    gw = cluster.gateway()
    try:
        for ns in sorted({d["metadata"]["namespace"] for d in docs if d["metadata"].get("namespace")}):
            with contextlib.suppress(AlreadyExists):
                gw.create(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    finally:
        gw.close()
    path.write_text(yaml.safe_dump_all(docs))
    argv = [kubectl(), "--kubeconfig", str(cluster.kubeconfig), "apply", "-f", str(path), *flags]
    deadline = time.monotonic() + 30
    while True:
        result = subprocess.run(argv, capture_output=True, text=True, check=False)
        if result.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert result.returncode == 0, result.stderr
    return result.stdout


def granted(cluster: LocalCluster, namespace: str, account: str, where: str) -> set[Right]:
    """What the API server grants ServiceAccount `namespace/account` in namespace `where`, as it tells the account."""
    identity = cluster.service_account_gateway(namespace, account)
    try:
        review = identity.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {"namespace": where}})
    finally:
        identity.close()
    return {(g, r, v) for rule in review["status"]["resourceRules"] for g in rule.get("apiGroups") or []
            for r in rule.get("resources") or [] for v in rule["verbs"]}


def bound(docs: list[dict[str, Any]], account: str, where: str) -> set[Right]:
    """What the rendered bindings grant `account` in namespace `where`."""
    roles = {d["metadata"]["name"]: d["rules"] for d in docs if d["kind"] == "ClusterRole"}
    rights: set[Right] = set()
    for binding in (d for d in docs if d["kind"] in ("ClusterRoleBinding", "RoleBinding")):
        if binding["kind"] == "RoleBinding" and binding["metadata"]["namespace"] != where:
            continue
        if any(s["name"] == account for s in binding["subjects"]):
            rights |= {(g, r, v) for rule in roles[binding["roleRef"]["name"]] for g in rule["apiGroups"]
                       for r in rule["resources"] for v in rule["verbs"]}
    return rights


def ours(rights: set[Right], docs: list[dict[str, Any]]) -> set[Right]:
    """The rights on the (group, resource) pairs some ClusterRole of the install names (not the API server's own)."""
    named = {(g, r) for d in docs if d["kind"] == "ClusterRole" for rule in d["rules"] for g in rule["apiGroups"]
             for r in rule["resources"]}
    return {right for right in rights if right[:2] in named}


def assert_applies_and_grants_as_promised(rendered: list[dict[str, Any]], components: Sequence[str],
                                          cluster: LocalCluster, gateway: Gateway, namespace: str,
                                          path: Path) -> None:
    """`rendered`, an install of base and `components`, applied (isolated) with every object stored whole, then
    every ServiceAccount granted exactly what its bindings say, in `namespace` and in each tenant namespace, and
    each component's promise kept."""
    for name in KNATIVE_CRDS:  # the real Knative CRDs the suite's API server loaded, full schemas
        crd = gateway.get(CRDS, None, name) or {}
        schema = next(v for v in crd["spec"]["versions"] if v.get("storage"))["schema"]["openAPIV3Schema"]
        assert schema["properties"]["spec"].get("properties"), name
    tag = uuid.uuid4().hex[:6]
    docs = isolated(rendered, tag)
    answered = json.loads(apply(cluster, docs, path, "-o", "json"))
    answers = answered["items"] if answered.get("kind") == "List" else [answered]
    assert len(answers) == len(docs)
    by_key = {(a["kind"], a["metadata"].get("namespace"), a["metadata"]["name"]): a for a in answers}
    for doc in docs:  # 1.20 drops unknown fields silently: each answer holds all that was sent
        got = by_key[(doc["kind"], doc["metadata"].get("namespace"), doc["metadata"]["name"])]
        assert missing(doc, got) == [], (doc["kind"], doc["metadata"]["name"], missing(doc, got))
    system = f"crefn-system-{tag}"
    tenants = [f"{t}-{tag}" for t in TENANTS] if "namespaced" in components else []
    accounts = sorted(d["metadata"]["name"] for d in docs if d["kind"] == "ServiceAccount")
    writes: dict[str, set[Right]] = {}
    for account in accounts:
        for where in (namespace, *tenants):
            rights = ours(granted(cluster, system, account, where), docs)
            assert rights == ours(bound(docs, account, where), docs), (account, where)
            writes.setdefault(where, set()).update((account, *r) for r in rights if r[2] in WRITE_VERBS)
    if "observe" in components:
        parity = {("crefn-parity", *PARITY_EVENTS)}
        assert all(found <= parity for found in writes.values()), writes
    if "namespaced" in components:
        assert writes[namespace] == set() and all(writes[t] for t in tenants)
    if not {"observe", "namespaced"} & set(components):
        assert ("crefn-launch", "trainer.kubeflow.org", "trainjobs", "create") in writes[namespace]
