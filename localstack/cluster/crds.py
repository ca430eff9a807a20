"""CRDs for the local API server: the upstream ones, made loadable by kube-apiserver 1.20.

Upstream copies live outside the repository (`$CREFN_UPSTREAM_CRDS`, else `../shared/upstream`: see
`localstack.cluster.apiserver`). 1.20 rejects `default: ""` on string properties, so one compatibility step
is applied: in an array with `x-kubernetes-list-map-keys`, a key whose default is `""` becomes `required` in
the item schema; every other `default: ""` is dropped. 1.20 ignores `x-kubernetes-validations` (CEL), which
`localstack.cluster.admission` enforces instead. A clone without upstream CRDs falls back to the project's
own (`fallback-crds/`): each field the code reads or writes declared with its upstream schema, descriptions
left out; `tests/localstack/test_crds.py` holds them to the upstream schemas and to the models.
Which kinds they cover and where they differ: docs/development.md#the-local-api-server.
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

FALLBACK_DIR = Path(__file__).resolve().parent / "fallback-crds"


def fallback_crds(cre_group: str = CRE_GROUP_DEFAULT) -> list[JsonObj]:
    """The project's own CRDs (`fallback-crds/`), the CRE ones in `cre_group`."""
    crds = load_upstream(FALLBACK_DIR)
    return [with_group(c, cre_group) if c["spec"]["group"] == CRE_GROUP_DEFAULT else c for c in crds]


def with_group(crd: JsonObj, group: str) -> JsonObj:
    """A CRE CRD moved to another API group (for the legacy `cre.nvidia.com` releases)."""
    spec = {**crd["spec"], "group": group}
    return {**crd, "metadata": {"name": f"{spec['names']['plural']}.{group}"}, "spec": spec}
