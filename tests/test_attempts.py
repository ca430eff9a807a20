"""Workload names and attempts: `functions.rules.attempts`."""

from __future__ import annotations

import pytest

from functions.rules.attempts import fnv32a, workload_name


@pytest.mark.parametrize(("job_name", "expected"), [
    ("llm", "llm-workload"),
    ("a" * 35, "a" * 35 + "-workload"),  # 44: fits
    ("a" * 36, "a" * 36 + "-w-" + f"{fnv32a('a' * 36 + '-workload'):08x}"[:5]),
    ("b" * 37 + "-x", "b" * 37 + "-" + f"{fnv32a('b' * 37 + '-x-workload'):08x}"[:5]),  # trailing '-' dropped
], ids=["short", "exactly-44", "truncated", "trailing-dash"])
def test_workload_names(job_name: str, expected: str) -> None:
    assert workload_name(job_name) == expected
    assert len(workload_name(job_name)) <= 44


def test_fnv32a_known_values() -> None:
    assert (fnv32a(""), fnv32a("a"), fnv32a("foobar")) == (0x811C9DC5, 0xE40C292C, 0xBF9CF968)
