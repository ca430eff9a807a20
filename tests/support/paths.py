"""Where the tests find the repository's files, wherever the test module sits below tests/."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
SUPPORT = TESTS / "support"
GOLDEN = TESTS / "golden"
SCENARIOS = TESTS / "scenarios"
SAMPLES = REPO / "events" / "samples"
