"""The event catalog: envelope parsing, emitted models, schemas on disk, samples, settings."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest
from pydantic import ValidationError

from events.emitted import DATA_MODELS, EXTENSIONS
from events.envelope import Envelope, InvalidEvent, ReferenceChange, ResourceChange, parse_apiserver_event
from events.schemas import SCHEMA_DIR, schema_documents, stale_schemas
from events.types import ApiServerType, EventType, Phase
from functions.settings import Settings
from tests.support import paths

SAMPLES = sorted(paths.SAMPLES.glob("*.json"))


def env(type_: str, data: object) -> Envelope:
    return Envelope(id="1", type=type_, source="https://10.96.0.1:443", data=data)


def test_committed_schemas_match_the_models() -> None:
    assert stale_schemas() == [], "run `cre-fn schemas` and commit events/schemas/"


def test_one_schema_per_emitted_type_with_its_extensions() -> None:
    docs = schema_documents()
    assert sorted(docs) == sorted(f"{t.value}.json" for t in EventType)
    phase = docs["dev.crefn.workload.phase.json"]
    assert phase["x-cloudevents-extensions"] == ["workloadphase", "namespace", "job", "partitionkey"]
    assert {"job", "workload", "phase", "observedAt"} <= set(phase["required"])
    assert phase["properties"]["phase"]["$ref"].endswith("/Phase")
    for name in docs:
        assert json.loads((SCHEMA_DIR / name).read_text())["title"] == name.removesuffix(".json")


def test_extension_names_are_cloudevents_legal() -> None:
    for names in EXTENSIONS.values():
        for name in names:
            assert re.fullmatch(r"[a-z0-9]{1,20}", name), name
    assert set(EXTENSIONS) == set(DATA_MODELS) == set(EventType)


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


def test_settings_defaults_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    s = Settings()
    assert (s.mode, s.manage_all, s.cre_group, s.restart_grace_seconds, s.require_checkpoint_evidence) == (
        "manage", False, "nvcre.nvidia.com", 30, True)
    assert s.pagerduty_url.get_secret_value() == "https://events.pagerduty.com/v2/enqueue" and s.log_level == "INFO"
    monkeypatch.setenv("CREFN_MODE", "observe")
    monkeypatch.setenv("CREFN_CRE_GROUP", "cre.nvidia.com")
    monkeypatch.setenv("CREFN_RESTART_GRACE_SECONDS", "0")
    monkeypatch.setenv("KUBECONFIG", "/tmp/kc")
    s = Settings()
    assert (s.observe, s.cre_group, s.restart_grace_seconds, s.kubeconfig) == (True, "cre.nvidia.com", 0, "/tmp/kc")


@pytest.mark.parametrize(("var", "value"), [("CREFN_MODE", "sometimes"), ("CREFN_RESTART_GRACE_SECONDS", "-1")])
def test_settings_reject_bad_values(monkeypatch: pytest.MonkeyPatch, var: str, value: str) -> None:
    monkeypatch.setenv(var, value)
    with pytest.raises(ValidationError):
        Settings()


def test_phase_enum_is_closed() -> None:
    assert [p.value for p in Phase] == ["Pending", "Running", "Succeeded", "Failed"]


EMITTED = sorted((paths.SAMPLES / "emitted").glob("*.json"))


@pytest.mark.parametrize("path", EMITTED, ids=[p.stem for p in EMITTED])
def test_emitted_samples_follow_their_model_and_schema(path: Path) -> None:
    """The samples of the verdict events (recorded from the local stack) are what the catalog says."""
    import jsonschema

    record = json.loads(path.read_text())
    attrs = record["attributes"]
    event_type = EventType(attrs["type"])
    assert path.stem == event_type.value
    assert set(EXTENSIONS[event_type]) <= set(attrs)
    DATA_MODELS[event_type].model_validate(record["data"])
    jsonschema.validate(record["data"], schema_documents()[f"{event_type.value}.json"])


def test_every_verdict_event_type_has_a_sample() -> None:
    verdicts = {EventType.JOB_DEADLINE, EventType.JOB_CHECK, EventType.WORKLOAD_STALLED,
                EventType.JOB_HARDWARE_FAILED, EventType.JOB_VALIDATION}
    assert {p.stem for p in EMITTED} >= {t.value for t in verdicts}
