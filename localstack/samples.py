"""The sample events of the catalog (`events/samples/`), as records `{"attributes", "data"}`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import events

SAMPLES = Path(events.__file__).parent / "samples"


def load_sample(name: str) -> dict[str, Any]:
    record: dict[str, Any] = json.loads((SAMPLES / f"{name}.json").read_text())
    return record
