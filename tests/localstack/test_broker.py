"""`localstack.eventing.broker.LocalBroker`, the dev stack's Knative Broker (and the tests' Broker): its rules,
pure (filter dialects, durations, backoff, Triggers from knative/), then its delivery over real HTTP
(retries with backoff, replies re-published, dead letters, ingress)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from functions.runtime.client import send
from localstack.cluster.apiserver import free_port
from localstack.eventing.broker import (
    Delivery,
    FilterError,
    LocalBroker,
    Trigger,
    matches,
    parse_duration,
    triggers_from_manifests,
)
from localstack.manifests import render
from tests.support.helpers import Receiver

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
    urls = {f"crefn-{t}": f"http://{t}" for t in ("phase", "launch", "measurements", "status", "restart", "timeout",
                                                          "nodehealth", "validate", "workloadrun", "alert")}
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


EVENT = {"attributes": {"specversion": "1.0", "id": "e1", "source": "/test", "type": "test.ping",
                        "datacontenttype": "application/json", "job": "a"}, "data": {"n": 1}}


@pytest.fixture
def subscriber(request: pytest.FixtureRequest) -> Iterator[Receiver]:
    """A subscriber answering the given statuses in turn (then 202); a 200 carries a reply event."""
    sub = Receiver(default=202, body=b"no good\n", script=[(status, {}) for status in request.param], reply_event=True)
    yield sub
    sub.close()


def broker_for(sub: Receiver, tmp_path: Path, retry: int = 3) -> LocalBroker:
    delivery = Delivery(retry=retry, backoff_delay=0.1, timeout=5)
    triggers = [Trigger("t", ({"exact": {"type": "test.ping"}},), sub.url, delivery),
                Trigger("replies", ({"exact": {"type": "test.reply"}},), sub.url, delivery)]
    return LocalBroker(triggers, dead_letters=tmp_path / "dead.jsonl", event_log=tmp_path / "events.jsonl")


def deliver(record: dict[str, Any], broker: LocalBroker) -> LocalBroker:
    """Publish one event and let the broker finish with it (retries included), then close it."""
    try:
        broker.publish(record)
        assert broker.wait_idle(timeout=10)
    finally:
        broker.close()
    return broker


@pytest.mark.parametrize("subscriber", [[503, 429, 409, 202]], indirect=True)
def test_retries_with_exponential_backoff(subscriber: Receiver, tmp_path: Path) -> None:
    broker = deliver(EVENT, broker_for(subscriber, tmp_path))
    times = [t for t, _, _ in subscriber.requests]
    assert len(times) == 4
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert gaps[0] >= 0.09 and gaps[1] >= 0.19 and gaps[2] >= 0.39  # 0.1, 0.2, 0.4
    assert {h["ce-id"] for _, h, _ in subscriber.requests} == {"e1"}  # a retry is the same event
    assert broker.dead == []


@pytest.mark.parametrize("subscriber", [[400]], indirect=True)
def test_permanent_answer_goes_to_dead_letters_at_once(subscriber: Receiver, tmp_path: Path) -> None:
    broker = deliver(EVENT, broker_for(subscriber, tmp_path))
    assert len(subscriber.requests) == 1 and len(broker.dead) == 1
    (line,) = (tmp_path / "dead.jsonl").read_text().splitlines()
    dead = json.loads(line)
    assert dead["attributes"]["knativeerrorcode"] == "400" and dead["attributes"]["knativeerrordata"] == "no good"
    assert dead["attributes"]["knativeerrordest"] == subscriber.url and dead["data"] == {"n": 1}


@pytest.mark.parametrize("subscriber", [[503, 503, 503]], indirect=True)
def test_exhausted_retries_go_to_dead_letters(subscriber: Receiver, tmp_path: Path) -> None:
    broker = deliver(EVENT, broker_for(subscriber, tmp_path, retry=2))
    assert len(subscriber.requests) == 3 and broker.dead[0]["attributes"]["knativeerrorcode"] == "503"


@pytest.mark.parametrize("subscriber", [[200, 202]], indirect=True)
def test_replies_are_published_back_and_logged(subscriber: Receiver, tmp_path: Path) -> None:
    broker = deliver(EVENT, broker_for(subscriber, tmp_path))
    assert [h["ce-type"] for _, h, _ in subscriber.requests] == ["test.ping", "test.reply"] and broker.published == 2
    logged = [json.loads(x)["attributes"]["type"] for x in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert logged == ["test.ping", "test.reply"]


@pytest.mark.parametrize("subscriber", [[]], indirect=True)
def test_ingress_accepts_binary_and_structured_and_refuses_the_rest(subscriber: Receiver, tmp_path: Path) -> None:
    broker = broker_for(subscriber, tmp_path)
    try:
        url = broker.serve(free_port())
        assert send(url, EVENT).status == 202
        assert send(url, EVENT, structured=True).status == 202
        from functions.runtime.client import post

        assert post(url, {"content-type": "application/json"}, b"{}").status == 400
        assert broker.wait_idle(timeout=10)
    finally:
        broker.close()
    assert len(subscriber.requests) == 2
