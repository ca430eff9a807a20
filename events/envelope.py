"""The CloudEvent envelope as plain data, and ApiServerSource parsing (SPEC §4.1).

The codec (`functions.runtime.codec`) turns a request into an `Envelope` (the SDK object never leaves it).
Facts relied on:
- Resource mode (`dev.knative.apiserver.resource.*`): `data` is the full object; an update carries
  only the new object; a delete carries the object as last seen.
- Reference mode (`dev.knative.apiserver.ref.*`): `data` is `{apiVersion, kind, name, namespace}`;
  the receiver must GET the object, and a missing object means it was deleted.
- `id` is a fresh UUID on every send: it is not a dedup key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from events.emitted import EventData, WorkloadPhaseData
from events.types import EVENT_SOURCE_PREFIX, ApiServerType, EventType

Verb = Literal["add", "update", "delete"]
M = TypeVar("M", bound=BaseModel)


class InvalidEvent(ValueError):
    """The event can never be handled (unknown type, data of the wrong shape): a permanent error."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Envelope:
    """A received CloudEvent: its attributes and its decoded `data` (plain data: the codec checks
    the attributes; the handlers validate `data` against the model its type calls for)."""

    id: str
    type: str
    source: str
    subject: str = ""
    time: str = ""
    """The `time` attribute as sent ("" when absent): when the source decided the event."""
    extensions: Mapping[str, str] = field(default_factory=dict)
    data: Any = None
    traceparent: str = ""
    tracestate: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class Outbound:
    """An event to emit: the codec adds `id`, `time` and `specversion` and renders binary mode."""

    type: str
    source: str
    subject: str
    extensions: Mapping[str, str]
    data: EventData
    traceparent: str = ""
    tracestate: str = ""

    def data_json(self) -> dict[str, Any]:
        return self.data.model_dump(mode="json", by_alias=True)


def to_outbound(
    event_type: str,
    function: str,
    namespace: str,
    job: str,
    data: EventData,
    cause: Envelope | None,
    **extensions: str,
) -> Outbound:
    """Build an emitted event with the attributes every one carries (SPEC §4.2)."""
    key = f"{namespace}/{job}"
    return Outbound(
        type=event_type,
        source=f"{EVENT_SOURCE_PREFIX}{function}",
        subject=key,
        extensions={"namespace": namespace, "job": job, "partitionkey": key, **extensions},
        data=data,
        traceparent=cause.traceparent if cause else "",
        tracestate=cause.tracestate if cause else "",
    )


class ObjectReference(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    apiVersion: str = Field(min_length=1)
    kind: str = Field(min_length=1)
    name: str = Field(min_length=1)
    namespace: str = ""


class ResourceChange(BaseModel):
    """Resource mode: the whole object as the API server had it."""

    model_config = ConfigDict(frozen=True)

    verb: Verb
    object: dict[str, Any]

    @property
    def ref(self) -> ObjectReference:
        meta = self.object.get("metadata") or {}
        # built from an object already parsed, not validated again: a reference to an object that lacks
        # its kind is still the reference the handlers check the kind of (a 400 of theirs, not a crash)
        return ObjectReference.model_construct(
            apiVersion=str(self.object.get("apiVersion", "")),
            kind=str(self.object.get("kind", "")),
            name=str(meta.get("name", "")),
            namespace=str(meta.get("namespace", "")),
        )


class ReferenceChange(BaseModel):
    """Reference mode: only which object changed; the receiver reads it."""

    model_config = ConfigDict(frozen=True)

    verb: Verb
    ref: ObjectReference


def parse_apiserver_event(env: Envelope) -> ResourceChange | ReferenceChange:
    """Parse an ApiServerSource event; raise `InvalidEvent` with a one-line reason."""
    try:
        kind = ApiServerType(env.type)
    except ValueError:
        raise InvalidEvent(f"unknown event type {env.type!r}") from None
    if kind is ApiServerType.PING:
        raise InvalidEvent(f"unknown event type {env.type!r} for this function")
    mode, _, verb = kind.value.removeprefix("dev.knative.apiserver.").partition(".")
    if not isinstance(env.data, dict):
        raise InvalidEvent(f"data of {env.type} must be a JSON object, got {_describe(env.data)}")
    if mode == "resource":
        if not isinstance(env.data.get("metadata"), dict) or not env.data["metadata"].get("name"):
            raise InvalidEvent("data is not a Kubernetes object: metadata.name is missing")
        return ResourceChange(verb=verb, object=env.data)
    try:
        ref = ObjectReference.model_validate(env.data)
    except ValidationError as e:
        raise InvalidEvent(f"invalid object reference: {first_error(e)}") from None
    return ReferenceChange(verb=verb, ref=ref)


def parse_data(env: Envelope, model: type[M]) -> M:
    """An event's `data` as one of our models; raise `InvalidEvent` with a one-line reason."""
    if not isinstance(env.data, dict):
        raise InvalidEvent(f"data of {env.type} must be a JSON object, got {_describe(env.data)}")
    try:
        return model.model_validate(env.data)
    except ValidationError as e:
        raise InvalidEvent(f"invalid {env.type} data: {first_error(e)}") from None


def parse_phase_event(env: Envelope) -> WorkloadPhaseData:
    """`dev.crefn.workload.phase` data; `InvalidEvent` for any other type."""
    if env.type != EventType.WORKLOAD_PHASE:
        raise InvalidEvent(f"unknown event type {env.type!r} for this function")
    return parse_data(env, WorkloadPhaseData)


def first_error(e: ValidationError) -> str:
    """One line naming the first invalid field of a pydantic error."""
    err = e.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "value"
    return f"{where}: {err['msg']}"


def _describe(value: Any) -> str:
    if value is None:
        return "no data"
    if isinstance(value, str | bytes):
        return "text that is not JSON" if value else "empty data"
    return type(value).__name__
