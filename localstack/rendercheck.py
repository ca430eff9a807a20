"""`python -m localstack check FILE`: a WorkloadRun checked against the real CRD, offline, as a current API
server would check it: the schema (types, required fields, enums, bounds, patterns; JSON Schema over
the CRD's OpenAPI v3 schema) and every CEL rule (`x-kubernetes-validations`, the same evaluation the
local API server's admission webhook uses, `localstack.cluster.admission`). Every problem is printed with its
field path. The CRDs are the upstream ones the local stack loads (`$CREFN_UPSTREAM_CRDS`, else
`../shared/upstream` beside the checkout). Part of the dev stack: its CEL library is a test extra.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft7Validator

from events.types import CRE_GROUP_DEFAULT, WORKLOADRUN_KIND
from functions.domain.runspec import InvalidSpec
from functions.domain.translation import translate
from localstack.cluster.admission import build, validate
from localstack.cluster.apiserver import default_crd_dir
from localstack.cluster.crds import load_upstream


def openapi_to_jsonschema(schema: Any) -> Any:
    """The CRD's structural schema as JSON Schema: `nullable` becomes a null type; Kubernetes'
    extensions and `format` are left to the API server's own checks."""
    if isinstance(schema, list):
        return [openapi_to_jsonschema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: openapi_to_jsonschema(v) for k, v in schema.items()
           if not k.startswith("x-kubernetes-") and k not in ("format", "description", "nullable", "default")}
    if schema.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if schema.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    return out


def workloadrun_schema(group: str = CRE_GROUP_DEFAULT) -> dict[str, Any]:
    return crd_schema(group, WORKLOADRUN_KIND)


def crd_schema(group: str, kind: str) -> dict[str, Any]:
    """The OpenAPI v3 schema of the storage version of the upstream CRD of `kind` in `group`."""
    for crd in load_upstream(default_crd_dir()):
        spec = crd["spec"]
        if spec["group"] == group and spec["names"]["kind"] == kind:
            version = next(v for v in spec["versions"] if v.get("storage"))
            schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
            return schema
    raise LookupError(f"no {kind} CRD of group {group} in {default_crd_dir()}")


def problems(run: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """Every problem of a WorkloadRun, each with its field path."""
    found = []
    for error in sorted(Draft7Validator(openapi_to_jsonschema(schema)).iter_errors(run), key=lambda e: list(e.path)):
        where = ".".join(str(p) for p in error.absolute_path) or "<root>"
        found.append(f"{where}: {error.message}")
    root = build(schema, resource_root=True)
    if root is not None:
        found += [str(e) for e in validate(root, run).errors]
    return found


def main(file: str, group: str = CRE_GROUP_DEFAULT) -> int:
    """Every problem of every WorkloadRun of `file` on stderr, with its field path, and a count; 0 when there
    is none, 1 otherwise (and for a file that cannot be read or holds another kind)."""
    name = "python -m localstack check"
    try:
        docs = [d for d in yaml.safe_load_all(Path(file).read_text()) if d]
    except (OSError, yaml.YAMLError) as e:
        print(f"{name}: {file}: {e}", file=sys.stderr)
        return 1
    schema, checked = workloadrun_schema(group), 0
    for doc in docs:
        if doc.get("kind") != WORKLOADRUN_KIND:
            print(f"{name}: {file}: expected WorkloadRun, got {doc.get('kind')}", file=sys.stderr)
            return 1
        found = problems(doc, schema)
        try:
            translate(doc, group)
        except InvalidSpec as e:
            found.append(f"refused by the translator: {e}")
        for problem in found:
            print(f"{doc['metadata'].get('name', '?')}: {problem}", file=sys.stderr)
        checked += len(found)
    print(f"{name}: {len(docs)} WorkloadRuns, {checked} problems", file=sys.stderr)
    return 1 if checked else 0
