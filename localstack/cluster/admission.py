"""The CRDs' CEL rules (`x-kubernetes-validations`), enforced by a validating admission webhook on loopback.

kube-apiserver 1.20 ignores `x-kubernetes-validations`, so `LocalCluster` starts this webhook as its own
process (`python -m localstack.cluster.admission`, stopped by PID with the cluster) and registers it in a
`ValidatingWebhookConfiguration` (CREATE and UPDATE of every resource whose CRD has rules, `/status` too where
the status schema has rules; HTTPS with a CA made here by `openssl`; `failurePolicy: Fail`). The API server
then answers a refused object with the webhook's 422, which the gateway turns into `PermanentError`. Rules
are evaluated as kube-apiserver ≥ 1.30 does (apiextensions-apiserver `schema/cel`): where the schema declares
them, transition rules on UPDATE, ratcheting, and every violation of an object in one answer worded like
Kubernetes 1.35. The semantics in full, the answer's format and the known gaps:
docs/development.md#what-the-webhook-evaluates.
"""

from __future__ import annotations

import argparse
import base64
import json
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localstack.cluster.cel import CelError, Environment, Expression

if TYPE_CHECKING:
    from functions.runtime.gateway import Gateway

JsonObj = dict[str, Any]

WEBHOOK_NAME = "crd-rules.crefn.local"
PROBE_NAME = "probe.crd-rules.crefn.local"
PROBE_LABEL = "crefn.dev/admission-probe"
CONFIGURATION_NAME = "crefn-crd-rules"

INVALID, FORBIDDEN, REQUIRED, DUPLICATE = (
    "FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired", "FieldValueDuplicate")
_TYPE_TEXT = {INVALID: "Invalid value", FORBIDDEN: "Forbidden", REQUIRED: "Required value",
              DUPLICATE: "Duplicate value"}


# -- rules -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """One entry of `x-kubernetes-validations`."""

    rule: str
    message: str = ""
    message_expression: str = ""
    reason: str = ""
    field_path: str = ""
    optional_old_self: bool = False

    @classmethod
    def of(cls, entry: JsonObj) -> Rule:
        return cls(rule=str(entry.get("rule", "")), message=str(entry.get("message") or ""),
                   message_expression=str(entry.get("messageExpression") or ""),
                   reason=str(entry.get("reason") or ""), field_path=str(entry.get("fieldPath") or ""),
                   optional_old_self=bool(entry.get("optionalOldSelf")))

    @property
    def error_string(self) -> str:
        """What Kubernetes names the rule by in errors: its message, else its text."""
        return self.message.strip() or self.rule.strip()


_SELF = Environment(["self"])
_TRANSITION = Environment(["self", "oldSelf"])
_OPTIONAL_OLD = Environment(["self", "oldSelf"], optional=["oldSelf"])
_compiled: dict[tuple[str, bool], tuple[Expression | None, bool, str]] = {}
_compile_lock = threading.Lock()


def compile_rule(source: str, optional_old_self: bool = False) -> tuple[Expression | None, bool, str]:
    """(expression, uses oldSelf, compile error); cached by source. A rule uses `oldSelf` when it
    does not compile without it and does with it (the type checker decides, not a text search)."""
    key = (source, optional_old_self)
    with _compile_lock:
        if key in _compiled:
            return _compiled[key]
        try:
            result: tuple[Expression | None, bool, str] = (_SELF.compile(source), False, "")
        except CelError:
            try:
                env = _OPTIONAL_OLD if optional_old_self else _TRANSITION
                result = (env.compile(source), True, "")
            except CelError as e:
                result = (None, False, str(e))
        _compiled[key] = result
        return result


@dataclass
class CompiledRule:
    rule: Rule
    expression: Expression | None
    uses_old_self: bool
    compile_error: str
    message_expression: Expression | None
    field_path: str  # normalized, "" for none


@dataclass
class Node:
    """The part of a schema on the way to rules: its rules and the children that have some."""

    schema: JsonObj
    rules: list[CompiledRule] = field(default_factory=list)
    properties: dict[str, Node] = field(default_factory=dict)
    items: Node | None = None
    additional: Node | None = None
    resource_root: bool = False

    @property
    def type(self) -> str:
        return str(self.schema.get("type") or "")

    @property
    def map_keys(self) -> tuple[str, ...]:
        if self.schema.get("x-kubernetes-list-type") != "map":
            return ()
        return tuple(self.schema.get("x-kubernetes-list-map-keys") or ())

    def count(self) -> int:
        children = [*self.properties.values(), *(n for n in (self.items, self.additional) if n)]
        return len(self.rules) + sum(c.count() for c in children)


def rules_of(schema: Any) -> list[JsonObj]:
    return [r for r in (schema.get("x-kubernetes-validations") or []) if isinstance(r, dict)] \
        if isinstance(schema, dict) else []


def has_rules(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    if rules_of(schema):
        return True
    children = [*(schema.get("properties") or {}).values(), schema.get("items"), schema.get("additionalProperties")]
    return any(has_rules(c) for c in children)


def build(schema: Any, resource_root: bool = False) -> Node | None:
    """The rule tree of a schema (None when it has no rules), every rule compiled."""
    if not has_rules(schema):
        return None
    node = Node(schema=schema, resource_root=resource_root or bool(schema.get("x-kubernetes-embedded-resource")))
    for entry in rules_of(schema):
        rule = Rule.of(entry)
        expression, uses_old, error = compile_rule(rule.rule, rule.optional_old_self)
        message_expression = None
        if rule.message_expression:
            message_expression, _, _ = compile_rule(rule.message_expression, rule.optional_old_self)
        node.rules.append(CompiledRule(rule, expression, uses_old, error, message_expression,
                                       normalize_field_path(rule.field_path, schema)))
    for name, sub in (schema.get("properties") or {}).items():
        child = build(sub)
        if child:
            node.properties[name] = child
    node.items = build(schema.get("items"))
    node.additional = build(schema.get("additionalProperties"))
    return node


def normalize_field_path(path: str, schema: JsonObj) -> str:
    """A rule's `fieldPath` (`.a.b`, `.a['k']`) as Kubernetes prints it under the rule's place
    (`a.b`, `a[k]` for a map key); "" when empty or not a path of the schema."""
    out: list[str] = []
    rest, current = path.strip(), schema
    while rest:
        if rest.startswith("."):
            end = min([i for i in (rest.find(".", 1), rest.find("[", 1)) if i > 0] or [len(rest)])
            name, rest = rest[1:end], rest[end:]
        elif rest.startswith("['") and "']" in rest:
            end = rest.index("']")
            name, rest = rest[2:end].replace("\\'", "'"), rest[end + 2:]
        else:
            return ""
        if name in (current.get("properties") or {}):
            out.append(("." if out else "") + name)
            current = current["properties"][name]
        elif isinstance(current.get("additionalProperties"), dict):
            out.append(f"[{name}]")
            current = current["additionalProperties"]
        else:
            return ""
    return "".join(out)


# -- values ----------------------------------------------------------------------------------------


def typed(value: Any, schema: Any) -> Any:
    """The value as CEL sees it through its schema: integers in `type: number` fields are doubles."""
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        return {k: typed(v, props.get(k, extra)) for k, v in value.items()}
    if isinstance(value, list):
        return [typed(v, schema.get("items")) for v in value]
    if schema.get("type") == "number" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def narrowed_meta(value: Any) -> Any:
    """At a resource root, CEL sees only `metadata.name` and `metadata.generateName`."""
    if not isinstance(value, dict) or not isinstance(value.get("metadata"), dict):
        return value
    meta = {k: v for k, v in value["metadata"].items() if k in ("name", "generateName")}
    return {**value, "metadata": meta}


# -- errors ----------------------------------------------------------------------------------------

OMIT = object()


def go_value(value: Any) -> str:
    """A value as Go's %v/%q prints it in a field error."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    if value is None:
        return "null"
    return str(value)


@dataclass(frozen=True)
class FieldError:
    """k8s.io/apimachinery field.Error."""

    type: str
    field: str
    value: Any
    detail: str

    def body(self) -> str:
        text = _TYPE_TEXT.get(self.type, self.type)
        if self.type in (INVALID, DUPLICATE) and self.value is not OMIT:
            text += f": {go_value(self.value)}"
        if self.detail and self.type != DUPLICATE:
            text += f": {self.detail}"
        return text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"


def path_string(path: tuple[str, ...]) -> str:
    """field.Path.String(): `<nil>` for the root, `a.b[0][key]` below it."""
    if not path:
        return "<nil>"
    return "".join(p if p.startswith("[") or i == 0 else "." + p for i, p in enumerate(path))


def aggregate(errors: Iterable[object]) -> str:
    """utilerrors.Aggregate.Error(): one message, or `[a, b]` with duplicates dropped."""
    seen: list[str] = []
    for e in errors:
        if str(e) not in seen:
            seen.append(str(e))
    return seen[0] if len(seen) == 1 else "[" + ", ".join(seen) + "]"


# -- validation ------------------------------------------------------------------------------------


@dataclass
class Findings:
    errors: list[FieldError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def validate(root: Node, new: JsonObj, old: JsonObj | None = None) -> Findings:
    """Every rule of `root` against `new` (and `old`, on UPDATE)."""
    outcome = Findings()
    schema = root.schema
    _walk(root, (), typed(new, schema), typed(old, schema) if old is not None else None,
          correlated=old is not None, parent_unchanged=False, outcome=outcome)
    return outcome


def _walk(node: Node, path: tuple[str, ...], new: Any, old: Any, correlated: bool, parent_unchanged: bool,
          outcome: Findings) -> None:
    if new is None:
        return
    unchanged = (old is not None and new == old) if correlated else parent_unchanged
    if node.rules:
        _evaluate(node, path, new, old, unchanged, outcome)
    if isinstance(new, dict):
        old_map = old if isinstance(old, dict) else {}
        for key, value in new.items():
            child = node.properties.get(key)
            if child is not None:
                _walk(child, (*path, key), value, old_map.get(key), correlated, unchanged, outcome)
            elif node.additional is not None and key not in (node.schema.get("properties") or {}):
                _walk(node.additional, (*path, f"[{key}]"), value, old_map.get(key), correlated, unchanged, outcome)
    elif isinstance(new, list) and node.items is not None:
        keys = node.map_keys
        old_items: dict[tuple[Any, ...], Any] = {}
        if keys and isinstance(old, list):
            old_items = {_item_key(item, keys): item for item in old if isinstance(item, dict)}
        for i, item in enumerate(new):
            if keys:
                old_item = old_items.get(_item_key(item, keys)) if isinstance(item, dict) else None
                _walk(node.items, (*path, f"[{i}]"), item, old_item, correlated, unchanged, outcome)
            else:
                _walk(node.items, (*path, f"[{i}]"), item, None, False, unchanged, outcome)


def _item_key(item: JsonObj, keys: tuple[str, ...]) -> tuple[Any, ...]:
    return tuple(json.dumps(item.get(k), sort_keys=True) for k in keys)


def _evaluate(node: Node, path: tuple[str, ...], new: Any, old: Any, unchanged: bool, outcome: Findings) -> None:
    where = path_string(path)
    self_value = narrowed_meta(new) if node.resource_root else new
    old_value = narrowed_meta(old) if node.resource_root and old is not None else old
    for compiled in node.rules:
        rule = compiled.rule
        if compiled.expression is None:
            detail = f"rule compile error: {compiled.compile_error}"
            outcome.errors.append(FieldError(INVALID, where, node.type, detail))
            continue
        if compiled.uses_old_self and old is None and not rule.optional_old_self:
            continue  # a transition rule needs an old value
        values = {"self": self_value}
        if compiled.uses_old_self and old is not None:
            values["oldSelf"] = old_value
        try:
            if compiled.expression.check(values):
                continue
        except CelError as e:
            outcome.errors.append(FieldError(INVALID, where, node.type, f"{e} evaluating rule: {rule.error_string}"))
            continue
        detail = _message(compiled, values)
        at = where if not compiled.field_path else path_string((*path, compiled.field_path))
        value = OMIT if node.type in ("object", "array") else new
        reason = rule.reason if rule.reason in _TYPE_TEXT else INVALID
        error = FieldError(reason, at, value, detail)
        if not compiled.uses_old_self and unchanged:
            outcome.warnings.append(str(error))  # ratcheting: the value did not change
        else:
            outcome.errors.append(error)


def _message(compiled: CompiledRule, values: dict[str, Any]) -> str:
    if compiled.message_expression is not None:
        try:
            text = compiled.message_expression.evaluate(values)
            if isinstance(text, str) and text.strip() and "\n" not in text.strip():
                return text.strip()
        except CelError:
            pass
    rule = compiled.rule
    return rule.message.strip() if rule.message.strip() else f"failed rule: {rule.rule.strip()}"


# -- the resources served --------------------------------------------------------------------------


@dataclass
class Target:
    """One served version of a CRD that has rules."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    schema: JsonObj
    status_rules: bool
    _root: Node | None = None

    @property
    def root(self) -> Node:
        if self._root is None:
            self._root = build(self.schema, resource_root=True) or Node(schema=self.schema)
        return self._root

    @property
    def crd(self) -> str:
        return f"{self.plural}.{self.group}"

    def to_json(self) -> JsonObj:
        return {"group": self.group, "version": self.version, "plural": self.plural, "kind": self.kind,
                "namespaced": self.namespaced, "schema": self.schema, "status_rules": self.status_rules}

    @classmethod
    def from_json(cls, data: JsonObj) -> Target:
        return cls(data["group"], data["version"], data["plural"], data["kind"], data["namespaced"], data["schema"],
                   data["status_rules"])


def targets_of(crds: Iterable[JsonObj]) -> list[Target]:
    """Every served version with rules, of these CRDs."""
    out = []
    for crd in crds:
        spec = crd.get("spec") or {}
        for version in spec.get("versions") or []:
            schema = ((version.get("schema") or {}).get("openAPIV3Schema")) or {}
            if not version.get("served", True) or not has_rules(schema):
                continue
            status = (schema.get("properties") or {}).get("status")
            out.append(Target(spec["group"], version["name"], spec["names"]["plural"], spec["names"]["kind"],
                              spec.get("scope") == "Namespaced", schema,
                              "status" in (version.get("subresources") or {}) and has_rules(status)))
    return out


def count_rules(schema: Any) -> int:
    if not isinstance(schema, dict):
        return 0
    children = [*(schema.get("properties") or {}).values(), schema.get("items"), schema.get("additionalProperties")]
    return len(rules_of(schema)) + sum(count_rules(c) for c in children)


# -- admission -------------------------------------------------------------------------------------


class Reviewer:
    """AdmissionReview in, AdmissionReview out."""

    def __init__(self, targets: Iterable[Target]) -> None:
        self.targets = {(t.group, t.version, t.plural): t for t in targets}
        self._lock = threading.Lock()

    def compile_all(self) -> int:
        return sum(t.root.count() for t in self.targets.values())

    def review(self, review: JsonObj) -> JsonObj:
        request = review.get("request") or {}
        response: JsonObj = {"uid": request.get("uid", ""), "allowed": True}
        resource = request.get("resource") or {}
        target = self.targets.get((resource.get("group", ""), resource.get("version", ""),
                                   resource.get("resource", "")))
        operation = request.get("operation")
        new = request.get("object")
        if target is not None and operation in ("CREATE", "UPDATE") and isinstance(new, dict):
            old = request.get("oldObject") if operation == "UPDATE" else None
            with self._lock:
                outcome = validate(target.root, new, old if isinstance(old, dict) else None)
            if outcome.warnings:
                response["warnings"] = [w[:256] for w in outcome.warnings]
            if outcome.errors:
                name = request.get("name") or (new.get("metadata") or {}).get("name") or ""
                response["allowed"] = False
                response["status"] = invalid_status(target.group, target.kind, name, outcome.errors)
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


def invalid_status(group: str, kind: str, name: str, errors: list[FieldError]) -> JsonObj:
    """apierrors.NewInvalid: 422 Invalid, one cause per error."""
    qualified = f"{kind}.{group}" if group else kind
    return {
        "status": "Failure", "code": 422, "reason": "Invalid",
        "message": f"{qualified} {json.dumps(name)} is invalid: {aggregate(errors)}",
        "details": {"name": name, "group": group, "kind": kind,
                    "causes": [{"reason": e.type, "message": e.body(), "field": e.field} for e in errors]},
    }


def probe_answer(review: JsonObj) -> JsonObj:
    request = review.get("request") or {}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {
        "uid": request.get("uid", ""), "allowed": False,
        "status": {"status": "Failure", "code": 403, "reason": "Forbidden", "message": "crd-rules probe"}}}


def make_server(reviewer: Reviewer, port: int, cert: Path, key: Path, log: Any = sys.stdout) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self._answer(200, b"ok", "text/plain")

        def do_POST(self) -> None:
            try:
                review = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                answer = probe_answer(review) if self.path.startswith("/probe") else reviewer.review(review)
            except Exception as e:  # a bad request is answered, never left hanging
                self._answer(400, f"bad AdmissionReview: {e}".encode(), "text/plain")
                return
            verdict = answer["response"]
            if not verdict["allowed"] and not self.path.startswith("/probe"):
                request = review.get("request") or {}
                res = request.get("resource") or {}
                print(f"[admission] denied {request.get('operation')} {res.get('resource')}"
                      f"{'/' + request['subResource'] if request.get('subResource') else ''} "
                      f"{request.get('namespace', '')}/{request.get('name', '')}: {verdict['status']['message']}",
                      file=log, flush=True)
            self._answer(200, json.dumps(answer).encode(), "application/json")

        def _answer(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(cert), str(key))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    return server


def main(argv: list[str] | None = None) -> None:
    """`python -m localstack.cluster.admission --port P --cert C --key K --targets F`: serve until terminated."""
    import signal

    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cert", type=Path, required=True)
    parser.add_argument("--key", type=Path, required=True)
    parser.add_argument("--targets", type=Path, required=True)
    args = parser.parse_args(argv)
    started = time.monotonic()
    reviewer = Reviewer(Target.from_json(t) for t in json.loads(args.targets.read_text()))
    rules = reviewer.compile_all()
    server = make_server(reviewer, args.port, args.cert, args.key)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown, daemon=True).start())
    print(f"[admission] {rules} rules of {len(reviewer.targets)} resources compiled in "
          f"{time.monotonic() - started:.2f}s; serving on https://127.0.0.1:{args.port}", flush=True)
    server.serve_forever(poll_interval=0.2)
    server.server_close()


# -- the harness side ------------------------------------------------------------------------------


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


class Webhook:
    """Certificates, the targets file, the server's command line and its registration, for `LocalCluster`."""

    def __init__(self, directory: Path, crds: Iterable[JsonObj]) -> None:
        self.directory = Path(directory)
        self.targets = targets_of(crds)
        self.port = 0

    @property
    def rules(self) -> dict[str, int]:
        """Rules enforced, by CRD name."""
        out: dict[str, int] = {}
        for t in self.targets:
            out[t.crd] = out.get(t.crd, 0) + count_rules(t.schema)
        return out

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def ca_file(self) -> Path:
        return self.directory / "ca.crt"

    def prepare(self, port: int) -> list[str]:
        """Write the CA, the serving certificate for 127.0.0.1 and the targets; the server's argv."""
        self.port = port
        d = self.directory
        d.mkdir(parents=True, exist_ok=True)
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        _openssl("req", "-x509", *ec, "-keyout", str(d / "ca.key"), "-out", str(d / "ca.crt"), "-days", "30",
                 "-subj", "/CN=crefn local admission CA", "-addext", "basicConstraints=critical,CA:TRUE",
                 "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        _openssl("req", *ec, "-keyout", str(d / "tls.key"), "-out", str(d / "tls.csr"), "-subj", "/CN=127.0.0.1")
        (d / "tls.ext").write_text("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"
                                   "keyUsage=critical,digitalSignature,keyEncipherment\n")
        _openssl("x509", "-req", "-in", str(d / "tls.csr"), "-CA", str(d / "ca.crt"), "-CAkey", str(d / "ca.key"),
                 "-CAcreateserial", "-out", str(d / "tls.crt"), "-days", "30", "-extfile", str(d / "tls.ext"))
        (d / "targets.json").write_text(json.dumps([t.to_json() for t in self.targets]))
        return [sys.executable, "-m", "localstack.cluster.admission", "--port", str(port), "--cert", str(d / "tls.crt"),
                "--key", str(d / "tls.key"), "--targets", str(d / "targets.json")]

    def wait_serving(self, alive: Callable[[], bool], timeout: float = 30) -> None:
        """Until the server completes a TLS handshake with our CA."""
        context = ssl.create_default_context(cafile=str(self.ca_file))
        deadline = time.monotonic() + timeout
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=2) as raw, \
                        context.wrap_socket(raw, server_hostname="127.0.0.1"):
                    return
            except OSError:
                if not alive() or time.monotonic() > deadline:
                    raise RuntimeError(f"the admission webhook is not serving on {self.url}") from None
                time.sleep(0.05)

    def configuration(self) -> JsonObj:
        bundle = base64.b64encode(self.ca_file.read_bytes()).decode()
        rules = []
        for t in self.targets:
            resources = [t.plural, *([f"{t.plural}/status"] if t.status_rules else [])]
            rules.append({"apiGroups": [t.group], "apiVersions": [t.version], "resources": resources,
                          "operations": ["CREATE", "UPDATE"], "scope": "Namespaced" if t.namespaced else "Cluster"})
        common = {"sideEffects": "None", "admissionReviewVersions": ["v1"], "failurePolicy": "Fail",
                  "timeoutSeconds": 10}
        return {
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": CONFIGURATION_NAME},
            "webhooks": [
                {"name": WEBHOOK_NAME, "clientConfig": {"url": f"{self.url}/validate", "caBundle": bundle},
                 "rules": rules, "matchPolicy": "Equivalent", **common},
                {"name": PROBE_NAME, "clientConfig": {"url": f"{self.url}/probe", "caBundle": bundle},
                 "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"],
                            "operations": ["CREATE"], "scope": "Namespaced"}],
                 "objectSelector": {"matchLabels": {PROBE_LABEL: "true"}}, **common},
            ],
        }

    def register(self, gw: Gateway, timeout: float = 30) -> None:
        """Create the configuration; return once the API server calls the webhook (a dry-run ConfigMap
        carrying the probe label is refused by the probe hook of the same configuration)."""
        from functions.runtime.errors import NotFound, PermanentError
        from functions.runtime.resources import Resource

        configs = Resource("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
                           "ValidatingWebhookConfiguration", namespaced=False)
        gw.create(configs, None, self.configuration())
        probe = {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "crefn-admission-probe", "labels": {PROBE_LABEL: "true"}}}
        deadline = time.monotonic() + timeout
        while True:
            try:
                gw.request("POST", "/api/v1/namespaces/default/configmaps", body=probe, query=[("dryRun", "All")])
            except PermanentError as e:
                if "crd-rules probe" in str(e):
                    return
                raise
            except NotFound:
                pass  # the `default` namespace is not there yet
            if time.monotonic() > deadline:
                raise RuntimeError(f"the API server did not call the admission webhook within {timeout}s")
            time.sleep(0.05)


if __name__ == "__main__":
    main()
