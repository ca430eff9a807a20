"""The install's Knative Services as `cre-fn doctor` reads them: each found or not, and the `CREFN_*` variables
its container starts with, resolved as Kubernetes resolves them (ConfigMaps only: Secrets are not read)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from functions.runtime.gateway import Gateway
from functions.runtime.resources import (
    CONFIGMAPS,
    KSERVICES,
)


@dataclass(frozen=True)
class Service:
    name: str
    found: dict[str, Any] | None
    env: Mapping[str, str]

    @property
    def mode(self) -> str:
        return self.env.get("CREFN_MODE", "manage")


def service(gw: Gateway, namespace: str, name: str) -> Service:
    found = gw.get(KSERVICES, namespace, name)
    return Service(name, found, environment(gw, namespace, found) if found else {})


def environment(gw: Gateway, namespace: str, found: Mapping[str, Any]) -> dict[str, str]:
    """The `CREFN_*` variables a Service's container starts with, as Kubernetes resolves them: `envFrom`
    ConfigMaps in order, then `env` (values, and ConfigMap keys), which wins. Secrets are not read."""
    containers = (((found.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or [{}]
    container: dict[str, Any] = containers[0]
    env: dict[str, str] = {}
    maps: dict[str, dict[str, str]] = {}

    def data(name: str) -> dict[str, str]:
        if name not in maps:
            maps[name] = dict((gw.get(CONFIGMAPS, namespace, name) or {}).get("data") or {})
        return maps[name]

    for source in container.get("envFrom") or ():
        if ref := (source.get("configMapRef") or {}).get("name"):
            env |= {source.get("prefix", "") + k: v for k, v in data(ref).items()}
    for var in container.get("env") or ():
        ref = ((var.get("valueFrom") or {}).get("configMapKeyRef") or {})
        if "value" in var:
            env[var["name"]] = str(var["value"])
        elif ref.get("name") and ref.get("key") in data(ref["name"]):
            env[var["name"]] = data(ref["name"])[ref["key"]]
    return {k: v for k, v in env.items() if k.startswith("CREFN_")}
