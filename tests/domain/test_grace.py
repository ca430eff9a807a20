"""`functions.domain.grace`, pure (SPEC §6.3): the restart grace's length, and whether a recorded grace counts
for the failed attempt."""

from __future__ import annotations

from typing import Any

import pytest

from functions.domain import grace
from functions.domain.jobs import parse_job
from tests.support.helpers import job, trainjob


@pytest.mark.parametrize(("annotation", "read", "recorded"), [
    ("", trainjob(), False),
    ("2026-11-30T11:00:30Z", trainjob(), True),
    ("2026-11-30T10:59:30Z", trainjob(), False),
    ("2026-11-30T11:00:00Z", trainjob(), False),
    ("2026-11-30T11:00:30Z", None, True),
    ("2026-11-30T11:00:30Z", {"metadata": {"name": "llm-workload"}}, True),
    ("soon", trainjob(), False),
], ids=["none", "this-restarts", "an-earlier-restarts", "same-second", "trainjob-gone", "no-creation-time",
        "unreadable"])
def test_the_grace_counts_only_when_it_ends_after_the_failed_attempt_began(
        annotation: str, read: dict[str, Any] | None, recorded: bool) -> None:
    state = job(annotations={"crefn.dev/restart-not-before": annotation} if annotation else None)
    assert grace.recorded(state, read) is recorded


@pytest.mark.parametrize(("goodput", "setting", "seconds"), [
    (None, 30, 30), ({"logProfileRef": "p", "sampleInterval": "45s"}, 30, 90),
    ({"logProfileRef": "p", "sampleInterval": "1m30s"}, 0, 180), ({"logProfileRef": "p"}, 7, 7),
    ({"logProfileRef": "p", "sampleInterval": "often"}, 30, 30),
], ids=["no-goodput", "twice-the-interval", "go-duration", "no-interval", "unreadable-interval"])
def test_restart_grace(goodput: dict[str, str] | None, setting: int, seconds: int) -> None:
    raw = job().raw
    spec = {**raw["spec"], **({"goodputMeasurement": goodput} if goodput else {})}
    assert grace.length(parse_job({**raw, "spec": spec}, "nvcre.nvidia.com"), setting).total_seconds() == seconds
