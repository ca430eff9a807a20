"""The Kubernetes gateway: the only module that talks to the Kubernetes API.

Plain JSON objects in and out, addressed by `Resource` (group, version, plural), sent as REST calls over a
urllib3 pool to the API server `functions.runtime.kubeconfig` finds (in-cluster or a kubeconfig), so every kind
— CRDs included — is handled the same way, and no generated API or model class is ever loaded. API answers
become the typed errors of `functions.runtime.errors` here, once (`error_of`): 404 → `NotFound`, 409 →
`Conflict` (`AlreadyExists` when the server says so), 410 (a continue token or resourceVersion expired: the
same request made again lists afresh) → `TemporaryError`, 429 → `Throttled`, 5xx and unreachable →
`Unavailable`, an RBAC refusal (403 from the authorizer) → `Forbidden` (an `Unavailable`), other 4xx →
`PermanentError`. Response bodies are trimmed to one line; the cause is chained. Every call is counted
(`crefn_kube_requests_total`): its verb and resource read from the REST path (`kube_call_of`), its HTTP
status, or `error` when the API server could not be reached.
"""

from __future__ import annotations

import json
import os
import ssl
import time
import warnings
from collections.abc import Generator, Iterator, Mapping
from typing import Any
from urllib.parse import urlencode

import urllib3

from functions.runtime.errors import NotFound, PermanentError, Unavailable, error_of
from functions.runtime.kubeconfig import Endpoint, from_kubeconfig, in_cluster
from functions.runtime.metrics import count_kube_request
from functions.runtime.resources import Resource, kube_call_of

JsonObj = dict[str, Any]
MERGE_PATCH = "application/merge-patch+json"
LOG_PATH = "/api/v1/namespaces/{namespace}/pods/{pod}/log"
POOL_SIZE = 16
"""Connections kept per API server: a served worker's threads, each with a call in flight."""


class Transport:
    """HTTP to one API server: a urllib3 pool with the endpoint's TLS and, on each call, its authorization."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        options: dict[str, Any] = {"maxsize": POOL_SIZE, "block": False}
        if endpoint.tls is not None:
            options.update(ssl_context=endpoint.tls, server_hostname=endpoint.server_hostname)
            if endpoint.tls.verify_mode == ssl.CERT_NONE:  # the kubeconfig's own choice: not warned of per call
                warnings.filterwarnings("ignore", category=urllib3.exceptions.InsecureRequestWarning)
        self._pool = (urllib3.ProxyManager(endpoint.proxy, **options) if endpoint.proxy
                      else urllib3.PoolManager(**options))

    @property
    def host(self) -> str:
        return self.endpoint.server

    def send(self, method: str, path: str, query: list[tuple[str, Any]], headers: dict[str, str],
             body: bytes | None, timeout: float) -> Any:
        """The urllib3 response, its body left for the caller to read (and its connection to give back)."""
        if (authorization := self.endpoint.authorization()) is not None:
            headers = {**headers, "Authorization": authorization}
        url = self.endpoint.server + path + (f"?{urlencode(query)}" if query else "")
        return self._pool.request(method, url, body=body, headers=headers, timeout=urllib3.Timeout(total=timeout),
                                  preload_content=False, redirect=False)

    def close(self) -> None:
        self._pool.clear()


class Gateway:
    """Kubernetes API access: get, paged list, create, merge patch, delete, and a line stream."""

    def __init__(self, transport: Transport, timeout_seconds: float = 10.0) -> None:
        self.transport = transport
        self._timeout = timeout_seconds
        self._closed = False

    @classmethod
    def connect(cls, kubeconfig: str | None = None, timeout_seconds: float = 10.0) -> Gateway:
        """The kubeconfig named, else `KUBECONFIG`'s, else in-cluster when in a pod, else `~/.kube/config`."""
        endpoint = None if kubeconfig or os.environ.get("KUBECONFIG") else in_cluster()
        return cls(Transport(endpoint or from_kubeconfig(kubeconfig)), timeout_seconds)

    @property
    def host(self) -> str:
        return self.transport.host

    def close(self) -> None:
        """Close its connections; a call made after (e.g. by a thread still winding down) is refused as
        `Unavailable` rather than opening a connection that nothing would close."""
        self._closed = True
        self.transport.close()

    # -- verbs ---------------------------------------------------------------------------------

    def get(self, res: Resource, namespace: str | None, name: str, sub: str | None = None) -> JsonObj | None:
        """The object, or None when it does not exist. Without a name (or, for a namespaced kind, a
        namespace) there is nothing to read: a permanent error, never a LIST by accident."""
        if not name or (res.namespaced and not namespace):
            raise PermanentError(f"cannot read a {res.kind} without its {'name' if not name else 'namespace'}")
        try:
            return self.request("GET", res.path(namespace, name, sub))
        except NotFound:
            return None

    def list_all(
        self, res: Resource, namespace: str | None = None, label_selector: str = "", page_size: int = 500,
        field_selector: str = "", cached: bool = False,
    ) -> list[JsonObj]:
        """Every object, fetched in pages with limit/continue (with `cached`, see `pages`)."""
        return [item for page in self.pages(res, namespace, label_selector, page_size, field_selector, cached)
                for item in page["items"]]

    def pages(
        self, res: Resource, namespace: str | None = None, label_selector: str = "", page_size: int = 500,
        field_selector: str = "", cached: bool = False,
    ) -> Iterator[JsonObj]:
        """A LIST page by page (limit/continue); each page's items carry their apiVersion and kind. With
        `cached`, served from the API server's watch cache (`resourceVersion=0`: no etcd read, maybe a moment
        behind it), which answers in one page whatever the limit."""
        token = ""
        while True:
            query: list[tuple[str, Any]] = [("limit", page_size)]
            if label_selector:
                query.append(("labelSelector", label_selector))
            if field_selector:
                query.append(("fieldSelector", field_selector))
            if cached and not token:
                query.append(("resourceVersion", "0"))
            if token:
                query.append(("continue", token))
            page = self.request("GET", res.path(namespace), query=query)
            page["items"] = page.get("items") or []
            for item in page["items"]:
                item.setdefault("apiVersion", res.api_version)
                item.setdefault("kind", res.kind)
            yield page
            token = (page.get("metadata") or {}).get("continue") or ""
            if not token:
                return

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

    def stream(self, path: str, query: list[tuple[str, Any]], timeout_seconds: float) -> Generator[JsonObj, None, None]:
        """A GET whose answer is one JSON object per line (a watch), until the server ends it."""
        resp = self._call("GET", path, query=query, timeout=timeout_seconds)
        buffer, ended = b"", False
        try:
            for chunk in resp.stream(4096, decode_content=True):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield json.loads(line)
            ended = True
        except (urllib3.exceptions.HTTPError, OSError) as e:
            raise Unavailable(f"stream of {path} ended: {e}") from e
        except ValueError as e:  # a line that is not JSON
            raise Unavailable(f"stream of {path} sent what is not JSON") from e
        finally:
            finish(resp, ended)

    def read_log(self, namespace: str, pod: str, container: str, tail_lines: int, keep_bytes: int,
                 timeout_seconds: float) -> str:
        """The end of a container's log through the API server's `pods/log`: its last `tail_lines` lines,
        of which the last `keep_bytes` are kept, the read bounded to `timeout_seconds` in all ("" when
        the pod has no node yet). A read that breaks off keeps what arrived."""
        query = [("container", container), ("tailLines", tail_lines)]
        return self._log(namespace, pod, query, timeout_seconds, -keep_bytes)

    def read_log_since(self, namespace: str, pod: str, container: str, since: str, limit_bytes: int,
                       timeout_seconds: float) -> str:
        """A container's log from `since` (RFC 3339; "" for all of it), each line prefixed with the kubelet's
        time (`timestamps=true`), its first `limit_bytes` bytes (the head: asked of the kubelet and cut here
        too), the read bounded as `read_log`'s; `container` "" leaves the choice to the API server."""
        query: list[tuple[str, Any]] = [("timestamps", "true"), ("limitBytes", limit_bytes)]
        query += [("container", container)] if container else []
        query += [("sinceTime", since)] if since else []
        return self._log(namespace, pod, query, timeout_seconds, limit_bytes)

    def _log(self, namespace: str, pod: str, query: list[tuple[str, Any]], timeout_seconds: float,
             keep: int) -> str:
        """`pods/log` read: its first `keep` bytes (the read stops there), or with `keep` below 0 its last."""
        deadline = time.monotonic() + timeout_seconds
        resp = self._call("GET", LOG_PATH.format(namespace=namespace, pod=pod), query=query,
                          timeout=timeout_seconds, accept="application/json, */*")
        kept, ended = b"", False
        try:
            for chunk in resp.stream(16384, decode_content=True):
                kept = (kept + chunk)[keep:] if keep < 0 else (kept + chunk)[:keep]
                if time.monotonic() > deadline or len(kept) == keep:
                    break
            else:
                ended = True
        except (urllib3.exceptions.HTTPError, OSError):
            pass  # what arrived is kept
        finally:
            finish(resp, ended)
        return kept.decode(errors="replace")

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
        try:
            data = resp.read()
            answer = json.loads(data) if data else {}
        except (urllib3.exceptions.HTTPError, OSError) as e:  # the answer broke off (the API server went away)
            raise Unavailable(f"Kubernetes API answer to {method} {path} broke off: {type(e).__name__}") from e
        except ValueError as e:  # not JSON (e.g. a proxy's page with a 200)
            raise Unavailable(f"Kubernetes API answered {method} {path} with what is not JSON") from e
        finally:
            resp.release_conn()
        if not isinstance(answer, dict):  # `null` would read as "not found"
            raise Unavailable(f"Kubernetes API answered {method} {path} with what is not a JSON object")
        return answer

    def _call(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: list[tuple[str, Any]] | None = None,
        content_type: str = "application/json",
        timeout: float | None = None,
        accept: str = "application/json",
    ) -> Any:
        """One HTTP call, counted; answers of 400 and above become our error kinds here."""
        headers = {"Accept": accept, "Content-Type": content_type}
        verb, resource = kube_call_of(method, path, query or [])
        if self._closed:
            raise Unavailable(f"Kubernetes API not called ({method} {path}): this gateway is closed")
        try:
            resp = self.transport.send(method, path, query or [], headers,
                                       json.dumps(body).encode() if body is not None else None,
                                       timeout or self._timeout)
        except (urllib3.exceptions.HTTPError, OSError) as e:
            count_kube_request(verb, resource, "error")
            cause = getattr(e, "reason", None) or e  # past urllib3's retries: what the last attempt met
            raise Unavailable(f"Kubernetes API unreachable: {type(cause).__name__}") from e
        count_kube_request(verb, resource, str(resp.status))
        if resp.status >= 400:
            try:
                message = resp.read()
            except (urllib3.exceptions.HTTPError, OSError):
                message = b""  # the answer broke off: its status says enough
            finally:
                resp.release_conn()
            raise error_of(resp.status, str(resp.reason or ""), message, method, path)
        return resp


def finish(resp: Any, ended: bool) -> None:
    """Give a streamed answer's connection back to the pool when it was read to its end; otherwise close
    it now (a connection with unread data cannot serve another request, and one left to the garbage
    collector is closed at an unknown time)."""
    if ended:
        resp.release_conn()
    else:
        resp.close()
