"""The CEL of a Job (`functions.domain.cel`) on CRE's cases: node-health expressions over labels,
annotations, taints, conditions and `spec.unschedulable` on Nodes with and without those fields,
optional types, thresholds with int literals against a double, and every error with CRE's text
(non-bool result, undeclared variable, syntax error, missing key)."""

from __future__ import annotations

import copy
import threading
from typing import Any

import pytest

from functions.domain.cel import CelError, check, node_health, threshold

GPU_LABEL = 'node.metadata.labels["nvidia.com/gpu.health"] == "unhealthy"'
GPUD_LABEL = "'gpud.nvidia.com/unhealthy' in node.metadata.labels"
STATUS_ANNOTATION = "node.metadata.annotations['nvsentinel.nvidia.com/status'] == 'unhealthy'"
XID_TAINT = 'node.spec.taints.exists(t, t.key == "nvidia.com/gpu-xid" && t.effect == "NoSchedule")'
NOT_READY = 'node.status.conditions.exists(c, c.type == "Ready" && c.status != "True")'
CORDONED = "node.spec.unschedulable == true"
ANY_OF = ("node.spec.taints.exists(t, t.key == 'nvidia.com/gpu-unhealthy') ||\n"
          "'gpud.nvidia.com/unhealthy' in node.metadata.labels ||\n"
          "node.spec.unschedulable == true")
OPTIONAL_LABEL = 'node.?metadata.?labels[?"nvidia.com/gpu.health"].orValue("healthy") == "unhealthy"'
GPUS = 'int(node.status.capacity[?"nvidia.com/gpu"].orValue("0")) < 8'
XID = [{"key": "nvidia.com/gpu-xid", "value": "79", "effect": "NoSchedule"}]


def node(labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
         taints: list[dict[str, str]] | None = None, unschedulable: bool | None = None,
         conditions: dict[str, str] | None = None, capacity: dict[str, str] | None = None) -> dict[str, Any]:
    """A Node as the API server writes it: fields that are empty or false are left out."""
    metadata: dict[str, Any] = {"name": "gpu-node-07", "uid": "3f1c", "resourceVersion": "42"}
    spec: dict[str, Any] = {}
    status: dict[str, Any] = {}
    for part, key, value in (
        (metadata, "labels", labels), (metadata, "annotations", annotations), (spec, "taints", taints),
        (spec, "unschedulable", unschedulable),
        (status, "conditions", [{"type": t, "status": s} for t, s in (conditions or {}).items()] or None),
        (status, "capacity", capacity),
    ):
        if value is not None:
            part[key] = value
    body = {"apiVersion": "v1", "kind": "Node", "metadata": metadata}
    return body | ({"spec": spec} if spec else {}) | ({"status": status} if status else {})


@pytest.mark.parametrize(("expression", "subject", "unhealthy"), [
    pytest.param(GPU_LABEL, node(labels={"nvidia.com/gpu.health": "unhealthy"}), True, id="label-match"),
    pytest.param(GPU_LABEL, node(labels={"nvidia.com/gpu.health": "healthy"}), False, id="label-other-value"),
    pytest.param(GPUD_LABEL, node(labels={"gpud.nvidia.com/unhealthy": ""}), True, id="label-present"),
    pytest.param(GPUD_LABEL, node(), False, id="label-no-labels-at-all"),
    pytest.param(STATUS_ANNOTATION, node(annotations={"nvsentinel.nvidia.com/status": "unhealthy"}), True,
                 id="annotation-match"),
    pytest.param(STATUS_ANNOTATION, node(annotations={"nvsentinel.nvidia.com/status": "healthy"}), False,
                 id="annotation-healthy"),
    pytest.param(XID_TAINT, node(taints=XID), True, id="taint-match"),
    pytest.param(XID_TAINT, node(taints=[{"key": "nvidia.com/gpu-xid", "effect": "PreferNoSchedule"}]), False,
                 id="taint-other-effect"),
    pytest.param(XID_TAINT, node(), False, id="taint-no-taints"),
    pytest.param(NOT_READY, node(conditions={"Ready": "False"}), True, id="condition-not-ready"),
    pytest.param(NOT_READY, node(conditions={"Ready": "Unknown"}), True, id="condition-unknown"),
    pytest.param(NOT_READY, node(conditions={"Ready": "True", "DiskPressure": "False"}), False,
                 id="condition-ready"),
    pytest.param(NOT_READY, node(), False, id="condition-none"),
    pytest.param(CORDONED, node(unschedulable=True), True, id="unschedulable-cordoned"),
    pytest.param(CORDONED, node(), False, id="unschedulable-default-false"),
    pytest.param(ANY_OF, node(labels={"gpud.nvidia.com/unhealthy": "true"}), True, id="complex-label-only"),
    pytest.param(ANY_OF, node(taints=[{"key": "nvidia.com/gpu-unhealthy", "effect": "NoExecute"}]), True,
                 id="complex-taint-only"),
    pytest.param(ANY_OF, node(unschedulable=True), True, id="complex-cordoned"),
    pytest.param(ANY_OF, node(labels={"kubernetes.io/hostname": "gpu-node-07"}), False, id="complex-healthy"),
    pytest.param(OPTIONAL_LABEL, node(labels={"nvidia.com/gpu.health": "unhealthy"}), True, id="optional-set"),
    pytest.param(OPTIONAL_LABEL, node(), False, id="optional-absent"),
    pytest.param(GPUS, node(capacity={"nvidia.com/gpu": "4"}), True, id="optional-capacity-short"),
    pytest.param(GPUS, node(capacity={"nvidia.com/gpu": "8"}), False, id="optional-capacity-full"),
    pytest.param(CORDONED, {}, False, id="empty-object"),
    pytest.param(CORDONED, {"metadata": None, "spec": None, "status": None}, False, id="null-sections"),
    pytest.param(XID_TAINT, {"spec": {"taints": None, "unschedulable": None}}, False, id="null-fields"),
])
def test_node_health(expression: str, subject: dict[str, Any], unhealthy: bool) -> None:
    assert node_health(expression, subject) is unhealthy
    assert check(expression, "node") == ""


def test_the_node_is_not_modified() -> None:
    subject = node(labels={"a": "b"})
    before = copy.deepcopy(subject)
    assert node_health(GPU_LABEL.replace("nvidia.com/gpu.health", "a").replace("unhealthy", "b"), subject)
    assert subject == before


SYNTAX = ("ERROR: <input>:1:36: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', "
          "'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER} "
          "| node.spec.taints.exists(t, t.key == | ...................................^")


@pytest.mark.parametrize(("expression", "message"), [
    # CRE's texts; its compile errors carry the same lines, with newlines where these have " | "
    pytest.param("node.metadata.name", "CEL expression must return bool, got dyn", id="non-boolean"),
    pytest.param("node.spec.unschedulable", "CEL expression must return bool, got dyn", id="dyn-not-bool"),
    pytest.param("node", "CEL expression must return bool, got map(string, dyn)", id="map"),
    pytest.param("node.spec.taints.map(t, t.key)", "CEL expression must return bool, got list(dyn)", id="list"),
    pytest.param("node.?metadata", "CEL expression must return bool, got optional_type(dyn)", id="optional"),
    pytest.param("undefined_var == true", "ERROR: <input>:1:1: undeclared reference to 'undefined_var' "
                 "(in container '') | undefined_var == true | ^", id="undefined-var"),
    pytest.param("node.spec.taints.exists(t, t.key ==", SYNTAX, id="syntax-error"),
])
def test_node_expressions_that_cannot_compile(expression: str, message: str) -> None:
    assert check(expression, "node") == message
    with pytest.raises(CelError) as raised:
        node_health(expression, node())
    assert str(raised.value) == message


@pytest.mark.parametrize("expression", ["nodes.spec.unschedulable == true", "value >= 1", "self.spec.x == 1"])
def test_only_node_is_declared(expression: str) -> None:
    assert "undeclared reference" in check(expression, "node")


@pytest.mark.parametrize(("expression", "message"), [
    pytest.param(GPU_LABEL, 'Key not found in map : "nvidia.com/gpu.health"', id="missing-label"),
    pytest.param("node.spec.providerID == 'x'", 'Key not found in map : "providerID"', id="missing-field"),
    pytest.param("node.metadata.labels.size() > node.metadata.name", "No matching overloads found",
                 id="no-overload-on-dyn"),
])
def test_evaluation_errors(expression: str, message: str) -> None:
    assert check(expression, "node") == ""
    with pytest.raises(CelError) as raised:
        node_health(expression, node())
    assert str(raised.value).startswith(message)


@pytest.mark.parametrize(("expression", "value", "satisfied"), [
    pytest.param("value >= 900", 950.0, True, id="gte-int-literal"),
    pytest.param("value >= 900", 900.0, True, id="gte-exact"),
    pytest.param("value >= 900", 899.99, False, id="gte-fail"),
    pytest.param("value > 900", 900.0, False, id="gt-exact-fail"),
    pytest.param("value <= 3.0", 5.0, False, id="lte-fail"),
    pytest.param("value <= 3.0", 2.5, True, id="lte-pass"),
    pytest.param("value < 5", 5.0, False, id="lt-exact-fail"),
    pytest.param("900 <= value", 950.0, True, id="int-on-the-left"),
    pytest.param("value < 1u", 0.5, True, id="uint-literal"),
    pytest.param("value >= 0.85", 0.9, True, id="ratio-pass"),
    pytest.param("value >= 0.85", 0.8, False, id="ratio-fail"),
    pytest.param("value >= 100 && value <= 200", 150.0, True, id="range-pass"),
    pytest.param("value >= 100 && value <= 200", 250.0, False, id="range-fail-high"),
    pytest.param("value >= 100 && value <= 200", 50.0, False, id="range-fail-low"),
    pytest.param("value * 2.0 >= 900", 450.0, True, id="double-arithmetic"),
    pytest.param("value >= 900", 950, True, id="int-measurement"),
])
def test_threshold(expression: str, value: float, satisfied: bool) -> None:
    assert threshold(expression, value) is satisfied
    assert check(expression, "value") == ""


@pytest.mark.parametrize(("expression", "message"), [
    pytest.param("value + 1.0", "expression must return bool, got double", id="non-bool-return"),
    pytest.param("[value]", "expression must return bool, got list(double)", id="list"),
    pytest.param("value >=", "ERROR: <input>:1:9: Syntax error: mismatched input '<EOF>' expecting {'[', '{', "
                 "'(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, "
                 "IDENTIFIER} | value >= | ........^", id="syntax-error"),
    pytest.param("not_a_variable >= 1", "ERROR: <input>:1:1: undeclared reference to 'not_a_variable' "
                 "(in container '') | not_a_variable >= 1 | ^", id="invalid-expr"),
    # cross-type numerics cover ordering only: equality and arithmetic stay strict, as in cel-go
    pytest.param("value == 950", "ERROR: <input>:1:7: found no matching overload for '_==_' applied to "
                 "'(double, int)' | value == 950 | ......^", id="equality-int-literal"),
    pytest.param("value >= 900 && value + 1 > 2", "ERROR: <input>:1:23: found no matching overload for '_+_' "
                 "applied to '(double, int)' | value >= 900 && value + 1 > 2 | ......................^",
                 id="int-arithmetic"),
    pytest.param("value == 1 || value == 2", "ERROR: <input>:1:7: found no matching overload for '_==_' applied to "
                 "'(double, int)' | value == 1 || value == 2 | ......^ ERROR: <input>:1:21: found no matching "
                 "overload for '_==_' applied to '(double, int)' | value == 1 || value == 2 | ....................^",
                 id="every-error-in-order"),
    pytest.param("(value >= 900) + 1", "ERROR: <input>:1:16: found no matching overload for '_+_' applied to "
                 "'(bool, int)' | (value >= 900) + 1 | ...............^", id="bool-arithmetic"),
    pytest.param("value.?x >= 1", "ERROR: <input>:1:1: unsupported syntax '.?' | value.?x >= 1 | ^",
                 id="no-optionals-in-thresholds"),
])
def test_threshold_expressions_that_cannot_compile(expression: str, message: str) -> None:
    assert check(expression, "value") == message
    with pytest.raises(CelError) as raised:
        threshold(expression, 100.0)
    assert str(raised.value) == message


def test_a_threshold_compiled_unchecked_still_must_return_bool() -> None:
    """`value * 2.0 >= 900` passes only unchecked (see the module); its result type is checked on evaluation."""
    expression = "value * 2.0 >= 900 ? value : 1.0"
    assert check(expression, "value") == ""
    with pytest.raises(CelError) as raised:
        threshold(expression, 950.0)
    assert str(raised.value) == "expression must return bool, got double"


def test_cel_error_is_a_value_error_on_one_line() -> None:
    with pytest.raises(ValueError, match="Syntax error") as raised:
        threshold("value >=\n  && true", 1.0)
    assert "\n" not in str(raised.value)


def test_check_knows_two_variables() -> None:
    with pytest.raises(ValueError, match="unknown CEL variable 'self'"):
        check("self == 1", "self")  # type: ignore[arg-type]


def test_threads_share_the_compiled_expressions() -> None:
    cases = [(GPU_LABEL, node(labels={"nvidia.com/gpu.health": "unhealthy"}), True),
             (XID_TAINT, node(taints=XID), True), (NOT_READY, node(conditions={"Ready": "True"}), False),
             (CORDONED, node(), False)]
    failures: list[str] = []

    def work(offset: int) -> None:
        for i in range(400):
            expression, subject, expected = cases[(i + offset) % len(cases)]
            fresh = f"{expression} && {i % 50} >= 0"  # compiled for the first time by some thread
            if node_health(expression, subject) is not expected or node_health(fresh, subject) is not expected:
                failures.append(f"{fresh} on thread {offset}")
            if threshold(f"value >= {i % 50}", 25.0) is not (i % 50 <= 25):
                failures.append(f"threshold {i % 50} on thread {offset}")

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_a_node_value_cel_cannot_hold_is_an_error_naming_it() -> None:
    """An integer beyond int64 in the Node's JSON: the CEL library's reason, on one line, never a crash."""
    with pytest.raises(CelError) as raised:
        node_health("node.status.x == 1", {"status": {"x": 10**30}})
    assert str(raised.value).startswith(f"Integer value '{10**30}' out of range")
