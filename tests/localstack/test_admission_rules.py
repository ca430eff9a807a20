"""How the admission webhook evaluates `x-kubernetes-validations` (`localstack.cluster.admission`), on small
schemas: where rules apply, `oldSelf`, ratcheting, and the errors' Kubernetes format. The webhook on
the real API server is tested in tests/localstack/test_admission.py."""

from __future__ import annotations

from typing import Any

from localstack.cluster.admission import Reviewer, Target, build, normalize_field_path, validate


def obj(props: dict[str, Any], rules: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": props, **extra}
    if rules:
        schema["x-kubernetes-validations"] = rules
    return schema


def string(*rules: dict[str, Any]) -> dict[str, Any]:
    return {"type": "string", **({"x-kubernetes-validations": list(rules)} if rules else {})}


SCHEMA = obj({
    "metadata": {"type": "object"},
    "spec": obj({
        "mode": string({"rule": "self in ['a', 'b']", "message": "mode must be a or b"},
                       {"rule": "self == oldSelf", "message": "mode is immutable"}),
        "size": {"type": "number", "x-kubernetes-validations": [{"rule": "self >= 1.5"}]},
        "labels": {"type": "object", "additionalProperties": string({"rule": "self.size() <= 3"}),
                   "x-kubernetes-validations": [{"rule": "self.all(k, !k.startsWith('x/'))",
                                                 "message": "no x/ keys"}]},
        "nodes": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                  "items": obj({"name": string(), "role": string({"rule": "self == oldSelf",
                                                                 "message": "role is immutable"})})},
        "plain": {"type": "array", "items": obj({"name": string(), "role": string(
            {"rule": "self == oldSelf", "message": "never evaluated: list items without map keys have no oldSelf"},
            {"rule": "self != 'bad'", "message": "no bad roles"})})},
        "pair": obj({"a": string(), "b": string()}, [
            {"rule": "!(has(self.a) && has(self.b))", "message": "a and b are exclusive", "fieldPath": ".b",
             "reason": "FieldValueForbidden"},
            {"rule": "has(self.a) || has(self.b)", "reason": "FieldValueRequired", "message": "a or b"},
            {"rule": "size(self) < 2", "messageExpression": "'pair has ' + string(size(self)) + ' fields'"},
        ]),
    }, [{"rule": "has(self.mode) == has(oldSelf.mode)", "message": "mode cannot be added or removed"},
        {"rule": "!has(self.size) || self.size >= oldSelf.?size.orValue(0.0)", "optionalOldSelf": True,
         "message": "size cannot shrink"},
        {"rule": "oldSelf.hasValue() || !has(self.size) || self.size != 7.0", "optionalOldSelf": True,
         "message": "size 7 is for updates"}]),
}, [{"rule": "self.metadata.name.matches('^[a-z]+$')", "message": "bad name"},
    {"rule": "!has(self.metadata.labels)", "message": "CEL sees only name and generateName"}])

ROOT = build(SCHEMA, resource_root=True)
assert ROOT is not None


def errors(new: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    assert ROOT is not None
    return [str(e) for e in validate(ROOT, new, old).errors]


def named(spec: dict[str, Any], name: str = "ok", **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, **meta}, "spec": spec}


def test_valid_object_passes() -> None:
    assert errors(named({"mode": "a", "size": 2, "labels": {"k": "v"}, "pair": {"a": "1"}},
                        labels={"any": "thing"})) == []


def test_paths_and_values_as_kubernetes_prints_them() -> None:
    found = errors(named({"mode": "c", "size": 1, "labels": {"x/y": "long-value"},
                          "plain": [{"name": "n", "role": "bad"}]}, name="Bad"))
    assert found == [
        "<nil>: Invalid value: bad name",
        'spec.mode: Invalid value: "c": mode must be a or b',
        "spec.size: Invalid value: 1: failed rule: self >= 1.5",
        "spec.labels: Invalid value: no x/ keys",
        'spec.labels[x/y]: Invalid value: "long-value": failed rule: self.size() <= 3',
        'spec.plain[0].role: Invalid value: "bad": no bad roles',
    ]


def test_reason_field_path_and_message_expression() -> None:
    assert errors(named({"pair": {"a": "1", "b": "2"}})) == [
        "spec.pair.b: Forbidden: a and b are exclusive",
        "spec.pair: Invalid value: pair has 2 fields",
    ]
    assert errors(named({"pair": {}})) == ["spec.pair: Required value: a or b"]
    assert normalize_field_path(".labels['x/y']", SCHEMA["properties"]["spec"]) == "labels[x/y]"
    assert normalize_field_path(".nope", SCHEMA["properties"]["spec"]) == ""


def test_transition_rules_only_on_update_with_an_old_value() -> None:
    assert errors(named({"mode": "a"})) == []  # CREATE: no oldSelf
    assert errors(named({"mode": "b"}), named({"mode": "a"})) == ["spec.mode: Invalid value: \"b\": mode is immutable"]
    assert errors(named({"mode": "a"}), named({})) == ["spec: Invalid value: mode cannot be added or removed"]
    assert errors(named({"mode": "a", "size": 3}), named({"mode": "a", "size": 2})) == []


def test_optional_old_self_is_evaluated_on_create_too() -> None:
    assert errors(named({"size": 2})) == []
    assert errors(named({"size": 7})) == ["spec: Invalid value: size 7 is for updates"]
    assert errors(named({"size": 7}), named({"size": 6})) == []
    assert errors(named({"size": 2}), named({"size": 3})) == ["spec: Invalid value: size cannot shrink"]


def test_list_items_are_matched_by_their_map_keys() -> None:
    old = named({"nodes": [{"name": "a", "role": "x"}, {"name": "b", "role": "y"}],
                 "plain": [{"name": "a", "role": "x"}]})
    reordered = named({"nodes": [{"name": "b", "role": "y"}, {"name": "a", "role": "x"}],
                       "plain": [{"name": "a", "role": "changed"}]})
    assert errors(reordered, old) == []
    changed = named({"nodes": [{"name": "b", "role": "z"}, {"name": "c", "role": "new"}]})
    assert errors(changed, old) == ['spec.nodes[0].role: Invalid value: "z": role is immutable']


def test_ratcheting_unchanged_values_only_warn() -> None:
    assert ROOT is not None
    old = named({"mode": "c", "labels": {"x/y": "v"}})
    kept = validate(ROOT, named({"mode": "c", "labels": {"x/y": "v"}, "size": 2}), old)
    assert kept.errors == []
    assert kept.warnings == ['spec.mode: Invalid value: "c": mode must be a or b',
                             "spec.labels: Invalid value: no x/ keys"]
    changed = validate(ROOT, named({"mode": "c", "labels": {"x/y": "v", "x/z": "w"}}), old)
    assert [str(e) for e in changed.errors] == ["spec.labels: Invalid value: no x/ keys"]


def test_numbers_are_doubles_and_errors_of_evaluation_are_reported() -> None:
    schema = obj({"n": {"type": "number", "x-kubernetes-validations": [{"rule": "self + 0.5 > 1.0"}]},
                  "m": obj({}, [{"rule": "self.missing == 1"}]),
                  "s": string({"rule": "self"}, {"rule": "self.frobnicate()"})})
    root = build(schema, resource_root=True)
    assert root is not None
    found = [str(e) for e in validate(root, {"n": 1, "m": {}, "s": "x"}).errors]
    assert found[0].startswith('m: Invalid value: "object": ') and "missing" in found[0]
    assert found[0].endswith("evaluating rule: self.missing == 1")
    assert found[1] == 's: Invalid value: "string": expected a bool result, got string evaluating rule: self'
    assert found[2].startswith('s: Invalid value: "string": rule compile error: ')
    assert len(found) == 3


def test_review_answers_every_violation_at_once() -> None:
    target = Target("example.com", "v1", "things", "Thing", True, SCHEMA, False)
    reviewer = Reviewer([target])
    request = {"uid": "u1", "operation": "CREATE", "name": "Bad",
               "resource": {"group": "example.com", "version": "v1", "resource": "things"},
               "object": named({"mode": "c"}, name="Bad")}
    answer = reviewer.review({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
    response = answer["response"]
    assert response["uid"] == "u1" and response["allowed"] is False
    status = response["status"]
    assert status["code"] == 422 and status["reason"] == "Invalid"
    assert status["message"] == ('Thing.example.com "Bad" is invalid: [<nil>: Invalid value: bad name, '
                                 'spec.mode: Invalid value: "c": mode must be a or b]')
    assert status["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "message": "Invalid value: bad name", "field": "<nil>"},
        {"reason": "FieldValueInvalid", "message": 'Invalid value: "c": mode must be a or b', "field": "spec.mode"}]
    other = {**request, "resource": {"group": "example.com", "version": "v1", "resource": "others"}}
    assert reviewer.review({"request": other})["response"] == {"uid": "u1", "allowed": True}
    deleted = {**request, "operation": "DELETE"}
    assert reviewer.review({"request": deleted})["response"]["allowed"] is True
