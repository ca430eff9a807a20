"""The local stack's stand-in for Knative Serving's revisions: the functions' settings are a ConfigMap of the
stack's API server, and a new one is a new revision of every function.

In a cluster every Service names the install's generated `crefn-settings-<hash>`: a changed setting is a new
ConfigMap and a new name in every Service's template, so new revisions, whose pods start with it. The stack runs
no Knative Service, so the ConfigMap stands for the template: the stack creates one in `crefn-system` (the
install's settings with the stack's merged in, named by a hash of its data) and serves every function from it
(`apply_settings`); `Revisions` takes each `crefn-settings-*` ConfigMap created there afterwards, and each change
of the one served from, for the settings to serve, and the stack's supervisor starts every function again with
them. What differs from a cluster: docs/development.md#settings-and-revisions.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from collections.abc import Mapping
from typing import Any

from functions.runtime.errors import AlreadyExists, CrefnError
from functions.runtime.gateway import Gateway
from functions.runtime.resources import CONFIGMAPS, NAMESPACES
from localstack.eventing.apisource import list_with_version, watch

SETTINGS = "crefn-settings"
"""The settings ConfigMap's name before kustomize's hash (knative/base/kustomization.yaml)."""


def is_settings(name: str) -> bool:
    return name.startswith(f"{SETTINGS}-")


def settings_of(docs: list[dict[str, Any]]) -> dict[str, str]:
    """A rendered install's settings: the data of the ConfigMap its Services' containers take their environment
    from (envFrom)."""
    named = {source["configMapRef"]["name"] for d in docs if d["kind"] == "Service" for c in
             ((d.get("spec") or {}).get("template") or {}).get("spec", {}).get("containers", [])
             for source in c.get("envFrom", []) if "configMapRef" in source}
    return {k: str(v) for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] in named
            for k, v in (d.get("data") or {}).items()}


def settings_name(data: Mapping[str, str]) -> str:
    """`crefn-settings-` and a hash of `data`: a name that changes with the data, as kustomize's does."""
    digest = hashlib.sha256(json.dumps(dict(data), sort_keys=True).encode()).hexdigest()
    return f"{SETTINGS}-{digest[:10]}"


def apply_settings(gw: Gateway, namespace: str, data: Mapping[str, str]) -> str:
    """Make the ConfigMap `settings_name(data)` in `namespace` hold `data` (created, or its data replaced, the
    namespace created when missing): its name."""
    name = settings_name(data)
    with contextlib.suppress(AlreadyExists):
        gw.create(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": name, "labels": {"app.kubernetes.io/part-of": "cre-functions"}}, "data": dict(data)}
    try:
        gw.create(CONFIGMAPS, namespace, body)
    except AlreadyExists:
        held = (gw.get(CONFIGMAPS, namespace, name) or {}).get("data") or {}
        if held != dict(data):
            gw.patch(CONFIGMAPS, namespace, name, {"data": {**dict.fromkeys(held), **data}})
    return name


class Revisions:
    """Watches the ConfigMaps of `namespace`, serving from `served` (with `data`): a settings ConfigMap created
    there, or a change of the data of the one served from, becomes the one to serve, which `take()` hands over
    once (the newest, when several came in between). After a watch that ends in an error, a list: a settings
    ConfigMap created meanwhile (the newest, by resourceVersion) or a change of the one served from counts then."""

    def __init__(self, gw: Gateway, namespace: str, served: str, data: Mapping[str, str]) -> None:
        self.gw, self.namespace = gw, namespace
        self.served, self.data = served, dict(data)
        self.version = ""
        self._known: set[str] = set()
        self._pending: tuple[str, dict[str, str]] | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="revisions")

    def start(self) -> Revisions:
        """List what is there now (nothing of it is a change), then watch from there."""
        items, self.version = list_with_version(self.gw, CONFIGMAPS, self.namespace)
        self._known = {i["metadata"]["name"] for i in items if is_settings(i["metadata"]["name"])}
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)

    def take(self) -> tuple[str, dict[str, str]] | None:
        """The settings to serve from now on (their ConfigMap's name and data), once; None when nothing changed."""
        with self._lock:
            pending, self._pending = self._pending, None
        return pending

    def _run(self) -> None:
        relist = False
        while not self._stop.is_set():
            try:
                if relist:
                    self._relist()
                    relist = False
                for kind, obj in watch(self.gw, CONFIGMAPS, self.namespace, self.version, 5):
                    if kind == "ERROR":  # e.g. 410 Gone: the version is too old to watch from
                        relist = True
                        break
                    self.version = obj["metadata"].get("resourceVersion", self.version)
                    if kind in ("ADDED", "MODIFIED"):
                        self._seen(obj)
                    if self._stop.is_set():
                        return
            except (CrefnError, OSError):
                relist = True
                self._stop.wait(1.0)  # the API server is away: list again shortly

    def _relist(self) -> None:
        items, version = list_with_version(self.gw, CONFIGMAPS, self.namespace)
        settings = [i for i in items if is_settings(i["metadata"]["name"])]
        created = [i for i in settings if i["metadata"]["name"] not in self._known]
        newest = max(created, key=lambda i: int(i["metadata"]["resourceVersion"]), default=None)
        for item in [newest] if newest else [i for i in settings if i["metadata"]["name"] == self.served]:
            self._seen(item)
        self._known |= {i["metadata"]["name"] for i in settings}
        self.version = version

    def _seen(self, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        if not is_settings(name):
            return
        data = {k: str(v) for k, v in (obj.get("data") or {}).items()}
        created = name not in self._known
        self._known.add(name)
        if (created or name == self.served) and (name, data) != (self.served, self.data):
            with self._lock:
                self.served, self.data = name, data
                self._pending = (name, data)
