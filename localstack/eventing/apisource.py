"""A stand-in for Knative's ApiServerSource (Resource mode) on top of the local API server.

`apiserver_record()` renders an object change exactly as ApiServerSource does (SPEC §4.1): type
`dev.knative.apiserver.resource.<verb>`, `source` the API server URL, `subject` the object's API path,
extensions `kind`, `apiversion`, `name`, `namespace`, a fresh id each, the whole object as data.
`WatchSource` is the stand-in the local stack runs: an informer-like LIST then WATCH per kind, which
sends `add` for every object already there (as ApiServerSource does when it starts), then every change,
re-watching when the server ends a watch and re-listing when the watch expires (410 Gone).
`PollingSource` lists the watched kinds and publishes what changed since its last poll (adds, updates,
deletes; a re-created object is a delete then an add): deterministic, for tests that step a lifecycle.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Callable, Generator, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, ClassVar

from functions.runtime.errors import CrefnError
from functions.runtime.gateway import Gateway
from functions.runtime.resources import Resource


def apiserver_record(verb: str, obj: dict[str, Any], res: Resource, source: str) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    ns, name = meta.get("namespace", ""), meta.get("name", "")
    return {
        "attributes": {
            "specversion": "1.0",
            "id": str(uuid.uuid4()),
            "source": source,
            "type": f"dev.knative.apiserver.resource.{verb}",
            "subject": res.path(ns, name),
            "time": datetime.now(UTC).isoformat(),
            "datacontenttype": "application/json",
            "kind": res.kind,
            "apiversion": res.api_version,
            "name": name,
            "namespace": ns,
        },
        "data": obj,
    }


def list_with_version(gateway: Gateway, res: Resource, namespace: str | None = None, label_selector: str = "",
                      page_size: int = 500) -> tuple[list[dict[str, Any]], str]:
    """Every object (paged) and the list's resourceVersion, where a watch continues from."""
    items: list[dict[str, Any]] = []
    version = ""
    for page in gateway.pages(res, namespace, label_selector, page_size):
        items += page["items"]
        version = str((page.get("metadata") or {}).get("resourceVersion", ""))
    return items, version


def watch(gateway: Gateway, res: Resource, namespace: str | None, resource_version: str, timeout_seconds: int,
          label_selector: str = "") -> Generator[tuple[str, dict[str, Any]], None, None]:
    """(ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, object) until the server ends the watch."""
    query: list[tuple[str, Any]] = [("watch", "true"), ("timeoutSeconds", timeout_seconds)]
    if resource_version:
        query.append(("resourceVersion", resource_version))
    if label_selector:
        query.append(("labelSelector", label_selector))
    with contextlib.closing(gateway.stream(res.path(namespace), query, timeout_seconds + 5)) as events:
        for event in events:
            yield event["type"], event["object"]


class PollingSource:
    def __init__(self, gateway: Gateway, resources: Sequence[Resource], namespace: str,
                 publish: Callable[[dict[str, Any]], None], label_selector: str = "") -> None:
        self.gateway = gateway
        self.resources = resources
        self.namespace = namespace
        self.publish = publish
        self.label_selector = label_selector
        self.seen: dict[tuple[str, str], dict[str, Any]] = {}
        self.uids_added: dict[str, set[str]] = {res.kind: set() for res in resources}

    def poll(self) -> int:
        published = 0
        for res in self.resources:
            current = {o["metadata"]["name"]: o for o in
                       self.gateway.list_all(res, self.namespace, label_selector=self.label_selector)}
            for name, obj in current.items():
                old = self.seen.get((res.kind, name))
                if old and old["metadata"]["uid"] != obj["metadata"]["uid"]:
                    self._emit("delete", old, res)
                    old = None
                    published += 1
                if old is None:
                    self._emit("add", obj, res)
                    self.uids_added[res.kind].add(obj["metadata"]["uid"])
                    published += 1
                elif old["metadata"]["resourceVersion"] != obj["metadata"]["resourceVersion"]:
                    self._emit("update", obj, res)
                    published += 1
            for (kind, name), old in list(self.seen.items()):
                if kind == res.kind and name not in current:
                    self._emit("delete", old, res)
                    published += 1
        return published

    def _emit(self, verb: str, obj: dict[str, Any], res: Resource) -> None:
        key = (res.kind, obj["metadata"]["name"])
        if verb == "delete":
            self.seen.pop(key, None)
        else:
            self.seen[key] = obj
        self.publish(apiserver_record(verb, obj, res, self.gateway.host))


class WatchSource:
    """ApiServerSource (Resource mode) for one kind, all namespaces or one, with a label selector."""

    VERBS: ClassVar[dict[str, str]] = {"ADDED": "add", "MODIFIED": "update", "DELETED": "delete"}

    def __init__(self, gateway: Gateway, res: Resource, publish: Callable[[dict[str, Any]], None],
                 namespace: str | None = None, label_selector: str = "") -> None:
        self.gateway = gateway
        self.res = res
        self.publish = publish
        self.namespace = namespace
        self.label_selector = label_selector
        self._stop = threading.Event()
        self.ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"source-{res.plural}")

    def start(self) -> WatchSource:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                items, version = list_with_version(self.gateway, self.res, self.namespace, self.label_selector)
                for obj in items:
                    self.publish(apiserver_record("add", obj, self.res, self.gateway.host))
                self.ready.set()
                self._watch(version)
            except (CrefnError, OSError):
                self._stop.wait(1.0)  # the API server is away: list again shortly

    def _watch(self, version: str) -> None:
        while not self._stop.is_set():
            with contextlib.closing(watch(self.gateway, self.res, self.namespace, version, 5,
                                          self.label_selector)) as events:
                version = self._relay(events, version)
                if version == "":
                    return

    def _relay(self, events: Iterator[tuple[str, dict[str, Any]]], version: str) -> str:
        """Publish a watch's events; the version to watch from next, "" to list again or stop."""
        for kind, obj in events:
            if kind == "ERROR":
                return ""  # e.g. 410 Gone: re-list
            version = obj["metadata"].get("resourceVersion", version)
            if kind in self.VERBS:
                obj.setdefault("apiVersion", self.res.api_version)
                obj.setdefault("kind", self.res.kind)
                self.publish(apiserver_record(self.VERBS[kind], obj, self.res, self.gateway.host))
            if self._stop.is_set():
                return ""
        return version
