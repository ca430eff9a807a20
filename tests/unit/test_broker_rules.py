"""The local Broker's Knative rules, pure: filter dialects, durations, backoff, Triggers from knative/."""

from __future__ import annotations

from typing import Any

import pytest

from localstack.broker import Delivery, FilterError, matches, parse_duration, triggers_from_manifests
from localstack.manifests import render

ATTRS = {"type": "dev.crefn.workload.phase", "workloadphase": "Failed", "kind": "TrainJob", "source": "/crefn/phase"}


@pytest.mark.parametrize(("flt", "expected"), [
    ({"exact": {"type": "dev.crefn.workload.phase"}}, True),
    ({"exact": {"type": "dev.crefn.workload.phase", "workloadphase": "Running"}}, False),
    ({"exact": {"missing": ""}}, False),
    ({"prefix": {"type": "dev.crefn."}}, True),
    ({"prefix": {"type": "dev.knative."}}, False),
    ({"suffix": {"source": "/phase"}}, True),
    ({"suffix": {"missing": ""}}, False),
    ({"all": [{"exact": {"kind": "TrainJob"}}, {"prefix": {"type": "dev."}}]}, True),
    ({"all": [{"exact": {"kind": "TrainJob"}}, {"prefix": {"type": "x"}}]}, False),
    ({"any": [{"exact": {"kind": "Job"}}, {"exact": {"workloadphase": "Failed"}}]}, True),
    ({"any": [{"exact": {"kind": "Job"}}, {"exact": {"workloadphase": "Running"}}]}, False),
    ({"not": {"exact": {"workloadphase": "Failed"}}}, False),
    ({"not": {"any": [{"exact": {"kind": "Job"}}]}}, True),
], ids=["exact", "exact-all-keys", "exact-missing-attr", "prefix", "prefix-no", "suffix", "suffix-missing",
        "all", "all-no", "any", "any-no", "not", "not-any"])
def test_filter_dialects(flt: dict[str, Any], expected: bool) -> None:
    assert matches(flt, ATTRS) is expected


@pytest.mark.parametrize("flt", [{"cesql": "type = 'x'"}, {"exact": {}, "prefix": {}}], ids=["cesql", "two-dialects"])
def test_unsupported_filters_are_refused(flt: dict[str, Any]) -> None:
    with pytest.raises(FilterError):
        matches(flt, ATTRS)


@pytest.mark.parametrize(("text", "seconds"), [("PT0.5S", 0.5), ("PT30S", 30), ("PT1M", 60), ("PT1M30S", 90),
                                                ("PT1H", 3600)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


def test_backoff() -> None:
    assert [Delivery(backoff_delay=0.5).delay(n) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 4.0]
    assert [Delivery(backoff_policy="linear", backoff_delay=0.5).delay(n) for n in (1, 2, 3)] == [0.5, 1.0, 1.5]


def test_triggers_and_delivery_come_from_knative_base() -> None:
    docs = render("base")
    urls = {f"crefn-{t}": f"http://{t}" for t in ("phase", "launch", "status", "restart", "workloadrun", "alert")}
    triggers, default = triggers_from_manifests(docs, urls)
    assert {t.name for t in triggers} == {d["metadata"]["name"] for d in docs if d["kind"] == "Trigger"}
    assert default == Delivery(retry=8, backoff_policy="exponential", backoff_delay=0.5, timeout=30.0)
    route = {t.name: t for t in triggers}
    assert route["crefn-restart-failures"].matches(ATTRS)
    assert not route["crefn-status-phases"].matches(ATTRS)
    assert route["crefn-status-phases"].matches({**ATTRS, "workloadphase": "Pending"})
    batch_job = {"type": "dev.knative.apiserver.resource.update", "kind": "Job", "apiversion": "batch/v1"}
    assert not route["crefn-launch-jobs"].matches(batch_job)
    assert route["crefn-launch-jobs"].matches({**batch_job, "apiversion": "nvcre.nvidia.com/v1alpha1"})
    assert not route["crefn-launch-jobs"].matches({**batch_job, "type": "dev.knative.apiserver.resource.delete",
                                                   "apiversion": "nvcre.nvidia.com/v1alpha1"})
