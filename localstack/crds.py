"""CRDs for the local API server: the upstream ones, made loadable by kube-apiserver 1.20.

Upstream copies live outside the repository (default `../shared/upstream`, see its README). 1.20
rejects `default: ""` on string properties, so one compatibility step is applied: in an array with
`x-kubernetes-list-map-keys`, a key whose default is `""` becomes `required` in the item schema; every
other `default: ""` is dropped. 1.20 ignores `x-kubernetes-validations` (CEL).

A clone without the upstream directory falls back to small CRDs written here: structural schemas that
cover every field the code reads or writes, status subresources, and `conditions` as a map list keyed
by `type`. Unknown spec fields are preserved there, so they prune less than the real ones.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from events.types import CRE_GROUP_DEFAULT

JsonObj = dict[str, Any]


def make_compatible(schema: Any) -> Any:
    """Return a copy of an OpenAPI schema with the 1.20 compatibility step applied."""
    if isinstance(schema, list):
        return [make_compatible(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: make_compatible(v) for k, v in schema.items() if not (k == "default" and v == "")}
    keys = schema.get("x-kubernetes-list-map-keys")
    items = schema.get("items")
    if keys and isinstance(items, dict):
        props = items.get("properties") or {}
        required = list(out["items"].get("required") or [])
        for key in keys:
            if (props.get(key) or {}).get("default") == "" and key not in required:
                required.append(key)
        if required:
            out["items"]["required"] = required
    return out


def load_upstream(directory: Path) -> list[JsonObj]:
    crds: list[JsonObj] = []
    for path in sorted(directory.rglob("*.yaml")):
        for doc in yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader):  # the C loader: 10x faster
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                crds.append(make_compatible(doc))
    return crds


# -- fallback -----------------------------------------------------------------------------------

_STR: JsonObj = {"type": "string"}
_INT: JsonObj = {"type": "integer", "format": "int64"}
_CONDITIONS: JsonObj = {
    "type": "array",
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["type"],
    "items": {
        "type": "object",
        "required": ["type", "status"],
        "properties": {
            "type": _STR,
            "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            "reason": _STR,
            "message": _STR,
            "observedGeneration": _INT,
            "lastTransitionTime": {"type": "string", "format": "date-time"},
        },
    },
}
_OPEN: JsonObj = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def _obj(**props: JsonObj) -> JsonObj:
    return {"type": "object", "properties": props}


def _crd(group: str, kind: str, plural: str, spec: JsonObj, status: JsonObj) -> JsonObj:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower()},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1alpha1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": _obj(spec=spec, status=status)},
                }
            ],
        },
    }


def fallback_crds(cre_group: str = CRE_GROUP_DEFAULT) -> list[JsonObj]:
    trainjob_spec = {**_OPEN, "properties": {"suspend": {"type": "boolean"}, "managedBy": _STR}}
    job_status = _obj(
        conditions=_CONDITIONS,
        workloadRef=_obj(apiVersion=_STR, kind=_STR, name=_STR, namespace=_STR),
        workloadStartTime={"type": "string", "format": "date-time"},
        restartCount={"type": "integer", "format": "int32"},
        failedNodes={
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name", "reason"],
            "items": {"type": "object", "required": ["name", "reason"], "properties": {
                "name": _STR, "reason": _STR, "message": _STR}},
        },
    )
    job_spec = {
        **_OPEN,
        "properties": {
            "workload": {**_OPEN, "properties": {"trainJob": _OPEN}},
            "checkpoint": _obj(pvcName=_STR, maxRestarts={"type": "integer", "format": "int32"}),
        },
    }
    return [
        _crd("trainer.kubeflow.org", "TrainJob", "trainjobs", trainjob_spec,
             _obj(conditions=_CONDITIONS, jobsStatus={"type": "array", "items": _OPEN})),
        _crd("trainer.kubeflow.org", "TrainingRuntime", "trainingruntimes", _OPEN, _OPEN),
        _crd("trainer.kubeflow.org", "ClusterTrainingRuntime", "clustertrainingruntimes", _OPEN, _OPEN)
        | {"spec": {**_crd("trainer.kubeflow.org", "ClusterTrainingRuntime", "clustertrainingruntimes",
                           _OPEN, _OPEN)["spec"], "scope": "Cluster"}},
        _crd(cre_group, "Job", "jobs", job_spec, job_status),
        _crd(cre_group, "WorkloadRun", "workloadruns", _OPEN, _obj(conditions=_CONDITIONS)),
        _crd(cre_group, "GoodputMeasurement", "goodputmeasurements",
             {**_OPEN, "properties": {"jobRef": _obj(kind=_STR, name=_STR, apiGroup=_STR)}},
             _obj(conditions=_CONDITIONS, lastCheckpointStep=_INT)),
    ]


def with_group(crd: JsonObj, group: str) -> JsonObj:
    """A CRE CRD moved to another API group (for the legacy `cre.nvidia.com` releases)."""
    spec = {**crd["spec"], "group": group}
    return {**crd, "metadata": {"name": f"{spec['names']['plural']}.{group}"}, "spec": spec}
