"""JSON Schemas of the emitted events' `data`, one file per type in `events/schemas/`.

Written by `python -m events.schemas` (`make schemas`); with `--check` (and a test) it fails when the
committed files differ from the models. Each schema also lists the event's extension attributes under
`x-cloudevents-extensions`, for consumers that route on them.
"""

from __future__ import annotations

import json
import sys
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


def main(argv: list[str]) -> int:
    """Write the schemas (each path printed), or with `--check` name the stale ones and fail."""
    if "--check" in argv:
        stale = stale_schemas()
        for name in stale:
            print(f"stale: {SCHEMA_DIR / name} (run `make schemas`)", file=sys.stderr)
        return 1 if stale else 0
    for path in write_schemas():
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
