"""The emitted events' models: their CloudEvents extensions, and the recorded samples of the verdict events."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from events.emitted import DATA_MODELS, EXTENSIONS
from events.schemas import schema_documents
from events.types import EventType
from tests.support import paths


def test_extension_names_are_cloudevents_legal() -> None:
    for names in EXTENSIONS.values():
        for name in names:
            assert re.fullmatch(r"[a-z0-9]{1,20}", name), name
    assert set(EXTENSIONS) == set(DATA_MODELS) == set(EventType)


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


def test_a_phase_seen_at_a_time_without_an_offset_is_refused() -> None:
    """`observedAt` is compared with API server timestamps, which carry one: a time without it is invalid data
    (400), never a comparison that fails later (500)."""
    from pydantic import ValidationError

    from events.emitted import WorkloadPhaseData
    from tests.support.world import phase_record

    data = phase_record("ns", "llm", "Failed")["data"]
    assert WorkloadPhaseData.model_validate(data).observed_at.tzinfo is not None
    with pytest.raises(ValidationError, match="observedAt"):
        WorkloadPhaseData.model_validate({**data, "observedAt": "2026-01-01T00:00:00"})
