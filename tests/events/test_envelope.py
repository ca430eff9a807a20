"""Envelope parsing: the API server source's events (resource and reference mode), the samples of that
traffic, and the one-line reason an event is refused."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from events.envelope import Envelope, InvalidEvent, ReferenceChange, ResourceChange, parse_apiserver_event
from events.types import ApiServerType
from tests.support import paths

SAMPLES = sorted(paths.SAMPLES.glob("*.json"))


def env(type_: str, data: object) -> Envelope:
    return Envelope(id="1", type=type_, source="https://10.96.0.1:443", data=data)


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_samples_look_like_apiserversource_traffic(path: Path) -> None:
    record = json.loads(path.read_text())
    attrs = record["attributes"]
    uuid.UUID(attrs["id"])
    assert attrs["source"].startswith("https://")
    assert attrs["type"] in {t.value for t in ApiServerType}
    assert attrs["subject"] == (f"/apis/{attrs['apiversion']}/namespaces/{attrs['namespace']}"
                                f"/{attrs['kind'].lower()}s/{attrs['name']}")
    assert (attrs["kind"], attrs["apiversion"]) in {("TrainJob", "trainer.kubeflow.org/v1alpha1"),
                                                    ("WorkloadRun", "nvcre.nvidia.com/v1alpha1")}
    assert record["data"]["kind"] == attrs["kind"] or attrs["type"].startswith("dev.knative.apiserver.ref.")
    parsed = parse_apiserver_event(env(attrs["type"], record["data"]))
    assert parsed.ref.name == attrs["name"] and parsed.ref.namespace == attrs["namespace"]


def test_sample_ids_are_distinct() -> None:
    ids = [json.loads(p.read_text())["attributes"]["id"] for p in SAMPLES]
    assert len(set(ids)) == len(ids)


def test_resource_mode_carries_the_object() -> None:
    obj = {"apiVersion": "v1", "kind": "X", "metadata": {"name": "a", "namespace": "n"}}
    parsed = parse_apiserver_event(env(ApiServerType.RESOURCE_UPDATE, obj))
    assert isinstance(parsed, ResourceChange) and parsed.verb == "update" and parsed.object == obj


def test_reference_mode_carries_a_reference() -> None:
    ref = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "a", "namespace": "n"}
    parsed = parse_apiserver_event(env(ApiServerType.REF_DELETE, ref))
    assert isinstance(parsed, ReferenceChange) and parsed.verb == "delete" and parsed.ref.name == "a"


@pytest.mark.parametrize(
    ("type_", "data", "message"),
    [
        ("com.example.other", {}, "unknown event type 'com.example.other'"),
        (ApiServerType.PING, {}, "unknown event type"),
        (ApiServerType.RESOURCE_ADD, "not json", "must be a JSON object, got text that is not JSON"),
        (ApiServerType.RESOURCE_ADD, None, "got no data"),
        (ApiServerType.RESOURCE_ADD, [1, 2], "got list"),
        (ApiServerType.RESOURCE_ADD, {"kind": "TrainJob"}, "metadata.name is missing"),
        (ApiServerType.REF_ADD, {"kind": "TrainJob", "name": "a"}, "invalid object reference: apiVersion"),
    ],
    ids=["unknown-type", "ping", "text", "no-data", "array", "no-metadata", "ref-without-apiversion"],
)
def test_invalid_events_say_why_in_one_line(type_: str, data: object, message: str) -> None:
    with pytest.raises(InvalidEvent) as err:
        parse_apiserver_event(env(type_, data))
    assert message in str(err.value) and "\n" not in str(err.value)
