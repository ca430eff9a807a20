"""Names as CRE's `pkg/naming` makes them (`functions.domain.naming`): the cases of CRE's own testdata
(`pkg/naming/testdata/truncate/*`, input and expected verbatim), the hash printed as Go's `%05x` (a hash
below 0x10000000 keeps its leading digits, not the zeros `%08x` would pad), and the TrainJob and
measurement names built on it."""

from __future__ import annotations

import pytest

from functions.domain.attempts import workload_name
from functions.domain.measurement_objects import bandwidth_name, goodput_name
from functions.domain.naming import fnv32a, truncate


@pytest.mark.parametrize(("name", "limit", "expected"), [
    ("nemotron5-certification-training-nemotron5", 31, "nemotron5-certification-t-9b1bc"),
    ("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 35, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaa-121ef"),
    ("very-long-name-that-exceeds", 7, "v-f95a3"),
], ids=["nemotron5-workflow-name", "one-over-triggers-truncation", "very-small-maxlen"])
def test_cres_testdata(name: str, limit: int, expected: str) -> None:
    assert truncate(name, limit) == expected and len(expected) <= limit


@pytest.mark.parametrize(("name", "limit"), [("short", 63), ("x" * 44, 44)], ids=["short", "exact-length"])
def test_a_name_that_fits_is_kept(name: str, limit: int) -> None:
    assert truncate(name, limit) == name


def test_fnv32a_known_values() -> None:
    assert (fnv32a(""), fnv32a("a"), fnv32a("foobar")) == (0x811C9DC5, 0xE40C292C, 0xBF9CF968)


def test_a_hash_below_0x10000000_keeps_its_leading_digits() -> None:
    """`llama-pretrain-nightly-certification-4-workload` hashes to 0x098e2b8c: Go's `%05x` prints
    `98e2b8c`, whose first five are `98e2b` (`%08x` would give `098e2`)."""
    assert fnv32a("llama-pretrain-nightly-certification-4-workload") == 0x098E2B8C
    assert workload_name("llama-pretrain-nightly-certification-4") == "llama-pretrain-nightly-certification-4-98e2b"


@pytest.mark.parametrize(("job", "expected"), [
    ("llm", "llm-workload"),
    ("a" * 35, "a" * 35 + "-workload"),  # 44: fits
    ("a" * 36, "a" * 36 + "-w-d6ea2"),
    ("b" * 37 + "-x", "b" * 37 + "-6c274"),  # trailing '-' dropped
], ids=["short", "exactly-44", "truncated", "trailing-dash"])
def test_workload_names(job: str, expected: str) -> None:
    assert workload_name(job) == expected and len(expected) <= 44


@pytest.mark.parametrize(("name", "expected"), [
    (goodput_name("llm"), "llm-goodput"),
    (goodput_name("a" * 55), "a" * 55 + "-goodput"),  # 63: fits
    (goodput_name("a" * 60), "a" * 57 + "-" + f"{fnv32a('a' * 60 + '-goodput'):05x}"[:5]),
    (bandwidth_name("a" * 56), "a" * 56 + "-" + f"{fnv32a('a' * 56 + '-bandwidth'):05x}"[:5]),  # trailing '-' dropped
], ids=["short", "exactly-63", "long", "trailing-dash"])
def test_measurement_names(name: str, expected: str) -> None:
    assert name == expected and len(name) <= 63
