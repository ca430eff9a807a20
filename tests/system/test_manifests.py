"""`knative/` tested like code: it lints, renders (base and every documented install, and any two components
together), validates (core kinds
against Kubernetes' schemas, the KafkaSink against its upstream CRD with unknown fields refused, the
other Knative and Prometheus Operator kinds against the project's models), and its wiring holds together
with the code (Triggers, sources, targets, settings, RBAC, the monitors, where dead letters go) and with what
`docs/operating.md` says of it (the RBAC matrix, what each component grants, closed by default, dead letters)."""

from __future__ import annotations

import functools
import itertools
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

import kubernetes_validate
import pytest
from jsonschema import Draft7Validator
from pydantic import Field, model_validator

from events.types import EventType
from functions import main
from functions.registry import ONE_AT_A_TIME, SERVED, TARGETS
from functions.runtime.settings import Settings
from localstack.manifests import KNATIVE, compose, installs, render, service_account_user, with_settings
from localstack.rendercheck import crd_schema, openapi_to_jsonschema
from localstack.stack import shipped_logprofiles
from tests.support.docs import section as docs_section
from tests.support.knative_models import KNATIVE_MODELS, Meta, Selector, Strict
from tests.support.paths import REPO

CORE_KINDS = {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "Secret", "Service",
              "PersistentVolumeClaim"}
FRAMEWORK_ENV = {"FUNCTION_TARGET", "WORKERS", "THREADS"}
INSTALLS = installs()
"""The documented installs (knative/installs/): name → components."""
MONITORING, CLOSED = "monitoring", "closed"
SHIPPED = ("base", *INSTALLS)
"""base, and every install by its name."""
RENDERED = {"base": render("base"), **{name: render(f"installs/{name}") for name in INSTALLS}}
COMPONENTS = sorted(p.parent.name for p in (KNATIVE / "components").glob("*/kustomization.yaml"))


def closed(schema: Any) -> Any:
    """A CRD schema that refuses unknown fields where the API server would prune them (an object with
    `properties` and no `x-kubernetes-preserve-unknown-fields`): a typo is an error."""
    if isinstance(schema, list):
        return [closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: closed(v) for k, v in schema.items()}
    if "properties" in schema and not schema.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    return out


@functools.cache
def upstream_validator(group: str, kind: str) -> Draft7Validator:
    """The CRD's schema, closed below the root (whose apiVersion, kind and metadata it does not list)."""
    schema = crd_schema(group, kind)
    return Draft7Validator(openapi_to_jsonschema({**schema, "properties": closed(schema["properties"])}))


UPSTREAM_KINDS = {"eventing.knative.dev/v1alpha1/KafkaSink": ("eventing.knative.dev", "KafkaSink")}
"""Kinds checked against their real CRDs (`../shared/upstream`), read where the local API server reads them."""


KSERVICE = "serving.knative.dev/v1/Service"
"""A Knative Service, as `of_kind` and `by_name` name it (the kind alone, `Service`, is Kubernetes' too)."""


def of_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The objects of `kind`: a kind (`Trigger`), or apiVersion/kind (`serving.knative.dev/v1/Service`)."""
    return [d for d in docs if kind in (d["kind"], f"{d['apiVersion']}/{d['kind']}")]


def by_name(docs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in of_kind(docs, kind)}


@pytest.mark.process
def test_yamllint() -> None:
    config = "{extends: default, rules: {line-length: {max: 120}, document-start: disable, comments: {min-spaces-from-content: 1}, indentation: {indent-sequences: whatever}}}"  # noqa: E501
    result = subprocess.run([sys.executable, "-m", "yamllint", "-f", "parsable", "-d", config, str(KNATIVE)],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


@functools.cache
def validate_core(canonical: str) -> None:
    """A built-in kind's object (as sorted JSON) against Kubernetes' strict 1.37 schema, once per distinct
    object: the installs share most of base's, and each check reads the schema's definitions anew."""
    kubernetes_validate.validate(json.loads(canonical), "1.37.0", strict=True)


@pytest.mark.process
@pytest.mark.parametrize("install", SHIPPED)
def test_renders_and_every_object_is_valid(install: str, upstream_crds: Path) -> None:
    docs = RENDERED[install]
    assert docs
    for doc in docs:
        key = f"{doc['apiVersion']}/{doc['kind']}"
        if (doc["kind"] in CORE_KINDS and "/" not in doc["apiVersion"]) or doc["apiVersion"].startswith(
                ("rbac.", "networking.k8s.io/", "apps/")):
            validate_core(json.dumps(doc, sort_keys=True))
        elif key in UPSTREAM_KINDS:
            errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
                      for e in upstream_validator(*UPSTREAM_KINDS[key]).iter_errors(doc)]
            assert errors == [], (key, errors)
        else:
            assert key in MODELS, f"no check for {key}"
            MODELS[key].model_validate(doc)
        assert doc["metadata"].get("namespace", "crefn-system") == "crefn-system" or doc["kind"] == "Namespace" \
            or (doc["kind"] == "RoleBinding" and "namespaced" in INSTALLS.get(install, ()))  # a tenant namespace's


def trigger_types(trigger: dict[str, Any]) -> set[str]:
    """The `type` values a Trigger's filters admit (exact values, alternatives under `any`)."""
    types: set[str] = set()
    for f in trigger["spec"]["filters"]:
        if "exact" in f and "type" in f["exact"]:
            types.add(f["exact"]["type"])
        for alt in f.get("any", []):
            if "type" in alt.get("exact", {}):
                types.add(alt["exact"]["type"])
    return types


def trigger_exact(trigger: dict[str, Any], attribute: str) -> set[str]:
    found: set[str] = set()
    for f in trigger["spec"]["filters"]:
        if attribute in f.get("exact", {}):
            found.add(f["exact"][attribute])
        for alt in f.get("any", []):
            if attribute in alt.get("exact", {}):
                found.add(alt["exact"][attribute])
    return found


def emitted_types(docs: list[dict[str, Any]]) -> set[str]:
    types = {t.value for t in EventType}
    for source in of_kind(docs, "ApiServerSource"):
        mode = source["spec"]["mode"].lower()
        types |= {f"dev.knative.apiserver.{mode}.{verb}" for verb in ("add", "update", "delete")}
    return types


@pytest.mark.parametrize("install", SHIPPED)
def test_every_trigger_routes_what_its_function_handles_and_something_emits(install: str) -> None:
    docs = RENDERED[install]
    services = by_name(docs, KSERVICE)
    sources = of_kind(docs, "ApiServerSource")
    watched = {(r["apiVersion"], r["kind"]) for s in sources for r in s["spec"]["resources"]}
    for trigger in of_kind(docs, "Trigger"):
        service = services[trigger["spec"]["subscriber"]["ref"]["name"]]
        target = target_of(service)
        types = trigger_types(trigger)
        assert types, f"{trigger['metadata']['name']} filters no type"
        assert types <= TARGETS[target].accepts, (trigger["metadata"]["name"], types - TARGETS[target].accepts)
        assert types <= emitted_types(docs), types - emitted_types(docs)
        kinds, apiversions = trigger_exact(trigger, "kind"), trigger_exact(trigger, "apiversion")
        if kinds:  # an ApiServerSource route: some source watches exactly that apiVersion and kind
            assert {(a, k) for a in apiversions for k in kinds} <= watched
        assert trigger["spec"]["broker"] in by_name(docs, "Broker")


def target_of(service: dict[str, Any]) -> str:
    env = {e["name"]: e["value"] for e in service["spec"]["template"]["spec"]["containers"][0]["env"]}
    return env.get("FUNCTION_TARGET", "")


@pytest.mark.parametrize("install", SHIPPED)
def test_sources_watch_only_kinds_the_functions_parse(install: str) -> None:
    docs = RENDERED[install]
    group = settings_of(docs)["CREFN_CRE_GROUP"]
    parsed = {("trainer.kubeflow.org/v1alpha1", "TrainJob"), (f"{group}/v1alpha1", "Job"),
              (f"{group}/v1alpha1", "WorkloadRun"), ("v1", "Pod"), ("v1", "Node"),
              (f"{group}/v1alpha1", "GoodputMeasurement")}
    manage_all = settings_of(docs)["CREFN_MANAGE_ALL"] == "true"
    for source in of_kind(docs, "ApiServerSource"):
        for res in source["spec"]["resources"]:
            assert (res["apiVersion"], res["kind"]) in parsed
            if res["kind"] == "Node":  # cluster-scoped, every Node: a node's health concerns the Jobs on it
                assert "selector" not in res
                continue
            if res["kind"] == "GoodputMeasurement":  # labelled with their Job by whoever creates them
                assert res["selector"] == {"matchExpressions": [{"key": f"{group}/job", "operator": "Exists"}]}
                continue
            if manage_all and res["kind"] != "Pod":  # TrainJobs of unlabelled Jobs carry no label: watch all
                assert "selector" not in res
            else:
                assert res["selector"]["matchLabels"] == {"crefn.dev/managed": "true"}
        assert source["spec"]["mode"] == "Resource"


SETTINGS = re.compile(r"crefn-settings-[bcdfghkmt2-9]{10}")
"""The settings ConfigMap's name: kustomize's configMapGenerator suffixes it with a hash of its data."""


def settings_name(docs: list[dict[str, Any]]) -> str:
    """The settings ConfigMap: the one every Service's container takes its environment from."""
    (name,) = {ref for d in of_kind(docs, KSERVICE) for ref in config_maps_named(d)}
    return name


def config_maps_named(doc: dict[str, Any]) -> set[str]:
    """The ConfigMaps a pod template names: `envFrom`, `env` keys and volumes (projected ones too)."""
    spec = pod_spec(doc)
    names = {s["configMapRef"]["name"] for c in spec.get("containers", []) for s in c.get("envFrom", [])
             if "configMapRef" in s}
    names |= {e["valueFrom"]["configMapKeyRef"]["name"] for c in spec.get("containers", []) for e in c.get("env", [])
              if "configMapKeyRef" in e.get("valueFrom", {})}
    names |= {v["configMap"]["name"] for v in spec.get("volumes", []) if "configMap" in v}
    names |= {s["configMap"]["name"] for v in spec.get("volumes", []) for s in v.get("projected", {}).get(
        "sources", []) if "configMap" in s}
    return names


def settings_of(docs: list[dict[str, Any]]) -> dict[str, str]:
    return dict(by_name(docs, "ConfigMap")[settings_name(docs)]["data"])


@pytest.mark.parametrize("install", SHIPPED)
def test_every_service_reads_the_settings_configmap_of_its_own_install(install: str) -> None:
    docs = RENDERED[install]
    workloads = [d for d in docs if pod_spec(d)]
    assert len(workloads) == (14 if "kafka" in INSTALLS.get(install, ()) else 15)  # the functions, the recorder
    for doc in workloads:
        assert config_maps_named(doc) == {settings_name(docs)}, doc["metadata"]["name"]
    assert SETTINGS.fullmatch(settings_name(docs))
    assert settings_name(docs) in by_name(docs, "ConfigMap")
    assert "crefn-settings" not in by_name(docs, "ConfigMap")  # no unhashed copy that a Service could name
    assert settings_of(docs)["CREFN_RESTART_GRACE_SECONDS"] == "30"


CHANGED = {"CREFN_RESTART_GRACE_SECONDS": "45"}


@pytest.mark.process
@pytest.mark.parametrize("install", INSTALLS)
def test_a_changed_setting_changes_every_services_template_and_nothing_else(install: str) -> None:
    """An operator's kustomization over the install that merges one changed setting into crefn-settings: a new
    ConfigMap name in every pod template (Knative makes a new revision of each Service), nothing else changed."""
    before, after = RENDERED[install], with_settings(f"installs/{install}", CHANGED)
    old, new = settings_name(before), settings_name(after)
    assert old != new and SETTINGS.fullmatch(new)
    assert settings_of(before)["CREFN_RESTART_GRACE_SECONDS"] == "30"
    assert settings_of(after) == {**settings_of(before), "CREFN_RESTART_GRACE_SECONDS": "45"}
    key = lambda d: (d["apiVersion"], d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"])  # noqa: E731
    assert sorted(map(key, after)) == sorted(key(d) if key(d)[3] != old else (*key(d)[:3], new) for d in before)
    unchanged = {key(d): d for d in before}
    templates = set()
    for doc in after:
        if doc["kind"] == "ConfigMap" and doc["metadata"]["name"] == new:
            continue
        was = unchanged[key(doc)]
        if pod_spec(doc):
            assert pod_spec(doc) != pod_spec(was)
            templates.add(doc["metadata"]["name"])
        assert json.loads(json.dumps(doc).replace(new, old)) == was, key(doc)
    assert {"crefn-phase", "crefn-metrics"} <= templates
    assert ("crefn-dead-letters" in templates) == ("kafka" not in INSTALLS[install])  # kafka: no recorder
    assert templates == {d["metadata"]["name"] for d in before if pod_spec(d)}


@pytest.mark.parametrize("install", SHIPPED)
def test_services_name_real_targets_and_known_settings(install: str) -> None:
    docs = RENDERED[install]
    known = {f"CREFN_{name.upper()}" for name in Settings.model_fields}
    assert set(settings_of(docs)) <= known
    Settings.model_validate({k.removeprefix("CREFN_").lower(): v for k, v in settings_of(docs).items()})
    for name, service in by_name(docs, KSERVICE).items():
        spec = service["spec"]["template"]["spec"]
        container = spec["containers"][0]
        env = {e["name"]: e["value"] for e in container["env"]}
        assert set(env) <= FRAMEWORK_ENV | known, name
        assert env["FUNCTION_TARGET"] in SERVED and callable(getattr(main, env["FUNCTION_TARGET"]))
        assert name == f"crefn-{env['FUNCTION_TARGET']}"
        assert spec["serviceAccountName"] == name
        assert int(env["THREADS"]) == spec["containerConcurrency"]
        assert (env["THREADS"] == "1") is (env["FUNCTION_TARGET"] in ONE_AT_A_TIME)  # as served without THREADS
        assert container["securityContext"]["runAsNonRoot"] is True
    assert {target_of(s) for s in by_name(docs, KSERVICE).values()} == SERVED


@pytest.mark.parametrize("install", SHIPPED)
def test_every_function_has_its_own_bound_role(install: str) -> None:
    docs = RENDERED[install]
    roles, bindings = by_name(docs, "ClusterRole"), of_kind(docs, "ClusterRoleBinding") + of_kind(docs, "RoleBinding")
    accounts = set(by_name(docs, "ServiceAccount"))
    used = {s["spec"]["template"]["spec"].get("serviceAccountName") for s in by_name(docs, KSERVICE).values()}
    used |= {s["spec"]["serviceAccountName"] for s in of_kind(docs, "ApiServerSource")}
    used.discard(None)
    assert used <= accounts
    for account in used:
        mine = [b for b in bindings if any(s["name"] == account for s in b["subjects"])]
        assert mine, account
        for binding in mine:  # its own roles: crefn-<function>, and crefn-<function>-cluster (namespaced)
            assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account, "namespace": "crefn-system"}]
            assert binding["roleRef"]["name"] in (account, f"{account}-cluster")
            for rule in roles[binding["roleRef"]["name"]]["rules"]:
                assert "*" not in rule["verbs"] and "*" not in rule["resources"] and "*" not in rule["apiGroups"]


def test_resync_and_measure_are_pinged_and_resync_and_launch_are_bound_to_the_broker() -> None:
    docs = RENDERED["base"]
    pinged = {p["metadata"]["name"]: (p["spec"]["schedule"], p["spec"]["sink"]["ref"]["name"])
              for p in of_kind(docs, "PingSource")}
    assert pinged == {"crefn-resync": ("*/1 * * * *", "crefn-resync"),
                      "crefn-measure": ("*/1 * * * *", "crefn-measure")}
    bindings = {b["spec"]["subject"]["name"]: b["spec"]["sink"]["ref"] for b in of_kind(docs, "SinkBinding")}
    broker = {"apiVersion": "eventing.knative.dev/v1", "kind": "Broker", "name": "crefn"}
    assert bindings == {"crefn-resync": broker, "crefn-launch": broker, "crefn-restart": broker}


RECORDER = "crefn-dead-letters"
SINK = {"apiVersion": "v1", "kind": "Service", "name": RECORDER}
"""The dead-letter sink of every Trigger and of the Broker: Knative resolves a Kubernetes Service's ref to
http://<name>.<namespace>.svc.cluster.local, port 80."""


@pytest.mark.parametrize("install", [name for name, components in INSTALLS.items() if "kafka" not in components])
def test_dead_letters_go_to_the_recorders_service_which_sends_them_to_its_pod(install: str) -> None:
    docs = RENDERED[install]
    owners = of_kind(docs, "Broker") + of_kind(docs, "Trigger")
    assert len(owners) >= 24
    for obj in owners:
        assert obj["spec"]["delivery"]["deadLetterSink"] == {"ref": SINK}, obj["metadata"]["name"]
    service = by_name(docs, "v1/Service")[RECORDER]
    assert service["spec"]["type"] == "ClusterIP"
    (port,) = service["spec"]["ports"]
    assert (port["port"], port["targetPort"], port["protocol"]) == (80, "http", "TCP")
    recorder = by_name(docs, "apps/v1/Deployment")[RECORDER]
    assert selects({"matchLabels": service["spec"]["selector"]}, recorder["spec"]["template"]["metadata"]["labels"])
    assert selects(recorder["spec"]["selector"], recorder["spec"]["template"]["metadata"]["labels"])
    assert [p for c in pod_spec(recorder)["containers"] for p in c["ports"]] == [{"name": "http",
                                                                                  "containerPort": 8080}]
    assert of_kind(docs, "Deployment") == [recorder] and RECORDER not in by_name(docs, KSERVICE)


def test_the_recorder_is_one_pod_replaced_whole_appending_to_a_claim_it_alone_writes() -> None:
    docs = RENDERED["base"]
    recorder = by_name(docs, "apps/v1/Deployment")[RECORDER]
    assert recorder["spec"]["replicas"] == 1
    assert recorder["spec"]["strategy"] == {"type": "Recreate"}  # the old pod lets go of the claim first
    spec = pod_spec(recorder)
    (volume,) = spec["volumes"]
    claim = by_name(docs, "PersistentVolumeClaim")[volume["persistentVolumeClaim"]["claimName"]]
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    (container,) = spec["containers"]
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == volume["name"]]
    assert not mount.get("readOnly")
    args = container["args"]
    assert args[:2] == ["cre-fn", "record"] and "command" not in container
    assert args[args.index("--port") + 1] == "8080"
    assert Path(args[args.index("--file") + 1]).parent == Path(mount["mountPath"])
    assert args[args.index("--out") + 1] == "/dev/stdout"  # log collectors still see every dead letter
    assert spec["securityContext"]["fsGroup"] == 10001  # the image's USER (Dockerfile) may write the volume
    assert {e["name"]: e["value"] for e in container["env"]} == {"WORKERS": "1", "THREADS": "1",
                                                                  "OTEL_SERVICE_NAME": "crefn-dead-letters"}
    function = pod_spec(by_name(docs, KSERVICE)["crefn-phase"])["containers"][0]
    assert container["securityContext"] == function["securityContext"] == {
        "runAsNonRoot": True, "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}
    assert container["resources"] == function["resources"] == {"requests": {"cpu": "100m", "memory": "128Mi"},
                                                                "limits": {"memory": "256Mi"}}
    assert container["image"] == function["image"]
    # no token (it calls no API server), no Service links (CREFN_DEAD_LETTERS_SERVICE_HOST, ...: unknown settings)
    assert spec["automountServiceAccountToken"] is False and spec["enableServiceLinks"] is False


def test_the_recorder_is_ready_when_it_answers_and_alive_while_it_listens() -> None:
    (container,) = pod_spec(by_name(RENDERED["base"], "apps/v1/Deployment")[RECORDER])["containers"]
    assert container["readinessProbe"]["httpGet"] == {"path": "/metrics", "port": "http"}
    assert container["livenessProbe"]["tcpSocket"] == {"port": "http"}
    assert container["livenessProbe"]["periodSeconds"] * container["livenessProbe"]["failureThreshold"] == 60


def serving_flags_needed(service: dict[str, Any]) -> set[str]:
    """The flags of Knative Serving's `config-features` without which its webhook refuses the Service ("must not
    set the field(s)"): all are off by default."""
    spec = service["spec"]["template"]["spec"]
    claims = {v["name"] for v in spec.get("volumes") or [] if "persistentVolumeClaim" in v}
    mounts = [m for c in spec["containers"] for m in c.get("volumeMounts") or [] if m["name"] in claims]
    return ({"kubernetes.podspec-securitycontext"} if spec.get("securityContext") else set()) \
        | ({"kubernetes.podspec-persistent-volume-claim"} if claims else set()) \
        | ({"kubernetes.podspec-persistent-volume-write"} if any(not m.get("readOnly") for m in mounts) else set())


@pytest.mark.parametrize("install", SHIPPED)
def test_no_install_needs_a_serving_feature_flag(install: str) -> None:
    services = by_name(RENDERED[install], KSERVICE)
    assert len(services) == 14
    assert {name: serving_flags_needed(s) for name, s in services.items() if serving_flags_needed(s)} == {}


def test_the_recorder_as_a_knative_service_would_need_three_cluster_wide_flags() -> None:
    """Why it is a Deployment (knative/base/dead-letters.yaml): its pod, as a Knative Service's template."""
    recorder = by_name(RENDERED["base"], "apps/v1/Deployment")[RECORDER]
    assert serving_flags_needed({"spec": {"template": recorder["spec"]["template"]}}) == {
        "kubernetes.podspec-persistent-volume-claim", "kubernetes.podspec-persistent-volume-write",
        "kubernetes.podspec-securitycontext"}
    section = docs_section("operating.md", "## Dead letters")
    assert "Recreate" in section and "feature flag" in section


@pytest.mark.process
def test_the_kafka_component_sends_every_dead_letter_to_its_kafka_sink() -> None:
    docs = RENDERED["kafka"]
    (sink,) = of_kind(docs, "KafkaSink")
    assert sink["spec"]["contentMode"] == "structured"  # a message is a CloudEvent in JSON: `cre-fn replay` reads it
    settings = by_name(docs, "ConfigMap")["crefn-kafka-broker-config"]["data"]
    assert sink["spec"]["bootstrapServers"] == [settings["bootstrap.servers"]]
    ref = {"apiVersion": sink["apiVersion"], "kind": "KafkaSink", "name": sink["metadata"]["name"]}
    owners = of_kind(docs, "Broker") + of_kind(docs, "Trigger")
    assert len(owners) == len(of_kind(RENDERED["base"], "Broker") + of_kind(RENDERED["base"], "Trigger"))
    for obj in owners:
        assert obj["spec"]["delivery"]["deadLetterSink"] == {"ref": ref}, obj["metadata"]["name"]
    for install in ("kafka", "kafka-closed"):  # nothing of the recorder: no pod, Service, claim or policy of its own
        assert [d["kind"] for d in RENDERED[install] if d["metadata"]["name"] == RECORDER] == ["KafkaSink"]
    assert [d["kind"] for d in compose(["monitoring", "kafka"]) if d["metadata"]["name"] == RECORDER] == ["KafkaSink"]
    assert not of_kind(docs, "PersistentVolumeClaim") and not of_kind(docs, "Deployment")
    assert sink["spec"]["topic"] in docs_section("operating.md", "## Dead letters")


def test_components_change_what_they_say() -> None:
    assert settings_of(RENDERED["observe"])["CREFN_MODE"] == "observe"
    assert settings_of(RENDERED["base"])["CREFN_MODE"] == "manage"
    kafka = RENDERED["kafka"]
    broker = of_kind(kafka, "Broker")[0]
    assert broker["metadata"]["annotations"]["eventing.knative.dev/broker.class"] == "Kafka"
    assert broker["spec"]["config"]["name"] in by_name(kafka, "ConfigMap")
    assert all(t["metadata"]["annotations"]["kafka.eventing.knative.dev/delivery.order"] == "ordered"
               for t in of_kind(kafka, "Trigger"))
    legacy = RENDERED["legacy-group"]
    assert settings_of(legacy)["CREFN_CRE_GROUP"] == "cre.nvidia.com"
    text = str(legacy)
    assert "nvcre.nvidia.com" not in text and "cre.nvidia.com/v1alpha1" in text
    assert settings_of(RENDERED["manage-all"])["CREFN_MANAGE_ALL"] == "true"


# -- components that compose: an install is base plus components, in scripts/compose.sh's order

ORDER = ("manage-all", "logprofiles", "namespaced", "legacy-group", "oidc", "observe", "monitoring", "kafka")
"""The order scripts/compose.sh lists components in (a component patches what those before it added)."""
NOT_COMPOSING = frozenset({"legacy-group", "observe"})
"""observe's read-only roles name CRE's group: legacy-group's patches of the roles do not reach them."""
PAIRS = [pair for pair in itertools.combinations(ORDER, 2) if frozenset(pair) != NOT_COMPOSING]


def broken_promises(components: tuple[str, ...], docs: list[dict[str, Any]]) -> list[str]:
    """What each of `components` says it does, checked on an install's rendered objects: what it breaks."""
    broken = []
    settings = settings_of(docs)
    roles = by_name(docs, "ClusterRole")
    bound = [(b["kind"], b["metadata"]["name"], r) for b in of_kind(docs, "ClusterRoleBinding") + of_kind(
        docs, "RoleBinding") for r in rights_of(roles[b["roleRef"]["name"]]) if r[2] in WRITE_VERBS]
    if "observe" in components and (settings["CREFN_MODE"] != "observe" or {
            (name, r) for _, name, r in bound} - {("crefn-parity", PARITY_EVENTS)}):
        broken.append("observe: a write is granted, or the mode is not observe")
    if "namespaced" in components and [b for b in bound if b[0] == "ClusterRoleBinding"]:
        broken.append("namespaced: a write is granted cluster-wide")
    if "kafka" in components:
        sinks = {json.dumps(o["spec"]["delivery"]["deadLetterSink"]) for o in of_kind(docs, "Broker") + of_kind(
            docs, "Trigger")}
        if sinks != {json.dumps({"ref": {"apiVersion": "eventing.knative.dev/v1alpha1", "kind": "KafkaSink",
                                          "name": "crefn-dead-letters"}})} or of_kind(docs, "PersistentVolumeClaim") \
                or of_kind(docs, "Deployment"):
            broken.append(f"kafka: dead letters go elsewhere than the KafkaSink: {sinks}")
    if "oidc" in components:
        admitted = {f["ref"]["name"] for p in of_kind(docs, "EventPolicy") for f in p["spec"]["from"] if "ref" in f}
        if admitted != {d["metadata"]["name"] for d in of_kind(docs, "Trigger") + of_kind(docs, "ApiServerSource")}:
            broken.append("oidc: the EventPolicy admits other senders than the sources and Triggers")
    if "manage-all" in components and settings["CREFN_MANAGE_ALL"] != "true":
        broken.append("manage-all: CREFN_MANAGE_ALL is not true")
    if "legacy-group" in components and (settings["CREFN_CRE_GROUP"] != "cre.nvidia.com" or
                                         "nvcre.nvidia.com" in json.dumps(docs)):
        broken.append("legacy-group: nvcre.nvidia.com is still named")
    if "logprofiles" in components and sorted(p["metadata"]["name"] for p in of_kind(docs, "LogProfile")) != [
            "megatron-bridge", "megatron-training", "nccl-bandwidth", "nccl-loopback"]:
        broken.append("logprofiles: not CRE's four LogProfiles")
    if "monitoring" in components and {m["metadata"]["name"] for m in of_kind(docs, "PodMonitor")} != {
            "crefn-functions", "crefn-metrics"} | {d["metadata"]["name"] for d in of_kind(docs, "Deployment")}:
        broken.append("monitoring: not a PodMonitor for each kind of pod")
    return broken


def test_compose_orders_every_component() -> None:
    assert sorted(ORDER) == COMPONENTS


@pytest.mark.parametrize("install", INSTALLS)
def test_every_install_is_base_and_its_components_in_order_and_keeps_their_promises(install: str) -> None:
    components = INSTALLS[install]
    assert list(components) == [c for c in ORDER if c in components]
    assert broken_promises(components, RENDERED[install]) == []


@pytest.mark.process
@pytest.mark.parametrize("install", ["closed-observe", "kafka-closed"])
def test_compose_lists_the_components_in_order_whatever_order_they_are_given_in(install: str) -> None:
    assert compose(list(reversed(INSTALLS[install]))) == RENDERED[install]


@pytest.mark.process
@pytest.mark.parametrize("pair", PAIRS, ids="+".join)
def test_any_two_components_compose_and_keep_their_promises(pair: tuple[str, str]) -> None:
    assert broken_promises(pair, compose(pair)) == []


@pytest.mark.process
def test_legacy_group_and_observe_are_refused_together() -> None:
    with pytest.raises(RuntimeError, match="legacy-group and observe do not compose"):
        compose(sorted(NOT_COMPOSING))


def test_promises_can_be_broken() -> None:
    """The checks above fail where a component's promise does not hold: base is none of the components."""
    assert len(broken_promises(tuple(ORDER), RENDERED["base"])) == len(ORDER)


@pytest.mark.parametrize("install", SHIPPED)
def test_every_object_carries_the_label_the_prune_selects(install: str) -> None:
    unlabelled = [(d["kind"], d["metadata"]["name"]) for d in RENDERED[install]
                  if (d["metadata"].get("labels") or {}).get("app.kubernetes.io/part-of") != "cre-functions"]
    assert unlabelled == []


@pytest.mark.process
@pytest.mark.parametrize("image", ["registry.example.com:5000/crefn/fn:0.2.0",
                                   "registry.example.com/crefn/fn@sha256:" + "ab" * 32])
def test_compose_sets_the_image_of_every_container(image: str) -> None:
    docs = compose(["observe"], image)
    images = {c["image"] for d in docs for c in pod_spec(d).get("containers", [])}
    assert images == {image}


def pod_spec(doc: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = ((doc.get("spec") or {}).get("template") or {}).get("spec") or {}
    return spec


def test_docs_list_every_install_the_components_order_and_what_is_pruned() -> None:
    section = docs_section("operating.md", "### Installs")
    rows = {line.split("|")[1].strip(" `"): tuple(re.findall(r"`([^`]+)`", line.split("|")[2]))
            for line in section.splitlines() if line.startswith("| `")}
    assert rows == INSTALLS
    assert ", ".join(f"`{c}`" for c in ORDER) in " ".join(section.split())
    command = docs_section("operating.md", "### Changing an install").split("```sh", 1)[1].split("```", 1)[0]
    kinds = re.search(r"^PRUNE_KINDS \?=((?:.*\\\n)*.*)$", (REPO / "Makefile").read_text(), re.MULTILINE)
    assert kinds is not None
    assert re.findall(r"--prune-allowlist=(\S+)", command) == kinds[1].replace("\\", " ").split()


def test_alert_sinks_secret_template_is_valid_and_names_known_settings() -> None:
    import yaml

    secret = yaml.safe_load((KNATIVE / "base" / "alert-sinks-secret.template.yaml").read_text())
    kubernetes_validate.validate(secret, "1.37.0", strict=True)
    known = {f"CREFN_{name.upper()}" for name in Settings.model_fields}
    assert set(secret["stringData"]) <= known
    alert = by_name(RENDERED["base"], KSERVICE)["crefn-alert"]
    env_from = alert["spec"]["template"]["spec"]["containers"][0]["envFrom"]
    assert {"secretRef": {"name": secret["metadata"]["name"], "optional": True}} in env_from


def test_dockerfile_runs_as_non_root_with_the_target_from_env() -> None:
    text = (REPO / "Dockerfile").read_text()
    assert "USER 10001" in text and "FUNCTION_TARGET" in text and "functions-framework" in text


def test_docs_rbac_matrix_matches_the_roles() -> None:
    table = docs_section("operating.md", "### RBAC matrix")
    documented = {tuple(c.strip(" `") for c in line.strip("|").split("|"))
                  for line in table.splitlines() if line.startswith("| `")}
    actual = set()
    for role in of_kind(RENDERED["base"], "ClusterRole"):
        for rule in role["rules"]:
            for res in rule["resources"]:
                actual.add((role["metadata"]["name"].removeprefix("crefn-"),
                            f"{res} ({rule['apiGroups'][0] or 'core'})", ", ".join(rule["verbs"])))
    assert documented == actual


# -- the components that narrow the rights: observe (no write), namespaced (writes in the tenant namespaces only)

WRITE_VERBS = {"create", "update", "patch", "delete", "deletecollection"}
BOUND_PER_NAMESPACE = ("phase", "launch", "status", "restart", "timeout", "measurements", "measure", "nodehealth",
                       "validate", "resync", "workloadrun", "alert", "parity", "apiserversource")
"""The accounts namespaced binds in each tenant namespace: every one of base but metrics (a LIST of Jobs)."""


def rights_of(role: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(g, r, v) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]
            for v in rule["verbs"]}


PARITY_EVENTS = ("events.k8s.io", "events", "create")
"""The one write of observe mode: `parity`'s Warning Event on a Job whose verdicts differ."""


def test_observe_roles_are_bases_without_a_write() -> None:
    """Observe mode writes nothing (`functions.runtime.apply` skips every write of a plan) but `parity`'s
    Warning Events: its roles are base's reads, every one of them, and not one write but that one."""
    base, observe = RENDERED["base"], RENDERED["observe"]
    observed = {name: rights_of(role) for name, role in by_name(observe, "ClusterRole").items()}
    assert observed == {name: {r for r in rights_of(role) if r[2] not in WRITE_VERBS or
                               (name, r) == ("crefn-parity", PARITY_EVENTS)}
                        for name, role in by_name(base, "ClusterRole").items()}
    writes = {(name, r) for name, rights in observed.items() for r in rights if r[2] in WRITE_VERBS}
    assert writes == {("crefn-parity", PARITY_EVENTS)}
    assert {verb for rights in observed.values() for _, _, verb in rights} == {"get", "list", "watch", "create"}
    assert by_name(observe, "ClusterRoleBinding") == by_name(base, "ClusterRoleBinding")
    assert not of_kind(observe, "RoleBinding")


def test_namespaced_binds_every_function_in_each_tenant_namespace_and_only_reads_across_the_cluster() -> None:
    base, docs = RENDERED["base"], RENDERED[CLOSED]
    roles = by_name(docs, "ClusterRole")
    assert {name: rights_of(role) for name, role in roles.items() if not name.endswith("-cluster")} == \
        {name: rights_of(role) for name, role in by_name(base, "ClusterRole").items()}
    cluster_wide = {b["metadata"]["name"]: b for b in of_kind(docs, "ClusterRoleBinding")}
    assert set(cluster_wide) == {"crefn-metrics", "crefn-launch-cluster", "crefn-restart-cluster",
                                 "crefn-resync-cluster", "crefn-measure-cluster",
                                 "crefn-nodehealth-cluster", "crefn-apiserversource-cluster",
                                 "crefn-workloadrun-cluster"}
    for binding in cluster_wide.values():
        rights = rights_of(roles[binding["roleRef"]["name"]])
        assert rights and not {r for r in rights if r[2] in WRITE_VERBS or r[1] == "pods/log"}, binding
    per_namespace = {(b["metadata"]["namespace"], b["metadata"]["name"], b["roleRef"]["name"], b["subjects"][0]["name"])
                     for b in of_kind(docs, "RoleBinding")}
    assert per_namespace == {(ns, f"crefn-{f}", f"crefn-{f}", f"crefn-{f}") for ns in ("team-a", "team-b")
                             for f in BOUND_PER_NAMESPACE}
    assert all(not b["metadata"].get("annotations") for b in of_kind(docs, "RoleBinding"))
    tenants = {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In",
                                     "values": ["team-a", "team-b"]}]}
    assert {s["metadata"]["name"]: s["spec"]["namespaceSelector"] for s in of_kind(docs, "ApiServerSource")} == {
        "crefn-trainjobs": tenants, "crefn-jobs": tenants, "crefn-workloadruns": tenants, "crefn-pods": tenants,
        "crefn-goodput": tenants, "crefn-nodes": {}}


def test_docs_say_what_each_component_grants_and_how_to_list_the_tenant_namespaces() -> None:
    section = docs_section("operating.md", "### What each component grants")
    table = section.split("| identity |", 1)[1]
    documented = {tuple(c.strip(" `") for c in line.strip("|").split("|")[:3])
                  for line in table.splitlines() if line.startswith("| `")}
    docs = RENDERED[CLOSED]
    roles = by_name(docs, "ClusterRole")
    actual = {(s["name"].removeprefix("crefn-"), f"{res} ({rule['apiGroups'][0] or 'core'})", ", ".join(rule["verbs"]))
              for b in of_kind(docs, "ClusterRoleBinding") for s in b["subjects"]
              for rule in roles[b["roleRef"]["name"]]["rules"] for res in rule["resources"]}
    assert documented == actual
    for needed in ("| base |", "| `namespaced` |", "| `observe` |", "components:", "namespaces/team-a",
                   "kubernetes.io/metadata.name", "403 Forbidden", "503", "CREFnResyncFailing"):
        assert needed in section, needed


# -- the monitoring component: the Prometheus Operator's kinds (monitoring.coreos.com/v1), the fields we set

DURATION = r"^(0|([0-9]+(ms|s|m|h|d|w|y))+)$"


class Relabeling(Strict):
    sourceLabels: list[str] = Field(default_factory=list)
    regex: str = "(.*)"
    action: Literal["replace", "keep", "drop"] = "replace"
    targetLabel: str | None = None
    replacement: str | None = None


class PodMetricsEndpoint(Strict):
    port: str
    path: str = Field(pattern="^/")
    interval: str = Field(pattern=DURATION)
    honorLabels: bool = False
    relabelings: list[Relabeling] = Field(default_factory=list)


class PodMonitorSpec(Strict):
    selector: Selector
    podMetricsEndpoints: list[PodMetricsEndpoint] = Field(min_length=1)


class PodMonitor(Strict):
    apiVersion: Literal["monitoring.coreos.com/v1"]
    kind: Literal["PodMonitor"]
    metadata: Meta
    spec: PodMonitorSpec


class Rule(Strict):
    alert: str | None = None
    record: str | None = None
    expr: str = Field(min_length=1)
    for_: str | None = Field(default=None, alias="for", pattern=DURATION)
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def alert_or_record(self) -> Rule:
        assert (self.alert is None) != (self.record is None), "a rule is an alert or a record"
        assert self.alert or (self.for_ is None and not self.annotations), "a record has no for or annotations"
        return self


class RuleGroup(Strict):
    name: str = Field(min_length=1)
    rules: list[Rule] = Field(min_length=1)


class PrometheusRuleSpec(Strict):
    groups: list[RuleGroup] = Field(min_length=1)

    @model_validator(mode="after")
    def unique_groups(self) -> PrometheusRuleSpec:
        assert len({g.name for g in self.groups}) == len(self.groups), "group names are unique"
        return self


class PrometheusRule(Strict):
    apiVersion: Literal["monitoring.coreos.com/v1"]
    kind: Literal["PrometheusRule"]
    metadata: Meta
    spec: PrometheusRuleSpec


MODELS: dict[str, type[Strict]] = {**KNATIVE_MODELS, "monitoring.coreos.com/v1/PodMonitor": PodMonitor,
                                   "monitoring.coreos.com/v1/PrometheusRule": PrometheusRule}
KNATIVE_POD_LABEL = "serving.knative.dev/service"
KNATIVE_USER_PORT = "user-port"  # the name Knative gives the user container's port on every revision pod


def scraped(endpoint: dict[str, Any], pod_labels: dict[str, str]) -> bool:
    """Whether a pod survives the endpoint's keep/drop relabelings (Prometheus anchors every regex)."""
    meta = {f"__meta_kubernetes_pod_label_{k.replace('.', '_').replace('/', '_').replace('-', '_')}": v
            for k, v in pod_labels.items()}
    for step in endpoint.get("relabelings") or []:
        value = ";".join(meta.get(s, "") for s in step.get("sourceLabels") or [])
        matched = re.fullmatch(step.get("regex", "(.*)"), value) is not None
        if (step.get("action") == "keep" and not matched) or (step.get("action") == "drop" and matched):
            return False
    return True


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        if not {"Exists": key in labels, "DoesNotExist": key not in labels, "In": labels.get(key) in values,
                "NotIn": labels.get(key) not in values}[op]:
            return False
    return True


def test_monitoring_scrapes_every_function_pod_and_the_metrics_pod_once() -> None:
    docs = RENDERED[MONITORING]
    assert set(by_name(docs, KSERVICE)) == set(by_name(RENDERED["base"], KSERVICE))
    monitors = by_name(docs, "PodMonitor")
    assert set(monitors) == {"crefn-functions", "crefn-metrics", RECORDER}

    def scrapers(pod: dict[str, str]) -> set[str]:
        return {m for m, doc in monitors.items() if selects(doc["spec"]["selector"], pod)
                and any(scraped(e, pod) for e in doc["spec"]["podMetricsEndpoints"])}

    for name in by_name(docs, KSERVICE):
        pod = {KNATIVE_POD_LABEL: name, "serving.knative.dev/revision": f"{name}-00001"}
        assert scrapers(pod) == {"crefn-metrics" if name == "crefn-metrics" else "crefn-functions"}, name
    recorder = by_name(docs, "apps/v1/Deployment")[RECORDER]["spec"]["template"]["metadata"]["labels"]
    assert scrapers(recorder) == {RECORDER}
    other = {KNATIVE_POD_LABEL: "someone-else"}
    assert not any(scraped(e, other) for e in monitors["crefn-functions"]["spec"]["podMetricsEndpoints"])


def test_monitors_use_knatives_port_name_keep_the_job_gauges_labels_and_label_their_source() -> None:
    docs = RENDERED[MONITORING]
    for service in by_name(docs, KSERVICE).values():  # one port: Knative serves it as user-port
        assert service["spec"]["template"]["spec"]["containers"][0]["ports"] == [{"containerPort": 8080}]
    (recorder,) = pod_spec(by_name(docs, "apps/v1/Deployment")[RECORDER])["containers"]  # a Deployment: its own name
    ports = {RECORDER: recorder["ports"][0]["name"]}
    assert ports == {RECORDER: "http"}
    for monitor in by_name(docs, "PodMonitor").values():
        for endpoint in monitor["spec"]["podMetricsEndpoints"]:
            port = ports.get(monitor["metadata"]["name"], KNATIVE_USER_PORT)
            assert (endpoint["port"], endpoint["path"]) == (port, "/metrics")
            # nvcre_job_* carry the CRE Job's namespace and job: only the metrics pod's labels are honoured
            assert endpoint.get("honorLabels", False) == (monitor["metadata"]["name"] == "crefn-metrics")
            # every target labelled as the functions' (CRE's controller exports the same nvcre_* series)
            fixed = [r for r in endpoint["relabelings"] if not r.get("sourceLabels")]
            assert fixed == [{"targetLabel": "exporter", "replacement": "cre-functions"}]
    assert [r["metadata"]["name"] for r in of_kind(docs, "PrometheusRule")] == ["crefn"]


# -- closed by default: cluster-local Services; the oidc component (EventPolicy, audiences, tokens, NetworkPolicy)

VISIBILITY = "networking.knative.dev/visibility"
BROKER_AUDIENCE = "eventing.knative.dev/broker/crefn-system/crefn"
"""Knative's audience of the Broker crefn: <group>/<kind>/<namespace>/<name>, lower case."""


def env_of(service: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in service["spec"]["template"]["spec"]["containers"][0]["env"]}


@pytest.mark.parametrize("install", SHIPPED)
def test_every_service_is_cluster_local(install: str) -> None:
    services = by_name(RENDERED[install], KSERVICE)
    assert "crefn-metrics" in services  # the one that names every managed Job
    assert {name: s["metadata"]["labels"].get(VISIBILITY) for name, s in services.items()} == \
        dict.fromkeys(services, "cluster-local")


OIDC_INSTALLS = [name for name, components in INSTALLS.items() if "oidc" in components]
TOKENED = ("crefn-resync", "crefn-launch", "crefn-restart", "crefn-parity")
"""The Services that post to K_SINK (parity in observe mode) and so send a token for the Broker's audience."""


@pytest.mark.parametrize("install", OIDC_INSTALLS)
def test_the_broker_takes_events_only_from_the_projects_sources_triggers_and_the_functions_that_post(
        install: str) -> None:
    docs = RENDERED[install]
    (policy,) = of_kind(docs, "EventPolicy")
    assert policy["metadata"]["namespace"] == "crefn-system"
    broker = {"apiVersion": "eventing.knative.dev/v1", "kind": "Broker", "name": "crefn"}
    assert policy["spec"]["to"] == [{"ref": broker}]
    admitted = [(f["ref"]["apiVersion"], f["ref"]["kind"], f["ref"]["name"])
                for f in policy["spec"]["from"] if "ref" in f]
    senders = {(s["apiVersion"], s["kind"], s["metadata"]["name"]) for s in of_kind(docs, "ApiServerSource")
               if s["spec"]["sink"]["ref"]["kind"] == "Broker"}
    senders |= {(t["apiVersion"], t["kind"], t["metadata"]["name"]) for t in of_kind(docs, "Trigger")
                if t["spec"]["broker"] == "crefn"}
    assert len(senders) == len(of_kind(docs, "ApiServerSource")) + len(of_kind(docs, "Trigger"))  # all to crefn
    assert len(admitted) == len(set(admitted)) and set(admitted) == senders  # a ref to nothing: a policy not Ready
    accounts = [by_name(docs, KSERVICE)[name]["spec"]["template"]["spec"]["serviceAccountName"] for name in TOKENED]
    assert [f["sub"] for f in policy["spec"]["from"] if "sub" in f] == [service_account_user(a) for a in accounts]
    assert [f["sub"] for f in policy["spec"]["from"] if "sub" in f] == [
        "system:serviceaccount:crefn-system:crefn-resync", "system:serviceaccount:crefn-system:crefn-launch",
        "system:serviceaccount:crefn-system:crefn-restart", "system:serviceaccount:crefn-system:crefn-parity"]
    assert not of_kind(RENDERED["base"], "EventPolicy")


@pytest.mark.parametrize("install", OIDC_INSTALLS)
def test_every_trigger_asks_for_a_token_for_its_subscriber_alone(install: str) -> None:
    audiences = {t["metadata"]["name"]: (t["spec"]["subscriber"]["ref"]["name"], t["spec"]["subscriber"]["audience"])
                 for t in of_kind(RENDERED[install], "Trigger")}  # the name of its subscriber, its audience
    assert audiences["crefn-phase-trainjobs"] == ("crefn-phase", "serving.knative.dev/service/crefn-system/crefn-phase")
    assert {name: audience for name, (_, audience) in audiences.items()} == \
        {name: f"serving.knative.dev/service/crefn-system/{subscriber}" for name, (subscriber, _) in audiences.items()}
    assert all("audience" not in t["spec"]["subscriber"] for t in of_kind(RENDERED["base"], "Trigger"))


@pytest.mark.parametrize("install", OIDC_INSTALLS)
def test_the_functions_that_post_send_their_tokens_projected_for_the_brokers_audience(install: str) -> None:
    docs = RENDERED[install]
    services = by_name(docs, KSERVICE)
    for name in TOKENED:
        spec = services[name]["spec"]["template"]["spec"]
        container = spec["containers"][0]
        path = Path(env_of(services[name])["CREFN_OIDC_TOKEN_PATH"])
        (mount,) = [m for m in container["volumeMounts"] if Path(m["mountPath"]) == path.parent]
        (volume,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
        assert mount["readOnly"] is True
        assert volume["projected"]["sources"] == [{"serviceAccountToken": {
            "audience": BROKER_AUDIENCE, "expirationSeconds": 3600, "path": path.name}}]
    # K_SINK, where they post, is that Broker; every one that has a K_SINK has a token
    assert {b["spec"]["subject"]["name"] for b in of_kind(docs, "SinkBinding")} <= set(TOKENED)
    assert {name for name, s in services.items() if "CREFN_OIDC_TOKEN_PATH" in env_of(s)} == set(TOKENED)
    assert all("CREFN_OIDC_TOKEN_PATH" not in env_of(s) for s in by_name(RENDERED["base"], KSERVICE).values())


SINKBINDING_OWNS = re.compile(r"oidc-token$|kne-bundle-")
"""The volume names Knative's SinkBinding owns in a pod it binds: on every bind it first removes each volume and
mount so named (its own OIDC token, its trust bundles), then adds its own."""


@pytest.mark.parametrize("install", SHIPPED)
def test_no_bound_service_has_a_volume_named_as_the_sinkbindings_own(install: str) -> None:
    docs = RENDERED[install]
    services = by_name(docs, KSERVICE)
    for binding in of_kind(docs, "SinkBinding"):
        spec = services[binding["spec"]["subject"]["name"]]["spec"]["template"]["spec"]
        names = [v["name"] for v in spec.get("volumes") or []]
        names += [m["name"] for c in spec["containers"] for m in c.get("volumeMounts") or []]
        assert not [n for n in names if SINKBINDING_OWNS.match(n)], binding["metadata"]["name"]


NAMESPACE_LABEL = "kubernetes.io/metadata.name"


def test_the_function_pods_take_connections_only_from_knative_and_monitoring() -> None:
    import yaml

    docs = RENDERED[CLOSED]
    policies = by_name(docs, "NetworkPolicy")
    assert set(policies) == {"crefn-functions", RECORDER}
    spec = policies["crefn-functions"]["spec"]
    assert all(selects(spec["podSelector"], {KNATIVE_POD_LABEL: name}) for name in by_name(docs, KSERVICE))
    assert not selects(spec["podSelector"], {"app": "an-apiserversource-adapter"})  # no Knative Service's pod
    assert spec["policyTypes"] == ["Ingress"]
    assert admitted(spec) == {"knative-eventing": "every port", "knative-serving": "every port",
                              "kourier-system": "every port", "monitoring": [8080]}
    recorder = policies[RECORDER]["spec"]  # the recorder's pod: the dispatchers that deliver dead letters
    pod = by_name(docs, "apps/v1/Deployment")[RECORDER]["spec"]["template"]["metadata"]["labels"]
    assert selects(recorder["podSelector"], pod) and not selects(spec["podSelector"], pod)
    assert not any(selects(recorder["podSelector"], {KNATIVE_POD_LABEL: name}) for name in by_name(docs, KSERVICE))
    assert recorder["policyTypes"] == ["Ingress"]
    assert admitted(recorder) == {"knative-eventing": [8080], "monitoring": [8080]}
    alone = list(yaml.safe_load_all((KNATIVE / "components" / "oidc" / "networkpolicy.yaml").read_text()))
    assert [d["metadata"]["namespace"] for d in alone] == ["crefn-system"] * 2  # `kubectl apply -f` it alone
    assert not of_kind(RENDERED["base"], "NetworkPolicy")


def admitted(spec: dict[str, Any]) -> dict[str, Any]:
    """The namespaces (of a few) whose pods a NetworkPolicy admits, and on which ports."""
    found: dict[str, Any] = {}
    for namespace in ("knative-eventing", "knative-serving", "kourier-system", "monitoring", "crefn-system", "default"):
        for rule in spec["ingress"]:
            for peer in rule["from"]:
                labels = {NAMESPACE_LABEL: namespace}
                if set(peer) == {"namespaceSelector"} and selects(peer["namespaceSelector"], labels):
                    found[namespace] = [p["port"] for p in rule.get("ports", [])] or "every port"
    return found


def test_docs_say_how_to_install_closed() -> None:
    section = docs_section("operating.md", "### Closed by default")
    for needed in ("cluster-local", "authentication-oidc", "components/oidc", "EventPolicy", "CREFN_OIDC_TOKEN_PATH",
                   "--token-file", "NetworkPolicy", "knative-eventing", "knative-serving", "kourier-system",
                   "monitoring"):
        assert needed in section, needed


def test_the_local_stack_creates_the_logprofiles_the_component_ships() -> None:
    """The local stack reads the component's files rather than building it (a build delays its start): the same
    four LogProfiles, labels included, as `kustomize build` of base and the component gives."""
    built = {d["metadata"]["name"]: d for d in compose(["logprofiles"]) if d["kind"] == "LogProfile"}
    assert {d["metadata"]["name"]: d for d in shipped_logprofiles()} == built
    assert sorted(built) == ["megatron-bridge", "megatron-training", "nccl-bandwidth", "nccl-loopback"]
