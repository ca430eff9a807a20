"""Send a CloudEvent over HTTP, as Knative's broker does: binary mode (ce-* headers) or structured.

Used by `make run`, the replay tooling and the tests. Events are plain `{"attributes", "data"}`
records (the format of `events/samples/` and of recordings); each send gets a fresh `id` unless told
otherwise, as the ApiServerSource does.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SAMPLES = Path(__file__).resolve().parents[2] / "events" / "samples"


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def ce(self) -> dict[str, str]:
        """The reply's CloudEvent attributes (binary mode)."""
        return {k[3:]: v for k, v in self.headers.items() if k.startswith("ce-")}

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode(errors="replace").strip()


def load_sample(name: str) -> dict[str, Any]:
    record: dict[str, Any] = json.loads((SAMPLES / f"{name}.json").read_text())
    return record


def encode(record: dict[str, Any], structured: bool = False, fresh_id: bool = True) -> tuple[dict[str, str], bytes]:
    attrs = dict(record["attributes"])
    if fresh_id:
        attrs["id"] = str(uuid.uuid4())
    data = record.get("data")
    if structured:
        envelope = {**attrs, "data": data}
        return {"content-type": "application/cloudevents+json"}, json.dumps(envelope).encode()
    content_type = attrs.pop("datacontenttype", "application/json")
    headers = {f"ce-{k}": str(v) for k, v in attrs.items()}
    headers["content-type"] = content_type
    body = data if isinstance(data, bytes) else json.dumps(data).encode()
    return headers, body


def post(url: str, headers: dict[str, str], body: bytes, timeout: float = 30) -> Answer:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            return Answer(resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read())
    except urllib.error.HTTPError as e:
        with e:
            return Answer(e.code, {k.lower(): v for k, v in e.headers.items()}, e.read())


def send(url: str, record: dict[str, Any], structured: bool = False, fresh_id: bool = True,
         timeout: float = 30) -> Answer:
    headers, body = encode(record, structured, fresh_id)
    return post(url, headers, body, timeout)


def parse_record(headers: Mapping[str, str], body: bytes) -> dict[str, Any]:
    """An HTTP CloudEvent (binary or structured) as a `{"attributes", "data"}` record."""
    if headers.get("content-type", "").startswith("application/cloudevents+json"):
        envelope = json.loads(body)
        data = envelope.pop("data", None)
        return {"attributes": envelope, "data": data}
    attrs = {k[3:]: v for k, v in headers.items() if k.startswith("ce-")}
    if not {"id", "type", "source", "specversion"} <= set(attrs):
        raise ValueError("not a CloudEvent")
    attrs["datacontenttype"] = headers.get("content-type", "application/json")
    return {"attributes": attrs, "data": json.loads(body) if body else None}
