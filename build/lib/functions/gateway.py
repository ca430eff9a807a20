"""The Kubernetes gateway: the only module that imports `kubernetes`.

Plain JSON objects in and out, addressed by `Resource` (group, version, plural). Calls go through the
SDK's `ApiClient` (authentication, TLS, kubeconfig or in-cluster config) to the REST paths directly,
so every kind — CRDs included — is handled the same way. `ApiException` and connection errors are
translated here, once: 404 → `NotFound`; 409/429 and 5xx/unreachable → `TemporaryError` (retried);
other 4xx → `PermanentError`. Response bodies are trimmed to one line; the cause is chained.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from functions.errors import NotFound, PermanentError, TemporaryError

JsonObj = dict[str, Any]
MERGE_PATCH = "application/merge-patch+json"


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None, sub: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
        if sub:
            base += f"/{sub}"
        return base


TRAINJOBS = Resource("trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob")
TRAINING_RUNTIMES = Resource("trainer.kubeflow.org", "v1alpha1", "trainingruntimes", "TrainingRuntime")
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
PVCS = Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim")
CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False)


def cre_jobs(group: str) -> Resource:
    return Resource(group, "v1alpha1", "jobs", "Job")


def cre_workloadruns(group: str) -> Resource:
    return Resource(group, "v1alpha1", "workloadruns", "WorkloadRun")


def cre_goodput(group: str) -> Resource:
    return Resource(group, "v1alpha1", "goodputmeasurements", "GoodputMeasurement")


class Gateway:
    """Kubernetes API access for the functions, the local stack and the tests."""

    def __init__(self, api_client: Any, timeout_seconds: float = 10.0) -> None:
        self._api = api_client
        self._timeout = timeout_seconds

    @classmethod
    def connect(cls, kubeconfig: str | None = None, timeout_seconds: float = 10.0) -> Gateway:
        """In-cluster config when present (and no kubeconfig is named), else the kubeconfig file."""
        if not kubeconfig:
            try:
                cfg = client.Configuration()
                config.load_incluster_config(client_configuration=cfg)
                return cls(client.ApiClient(cfg), timeout_seconds)
            except ConfigException:
                pass
        try:
            api = config.new_client_from_config(config_file=kubeconfig)
        except (ConfigException, OSError) as e:
            raise TemporaryError(f"no Kubernetes configuration: {e}") from e
        return cls(api, timeout_seconds)

    @property
    def host(self) -> str:
        return str(self._api.configuration.host)

    def close(self) -> None:
        self._api.close()

    # -- verbs ---------------------------------------------------------------------------------

    def get(self, res: Resource, namespace: str | None, name: str, sub: str | None = None) -> JsonObj | None:
        """The object, or None when it does not exist."""
        try:
            return self.request("GET", res.path(namespace, name, sub))
        except NotFound:
            return None

    def list_all(
        self, res: Resource, namespace: str | None = None, label_selector: str = "", page_size: int = 500
    ) -> list[JsonObj]:
        """Every object, fetched in pages with limit/continue."""
        return self.list_with_version(res, namespace, label_selector, page_size)[0]

    def list_with_version(
        self, res: Resource, namespace: str | None = None, label_selector: str = "", page_size: int = 500
    ) -> tuple[list[JsonObj], str]:
        """Every object and the list's resourceVersion (where a watch continues from)."""
        items: list[JsonObj] = []
        token = ""
        while True:
            query: list[tuple[str, Any]] = [("limit", page_size)]
            if label_selector:
                query.append(("labelSelector", label_selector))
            if token:
                query.append(("continue", token))
            page = self.request("GET", res.path(namespace), query=query)
            for item in page.get("items") or []:
                item.setdefault("apiVersion", res.api_version)
                item.setdefault("kind", res.kind)
                items.append(item)
            token = (page.get("metadata") or {}).get("continue") or ""
            if not token:
                return items, str((page.get("metadata") or {}).get("resourceVersion", ""))

    def create(self, res: Resource, namespace: str | None, body: Mapping[str, Any]) -> JsonObj:
        return self.request("POST", res.path(namespace), body=dict(body))

    def patch(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        patch: Mapping[str, Any],
        resource_version: str | None = None,
        status: bool = False,
    ) -> JsonObj:
        """JSON merge patch; with `resource_version`, a stale read answers 409 (optimistic lock)."""
        body = dict(patch)
        if resource_version:
            meta = dict(body.get("metadata") or {})
            meta["resourceVersion"] = resource_version
            body["metadata"] = meta
        sub = "status" if status else None
        return self.request("PATCH", res.path(namespace, name, sub), body=body, content_type=MERGE_PATCH)

    def delete(self, res: Resource, namespace: str | None, name: str, uid: str | None = None) -> bool:
        """Delete (background propagation, uid precondition when given); False when already gone."""
        body: JsonObj = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
        if uid:
            body["preconditions"] = {"uid": uid}
        try:
            self.request("DELETE", res.path(namespace, name), body=body)
        except NotFound:
            return False
        return True

    def watch(
        self, res: Resource, namespace: str | None = None, resource_version: str = "", timeout_seconds: int = 60,
        label_selector: str = "",
    ) -> Iterator[tuple[str, JsonObj]]:
        """Yield (ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, object) until the server ends the watch."""
        query: list[tuple[str, Any]] = [("watch", "true"), ("timeoutSeconds", timeout_seconds)]
        if resource_version:
            query.append(("resourceVersion", resource_version))
        if label_selector:
            query.append(("labelSelector", label_selector))
        resp = self._call("GET", res.path(namespace), query=query, timeout=timeout_seconds + 5).response
        buffer = b""
        try:
            for chunk in resp.stream(4096, decode_content=True):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        event = json.loads(line)
                        yield event["type"], event["object"]
        except (urllib3.exceptions.HTTPError, OSError) as e:
            raise TemporaryError(f"watch of {res.plural} ended: {e}") from e
        finally:
            resp.release_conn()

    # -- transport -----------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: list[tuple[str, Any]] | None = None,
        content_type: str = "application/json",
    ) -> JsonObj:
        resp = self._call(method, path, body=body, query=query, content_type=content_type)
        data = resp.read()
        return json.loads(data) if data else {}

    def _call(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: list[tuple[str, Any]] | None = None,
        content_type: str = "application/json",
        timeout: float | None = None,
    ) -> Any:
        """One HTTP call; answers of 400 and above become our error kinds here."""
        headers = {"Accept": "application/json", "Content-Type": content_type}
        try:
            request = self._api.param_serialize(
                method, path, query_params=query or [], header_params=headers, body=body,
                auth_settings=["BearerToken"],
            )
            resp = self._api.call_api(*request, _request_timeout=timeout or self._timeout)
        except ApiException as e:
            raise translate(int(e.status or 0), str(e.reason or ""), e.body, method, path) from e
        except (urllib3.exceptions.HTTPError, OSError) as e:
            raise TemporaryError(f"Kubernetes API unreachable: {type(e).__name__}", 503) from e
        if resp.status >= 400:
            raise translate(resp.status, str(resp.reason or ""), resp.read(), method, path)
        return resp


def translate(status: int, http_reason: str, body: Any, method: str, path: str) -> Exception:
    """One boundary from an API error answer to our error kinds, with a trimmed one-line message."""
    reason, message = "", ""
    try:
        payload = json.loads(body or "{}")
        reason, message = str(payload.get("reason", "")), str(payload.get("message", ""))
    except (ValueError, TypeError, AttributeError):
        message = body.decode(errors="replace") if isinstance(body, bytes) else str(body or "")
    message = " ".join(message.split())[:300]
    text = f"{method} {path}: {status} {reason or http_reason}: {message}".rstrip(": ")
    if status == 404:
        return NotFound(text)
    if status in (409, 429):
        return TemporaryError(text, status, reason)
    if status >= 500 or status == 0:
        return TemporaryError(text, 503, reason)
    return PermanentError(text)
