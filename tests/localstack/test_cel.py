"""The CEL wrapper (`localstack.cluster.cel`) on one case table: the rules of the upstream CRDs, with values
that pass and values that fail them, and the expressions the project will need for node and
condition checks. The same table chose the library (see the module's docstring)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from localstack.cluster.admission import compile_rule, rules_of
from localstack.cluster.cel import CompileError, Environment, EvaluationError

LABEL_KEY = ("^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
             "[a-zA-Z0-9]([-a-zA-Z0-9_.]{0,61}[a-zA-Z0-9])?$")
RFC1035 = "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')"
MANAGED_BY = "self in ['trainer.kubeflow.org/trainjob-controller', 'kueue.x-k8s.io/multikueue']"
ONE_POLICY = ("[has(self.torch), has(self.mpi), has(self.jax), has(self.xgboost),has(self.flux)]"
              ".filter(x, x).size() <= 1")
STARTUP = ("!(has(self.startupPolicy) && self.startupPolicy.startupPolicyOrder == 'InOrder' && "
           "self.replicatedJobs.exists(x, has(x.dependsOn)))")
TEMPLATES_NS = "self.templates.all(t, !has(t.metadata.namespace) || size(t.metadata.namespace) == 0)"
LABELS_RESERVED = "self.all(k, k != 'app.kubernetes.io/managed-by' && !k.startsWith('nvcre.nvidia.com/'))"
LABELS_PREFIX = "self.all(k, k.contains('/') ? k.split('/')[0].size() <= 253 : true)"
KEY_PREFIX = "self.contains('/') ? self.split('/')[0].size() <= 253 : true"
KEY_RESERVED = "self != 'app.kubernetes.io/managed-by' && !self.startsWith('nvcre.nvidia.com/')"
NIC = "!self.contains('kubernetes.io/') && !self.startsWith('k8s.io/') && !self.contains('.k8s.io/')"
URI = "self == '' || self.matches('^[A-Za-z][A-Za-z0-9+.-]*://.+$')"
LONG_PREFIX = "a" * 254

NODE = {"metadata": {"name": "gpu-node-07", "labels": {"x": "y", "nvidia.com/gpu.present": "true"}},
        "spec": {"unschedulable": True, "taints": [{"key": "k", "effect": "NoSchedule"},
                                                   {"key": "other", "effect": "NoExecute"}]},
        "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "DiskPressure", "status": "False"}]}}

# (id, expression, variables, expected): expected is a value, or the error class the wrapper raises
CASES: list[tuple[str, str, dict[str, Any], Any]] = [
    # the upstream rules, each once passing and once failing
    ("rfc1035-ok", RFC1035, {"self": {"metadata": {"name": "tj-1"}}}, True),
    ("rfc1035-uppercase", RFC1035, {"self": {"metadata": {"name": "Tj"}}}, False),
    ("rfc1035-leading-digit", RFC1035, {"self": {"metadata": {"name": "1tj"}}}, False),
    ("name-size-ok", "size(self.metadata.name) <= 63", {"self": {"metadata": {"name": "a" * 63}}}, True),
    ("name-size-64", "size(self.metadata.name) <= 63", {"self": {"metadata": {"name": "a" * 64}}}, False),
    ("managedBy-enum-ok", MANAGED_BY, {"self": "kueue.x-k8s.io/multikueue"}, True),
    ("managedBy-enum-bad", MANAGED_BY, {"self": "example.com/controller"}, False),
    ("immutable-same", "self == oldSelf", {"self": {"a": [1, {"b": "c"}]}, "oldSelf": {"a": [1, {"b": "c"}]}}, True),
    ("immutable-changed", "self == oldSelf", {"self": {"a": [1, {"b": "c"}]}, "oldSelf": {"a": [1, {"b": "d"}]}},
     False),
    ("immutable-scalar", "self == oldSelf", {"self": 2, "oldSelf": 3}, False),
    ("presence-kept", "has(self.workloadMetadata) == has(oldSelf.workloadMetadata)",
     {"self": {"workloadMetadata": {}}, "oldSelf": {"workloadMetadata": {"labels": {}}}}, True),
    ("presence-added", "has(self.workloadMetadata) == has(oldSelf.workloadMetadata)",
     {"self": {"workloadMetadata": {}}, "oldSelf": {}}, False),
    ("labels-reserved-ok", LABELS_RESERVED, {"self": {"team": "a", "example.com/x": "b"}}, True),
    ("labels-reserved-prefix", LABELS_RESERVED, {"self": {"nvcre.nvidia.com/job": "x"}}, False),
    ("labels-reserved-managed-by", LABELS_RESERVED, {"self": {"app.kubernetes.io/managed-by": "me"}}, False),
    ("labels-key-syntax-ok", f"self.all(k, k.matches('{LABEL_KEY}'))", {"self": {"a.io/b": "1", "c_d": "2"}}, True),
    ("labels-key-syntax-bad", f"self.all(k, k.matches('{LABEL_KEY}'))", {"self": {"-a": "1"}}, False),
    ("labels-split-ok", LABELS_PREFIX, {"self": {"a.io/b": "1", "plain": "2"}}, True),
    ("labels-split-long", LABELS_PREFIX, {"self": {f"{LONG_PREFIX}/b": "1"}}, False),
    ("key-split-ok", KEY_PREFIX, {"self": "kueue.x-k8s.io/queue-name"}, True),
    ("key-split-long", KEY_PREFIX, {"self": f"{LONG_PREFIX}/q"}, False),
    ("key-reserved-ok", KEY_RESERVED, {"self": "kueue.x-k8s.io/queue-name"}, True),
    ("key-reserved-bad", KEY_RESERVED, {"self": "nvcre.nvidia.com/queue"}, False),
    ("exclusive-inline-ok", "!(has(self.inline) && has(self.configMapRef))", {"self": {"inline": "x"}}, True),
    ("exclusive-inline-bad", "!(has(self.inline) && has(self.configMapRef))",
     {"self": {"inline": "x", "configMapRef": {"name": "c"}}}, False),
    ("script-xor-module-bad", "!(has(self.script) && has(self.module))",
     {"self": {"script": "train.py", "module": "train"}}, False),
    ("script-or-module-ok", "has(self.script) || has(self.module)", {"self": {"module": "train"}}, True),
    ("script-or-module-none", "has(self.script) || has(self.module)", {"self": {}}, False),
    ("nic-ok", NIC, {"self": "nvidia.com/rdma"}, True),
    ("nic-reserved", NIC, {"self": "example.k8s.io/rdma"}, False),
    ("one-policy-ok", ONE_POLICY, {"self": {"torch": {}}}, True),
    ("one-policy-two", ONE_POLICY, {"self": {"torch": {}, "mpi": {}}}, False),
    ("at-least-one-ok", "self >= 1", {"self": 1}, True),
    ("at-least-one-zero", "self >= 1", {"self": 0}, False),
    ("no-node-container", "!self.exists(c, c == 'node')", {"self": ["init", "node"]}, False),
    ("startup-ok", STARTUP, {"self": {"startupPolicy": {"startupPolicyOrder": "AnyOrder"},
                                      "replicatedJobs": [{"dependsOn": []}]}}, True),
    ("startup-bad", STARTUP, {"self": {"startupPolicy": {"startupPolicyOrder": "InOrder"},
                                       "replicatedJobs": [{"name": "a"}, {"dependsOn": []}]}}, False),
    ("templates-ns-ok", TEMPLATES_NS, {"self": {"templates": [{"metadata": {}}, {"metadata": {"namespace": ""}}]}},
     True),
    ("templates-ns-bad", TEMPLATES_NS, {"self": {"templates": [{"metadata": {"namespace": "x"}}]}}, False),
    ("uri-empty", URI, {"self": ""}, True),
    ("uri-ok", URI, {"self": "s3://bucket/key"}, True),
    ("uri-bad", URI, {"self": "bucket/key"}, False),
    ("status-has", "has(self.lastUpdatedTime)", {"self": {}}, False),
    # what the project will need
    ("node-unschedulable", "node.spec.unschedulable == true", {"node": NODE}, True),
    ("node-label", "node.metadata.labels['x'] == 'y'", {"node": NODE}, True),
    ("node-label-absent", "node.metadata.labels['z'] == 'y'", {"node": NODE}, EvaluationError),
    ("node-label-in", "'z' in node.metadata.labels && node.metadata.labels['z'] == 'y'", {"node": NODE}, False),
    ("node-taint", "node.spec.taints.exists(t, t.key == 'k' && t.effect == 'NoSchedule')", {"node": NODE}, True),
    ("node-taint-absent", "node.spec.taints.exists(t, t.key == 'k' && t.effect == 'NoExecute')", {"node": NODE},
     False),
    ("node-ready", "node.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')", {"node": NODE},
     True),
    ("node-pressure", "node.status.conditions.exists(c, c.type == 'DiskPressure' && c.status == 'True')",
     {"node": NODE}, False),
    ("int-ge", "value >= 900", {"value": 950}, True),
    ("int-lt", "value >= 900", {"value": 899}, False),
    ("double-ge", "value >= 900", {"value": 950.0}, True),
    ("cross-type-950.5", "value >= 900", {"value": 950.5}, True),
    ("cross-type-899.5", "value >= 900", {"value": 899.5}, False),
    ("heterogeneous-equality", "value == 950", {"value": 950.0}, True),
    ("error-absorbed-by-or", "node.spec.missing || true", {"node": NODE}, True),
    ("optional-field", "node.?spec.?missing.orValue('none') == 'none'", {"node": NODE}, True),
    # errors
    ("non-boolean", "node.metadata.name", {"node": NODE}, EvaluationError),
    ("undefined-variable", "nosuch.spec.unschedulable == true", {"node": NODE}, CompileError),
    ("missing-key", "node.spec.missing == true", {"node": NODE}, EvaluationError),
    ("no-such-overload", "node.metadata.name + 1 == 2", {"node": NODE}, EvaluationError),
    ("compile-error", "node.spec.(", {"node": NODE}, CompileError),
    ("unknown-function", "node.metadata.name.frobnicate()", {"node": NODE}, CompileError),
]


@pytest.mark.parametrize(("expression", "variables", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_case_table(expression: str, variables: dict[str, Any], expected: Any) -> None:
    env = Environment(sorted(variables))
    if isinstance(expected, type) and issubclass(expected, Exception):
        with pytest.raises(expected):
            env.compile(expression).check(variables)
    else:
        assert env.compile(expression).check(variables) is expected


def test_evaluate_returns_plain_values() -> None:
    env = Environment(["node"])
    assert env.compile("node.metadata.name").evaluate({"node": NODE}) == "gpu-node-07"
    assert env.compile("node.spec.taints.map(t, t.key)").evaluate({"node": NODE}) == ["k", "other"]
    assert env.compile("'a/b/c'.split('/')").evaluate({"node": NODE}) == ["a", "b", "c"]


def test_errors_name_the_problem() -> None:
    env = Environment(["node"])
    with pytest.raises(CompileError, match="undeclared reference to 'nosuch'"):
        env.compile("nosuch == 1")
    with pytest.raises(EvaluationError, match="expected a bool result, got string"):
        env.compile("node.metadata.name").check({"node": NODE})
    with pytest.raises(EvaluationError, match="missing"):
        env.compile("node.spec.missing").evaluate({"node": NODE})
    with pytest.raises(EvaluationError, match="no value for variable 'node'"):
        env.compile("node == 1").evaluate({})


def test_optional_variable() -> None:
    env = Environment(["self", "oldSelf"], optional=["oldSelf"])
    grows = env.compile("!oldSelf.hasValue() || self >= oldSelf.value()")
    assert grows.check({"self": 3}) is True
    assert grows.check({"self": 3, "oldSelf": 2}) is True
    assert grows.check({"self": 3, "oldSelf": 5}) is False
    field = env.compile("oldSelf.?spec.?size.orValue(0) <= self.spec.size")
    assert field.check({"self": {"spec": {"size": 1}}}) is True
    assert field.check({"self": {"spec": {"size": 1}}, "oldSelf": {"spec": {"size": 2}}}) is False
    with pytest.raises(CompileError, match="undeclared reference to 'nosuch'"):
        env.compile("nosuch == oldSelf")


def test_every_upstream_rule_compiles(upstream_crds: Path) -> None:
    """All rules (and message expressions) of the upstream CRDs compile in the wrapper's environment."""
    rules: set[str] = set()

    def collect(schema: Any) -> None:
        if isinstance(schema, dict):
            rules.update(str(r["rule"]) for r in rules_of(schema))
            rules.update(str(r["messageExpression"]) for r in rules_of(schema) if r.get("messageExpression"))
            for child in [*(schema.get("properties") or {}).values(), schema.get("items"),
                          schema.get("additionalProperties")]:
                collect(child)

    for path in sorted(upstream_crds.rglob("*.yaml")):
        for doc in yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                for version in doc["spec"]["versions"]:
                    collect(version["schema"]["openAPIV3Schema"])
    assert len(rules) >= 20
    errors = {rule: compile_rule(rule)[2] for rule in rules}
    assert {rule: e for rule, e in errors.items() if e} == {}
    table = {c[1] for c in CASES}
    families = (re.compile(r"has\(self\.(\w+)\) == has\(oldSelf\.\1\)"),
                re.compile(r"self\.all\(k, k\.matches\(.*\)\)"))
    uncovered = {r for r in rules - table if not any(f.fullmatch(r) for f in families)}
    assert uncovered == set(), "every upstream rule (or its family) has cases in the table"
