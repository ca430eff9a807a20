"""The local stack's Knative stand-ins and tools over real HTTP: the Broker's delivery (retries with
backoff, replies re-published, dead letters), `cre-fn record` and `cre-fn replay`."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from functions.replay import arrange
from functions.transport import send
from localstack.apiserver import free_port
from localstack.broker import Delivery, LocalBroker, Trigger
from localstack.samples import load_sample
from localstack.serving import wait_for_port
from tests.helpers import Receiver

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
        from functions.transport import post

        assert post(url, {"content-type": "application/json"}, b"{}").status == 400
        assert broker.wait_idle(timeout=10)
    finally:
        broker.close()
    assert len(subscriber.requests) == 2


@pytest.fixture
def recorder(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    port, out = free_port(), tmp_path / "recorded.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "functions.cli", "record", "--host", "127.0.0.1",
                             "--port", str(port), "--out", str(out)], stderr=subprocess.DEVNULL)
    try:
        assert wait_for_port(port)
        yield f"http://127.0.0.1:{port}/", out
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_record_appends_binary_and_structured_events(recorder: tuple[str, Path]) -> None:
    url, out = recorder
    sample = load_sample("trainjob-resource-update-failed")
    assert send(url, sample).status == 202
    assert send(url, sample, structured=True).status == 202
    from functions.transport import post

    assert post(url, {"content-type": "text/plain"}, b"hello").status == 400
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 2
    for line in lines:
        assert line["data"] == sample["data"]
        assert {k: v for k, v in line["attributes"].items() if k != "id"} == {
            k: v for k, v in sample["attributes"].items() if k != "id"}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "functions.cli", *args], capture_output=True, text=True,
                          check=False, timeout=60)


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_replay_posts_in_order_with_drills(recorder: tuple[str, Path], tmp_path: Path) -> None:
    url, out = recorder
    records = [{"attributes": {**EVENT["attributes"], "id": str(i), "seq": str(i)}, "data": {"n": i}}
               for i in range(6)]
    recording = write_jsonl(tmp_path / "in.jsonl", records)
    result = cli("replay", str(recording), "--to", url)
    assert result.returncode == 0 and "replayed 6 events" in result.stdout and "0 rejected" in result.stdout
    assert [json.loads(x)["data"]["n"] for x in out.read_text().splitlines()] == list(range(6))
    out.write_text("")
    assert cli("replay", str(recording), "--to", url, "--duplicate", "--rate", "50").returncode == 0
    assert [json.loads(x)["data"]["n"] for x in out.read_text().splitlines()] == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    shuffled = [r["data"]["n"] for r in arrange(records, shuffle_window=3, seed=7)]
    assert sorted(shuffled[:3]) == [0, 1, 2] and sorted(shuffled[3:]) == [3, 4, 5] and shuffled != list(range(6))


def test_replay_exits_non_zero_when_an_event_is_rejected(tmp_path: Path) -> None:
    from localstack.serving import ServedFunction

    bad = {"attributes": {**load_sample("trainjob-resource-add")["attributes"], "type": "x.unknown"}, "data": {}}
    recording = write_jsonl(tmp_path / "in.jsonl", [load_sample("trainjob-resource-add"), bad])
    with ServedFunction("phase") as phase:
        result = cli("replay", str(recording), "--to", phase.url)
    assert result.returncode == 1, result.stdout
    assert "1x200, 1x400; 1 rejected" in result.stdout and "unknown event type" in result.stdout


def test_replay_refuses_a_file_that_is_not_a_recording(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"attributes": {}}\nnot json\n')
    result = cli("replay", str(path), "--to", "http://127.0.0.1:9/")
    assert result.returncode == 2 and "bad.jsonl:2: not JSON" in result.stderr
