"""The JSON schemas on disk: committed, current, one per emitted type with its extensions."""

from __future__ import annotations

import json

from events.schemas import SCHEMA_DIR, schema_documents, stale_schemas
from events.types import EventType


def test_committed_schemas_match_the_models() -> None:
    assert stale_schemas() == [], "run `make schemas` and commit events/schemas/"


def test_one_schema_per_emitted_type_with_its_extensions() -> None:
    docs = schema_documents()
    assert sorted(docs) == sorted(f"{t.value}.json" for t in EventType)
    phase = docs["dev.crefn.workload.phase.json"]
    assert phase["x-cloudevents-extensions"] == ["workloadphase", "namespace", "job", "partitionkey"]
    assert {"job", "workload", "phase", "observedAt"} <= set(phase["required"])
    assert phase["properties"]["phase"]["$ref"].endswith("/Phase")
    for name in docs:
        assert json.loads((SCHEMA_DIR / name).read_text())["title"] == name.removesuffix(".json")
