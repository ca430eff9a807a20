"""JSON Schemas of the emitted events' `data`, one file per type in `events/schemas/`.

Written by `cre-fn schemas`; `cre-fn schemas --check` (and a test) fails when the committed files
differ from the models. Each schema also lists the event's extension attributes under
`x-cloudevents-extensions`, for consumers that route on them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from events.emitted import DATA_MODELS, EXTENSIONS

SCHEMA_DIR = Path(__file__).parent / "schemas"


def schema_documents() -> dict[str, dict[str, Any]]:
    docs: dict[str, dict[str, Any]] = {}
    for event_type, model in DATA_MODELS.items():
        doc = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"https://crefn.dev/schemas/{event_type.value}.json",
            **model.model_json_schema(by_alias=True),
            "title": event_type.value,
            "x-cloudevents-extensions": list(EXTENSIONS[event_type]),
        }
        docs[f"{event_type.value}.json"] = doc
    return docs


def render(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def write_schemas(directory: Path = SCHEMA_DIR) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, doc in schema_documents().items():
        path = directory / name
        path.write_text(render(doc))
        written.append(path)
    return written


def stale_schemas(directory: Path = SCHEMA_DIR) -> list[str]:
    """Names of schema files that are missing or differ from the models."""
    stale = []
    for name, doc in schema_documents().items():
        path = directory / name
        if not path.exists() or path.read_text() != render(doc):
            stale.append(name)
    return stale
