"""`cre-fn replay` (`functions.tools.replay`): a recorded JSONL event log posted in order (with the duplicate
and shuffle drills), a non-zero exit when an event is rejected, a file that is no recording, and the
dead letters' round trip: Broker → recorder → file (with a torn last line) → replay to the function."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from functions.tools.replay import arrange
from localstack.cluster.apiserver import free_port
from localstack.samples import load_sample

pytestmark = pytest.mark.process  # every test runs `cre-fn` as a program

EVENT = {"attributes": {"specversion": "1.0", "id": "e1", "source": "/test", "type": "test.ping",
                        "datacontenttype": "application/json", "job": "a"}, "data": {"n": 1}}


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
    assert result.returncode == 0 and "replayed 6 events" in result.stdout and "; 0 not accepted" in result.stdout
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
    assert "1x200, 1x400 (0 retries); 1 not accepted" in result.stdout and "unknown event type" in result.stdout


def test_replay_refuses_a_file_that_is_not_a_recording(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"attributes": {}}\nnot json\n')
    result = cli("replay", str(path), "--to", "http://127.0.0.1:9/")
    assert result.returncode == 2 and "bad.jsonl:2: not JSON" in result.stderr


def test_replay_keeps_recorded_ids_unless_told(recorder: tuple[str, Path], tmp_path: Path) -> None:
    url, out = recorder
    records = [{"attributes": {**EVENT["attributes"], "id": f"rec-{i}"}, "data": {"n": i}} for i in range(2)]
    recording = write_jsonl(tmp_path / "in.jsonl", records)
    assert cli("replay", str(recording), "--to", url, "--duplicate").returncode == 0
    ids = [json.loads(x)["attributes"]["id"] for x in out.read_text().splitlines()]
    assert ids == ["rec-0", "rec-0", "rec-1", "rec-1"]  # a --duplicate drill looks like a Knative redelivery
    out.write_text("")
    assert cli("replay", str(recording), "--to", url, "--fresh-ids").returncode == 0
    fresh = [json.loads(x)["attributes"]["id"] for x in out.read_text().splitlines()]
    assert len(fresh) == 2 and not set(fresh) & {"rec-0", "rec-1"} and len(set(fresh)) == 2


def test_replay_reads_the_cloudevents_json_format(recorder: tuple[str, Path], tmp_path: Path) -> None:
    url, out = recorder
    lines = [{"specversion": "1.0", "id": "ce-1", "source": "/s", "type": "t.json",
              "datacontenttype": "application/json", "job": "a", "data": {"n": 1}},
             {"specversion": "1.0", "id": "ce-2", "source": "/s", "type": "t.binary",
              "datacontenttype": "application/json", "data_base64": "eyJuIjogMn0="}]
    recording = write_jsonl(tmp_path / "in.jsonl", lines)
    result = cli("replay", str(recording), "--to", url)
    assert result.returncode == 0, result.stdout + result.stderr
    got = [json.loads(x) for x in out.read_text().splitlines()]
    assert [(r["attributes"]["id"], r["attributes"]["type"], r["data"]) for r in got] == [
        ("ce-1", "t.json", {"n": 1}), ("ce-2", "t.binary", {"n": 2})]
    assert got[0]["attributes"]["job"] == "a"


def test_dead_letters_recorded_to_the_file_replay_to_the_function_once_it_is_back(tmp_path: Path) -> None:
    """A Trigger's subscriber is down: the local Broker's retries run out and the dead letter goes to the
    recorder (`cre-fn record`'s server and durable file); with `phase` served again the file replays, its
    Knative extensions and all, together with a KafkaSink's structured message and after a torn line."""
    from localstack.eventing.broker import Delivery, LocalBroker, Trigger
    from localstack.serving import ServedFunction

    sample = load_sample("trainjob-resource-update-failed")
    down = f"http://127.0.0.1:{free_port()}/"  # nothing listens: connection refused
    trigger = Trigger("crefn-phase-trainjobs", ({"exact": {"type": sample["attributes"]["type"]}},), down,
                      Delivery(retry=1, backoff_delay=0.01, timeout=5))
    file = tmp_path / "dead-letters.jsonl"
    broker = LocalBroker([trigger], dead_letters=file)
    try:
        broker.publish(sample)
        assert broker.wait_idle(timeout=30)
    finally:
        broker.close()
    (dead,) = [json.loads(line) for line in file.read_text().splitlines()]
    assert dead["attributes"]["knativeerrordest"] == down and dead["attributes"]["id"] == sample["attributes"]["id"]
    assert dead["data"] == sample["data"] and dead["attributes"]["knativeerrorcode"]
    add = load_sample("trainjob-resource-add")
    from_kafka = {**add["attributes"], "knativeerrorcode": "503", "knativeerrordest": down, "data": add["data"]}
    with file.open("a") as f:  # a line as kcat prints a structured-mode message, then a torn one
        f.write(json.dumps(from_kafka) + "\n" + '{"attributes": {"id": "half')
    with ServedFunction("phase") as phase:
        result = cli("replay", str(file), "--to", phase.url)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "replayed 2 events" in result.stdout and "2x200" in result.stdout
    assert "dead-letters.jsonl:3: skipped a torn last line" in result.stderr


def test_replay_sends_the_token_file_as_bearer_and_nothing_when_it_cannot_be_read(tmp_path: Path) -> None:
    from tests.support.helpers import Receiver

    second = {**EVENT, "attributes": {**EVENT["attributes"], "id": "e2"}}
    recording = write_jsonl(tmp_path / "in.jsonl", [EVENT, second])
    token = tmp_path / "token"
    token.write_text("replay.token.value\n")
    absent = tmp_path / "absent"
    sink = Receiver(default=202)
    try:
        plain = cli("replay", str(recording), "--to", sink.url)
        with_token = cli("replay", str(recording), "--to", sink.url, "--token-file", str(token))
        missing = cli("replay", str(recording), "--to", sink.url, "--token-file", str(absent))
    finally:
        sink.close()
    assert plain.returncode == with_token.returncode == 0, plain.stdout + with_token.stdout
    assert [h.get("authorization") for _, h, _ in sink.requests] == [
        None, None, "Bearer replay.token.value", "Bearer replay.token.value"]
    assert (missing.returncode, missing.stdout) == (2, "")  # said once, nothing sent
    assert missing.stderr == f"cre-fn replay: OIDC token file {absent} cannot be read (No such file or directory)\n"
    assert "replay.token.value" not in with_token.stdout + with_token.stderr


def test_a_target_that_only_asks_to_try_again_fails_the_replay_and_names_every_event(tmp_path: Path) -> None:
    """The port-forward dropped (503 to everything): the replay retries each event with its backoff (here the
    target's own `Retry-After: 0`), then exits 1, listing what was not accepted. Never a success."""
    from tests.support.helpers import Receiver

    records = [{**EVENT, "attributes": {**EVENT["attributes"], "id": f"e{i}"}} for i in range(3)]
    recording = write_jsonl(tmp_path / "dead-letters.jsonl", records)
    sink = Receiver(default=503, script=[(503, {"retry-after": "0"})] * 9)
    try:
        result = cli("replay", str(recording), "--to", sink.url, "--retries", "2")
    finally:
        sink.close()
    assert result.returncode == 1, result.stdout
    assert len(sink.requests) == 9  # each event 1 + 2 times
    assert "not accepted (3, after up to 2 retries each):" in result.stdout
    assert all(f"test.ping id e{i} → 503" in result.stdout for i in range(3))
    assert result.stdout.rstrip().endswith("3x503 (6 retries); 3 not accepted")


def test_a_target_that_recovers_midway_gets_every_event_in_order(tmp_path: Path) -> None:
    """Throttled, then unavailable, then back: every event arrives once accepted, in order; exit 0."""
    from tests.support.helpers import Receiver

    records = [{**EVENT, "attributes": {**EVENT["attributes"], "id": f"e{i}"}, "data": {"n": i}} for i in range(3)]
    recording = write_jsonl(tmp_path / "in.jsonl", records)
    sink = Receiver(default=202, script=[(202, {}), (429, {"retry-after": "0"}), (503, {"retry-after": "0"}),
                                         (409, {"retry-after": "0"})])
    try:
        result = cli("replay", str(recording), "--to", sink.url)
    finally:
        sink.close()
    assert result.returncode == 0, result.stdout
    assert [json.loads(b)["n"] for _, _, b in sink.requests] == [0, 1, 1, 1, 1, 2]
    assert result.stdout.rstrip().endswith("3x202 (3 retries); 0 not accepted")


def test_the_recorders_file_is_read_with_its_rotated_files_oldest_first(recorder: tuple[str, Path],
                                                                        tmp_path: Path) -> None:
    """What the recorder rotated (`FILE.1` the newest, `FILE.3` the oldest) is replayed before FILE, in order;
    `--no-rotated` reads FILE alone."""
    url, out = recorder
    dead = tmp_path / "dead-letters.jsonl"
    for n, path in enumerate([dead.with_name("dead-letters.jsonl.3"), dead.with_name("dead-letters.jsonl.2"),
                              dead.with_name("dead-letters.jsonl.1"), dead]):
        write_jsonl(path, [{**EVENT, "attributes": {**EVENT["attributes"], "id": f"f{n}-{i}"}, "data": {"n": n}}
                           for i in range(2)])
    dead.with_name("dead-letters.jsonl.old").write_text("not a rotated file\n")
    result = cli("replay", str(dead), "--to", url)
    assert result.returncode == 0, result.stdout + result.stderr
    assert ("reading 4 files, oldest first: dead-letters.jsonl.3, dead-letters.jsonl.2, dead-letters.jsonl.1, "
            "dead-letters.jsonl") in result.stdout
    assert [json.loads(x)["attributes"]["id"] for x in out.read_text().splitlines()] == [
        "f0-0", "f0-1", "f1-0", "f1-1", "f2-0", "f2-1", "f3-0", "f3-1"]
    out.write_text("")
    alone = cli("replay", str(dead), "--to", url, "--no-rotated")
    assert alone.returncode == 0 and "reading" not in alone.stdout
    assert [json.loads(x)["attributes"]["id"] for x in out.read_text().splitlines()] == ["f3-0", "f3-1"]


def test_take_deletes_the_recorders_set_only_once_every_event_was_accepted(tmp_path: Path) -> None:
    """The dead-letter procedure: the set taken aside (new dead letters go to a new file meanwhile), kept when the
    target fails, resumed by the same command, deleted once every event was accepted."""
    from tests.support.helpers import Receiver

    dead = tmp_path / "dead-letters.jsonl"
    write_jsonl(dead.with_name("dead-letters.jsonl.1"), [{**EVENT, "attributes": {**EVENT["attributes"], "id": "old"}}])
    write_jsonl(dead, [{**EVENT, "attributes": {**EVENT["attributes"], "id": "new"}}])
    down = Receiver(default=503)
    try:
        failed = cli("replay", str(dead), "--take", "--retries", "0", "--to", down.url)
    finally:
        down.close()
    assert failed.returncode == 1 and "kept dead-letters.jsonl.replaying" in failed.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dead-letters.jsonl.replaying",
                                                          "dead-letters.jsonl.replaying.1"]
    write_jsonl(dead, [{**EVENT, "attributes": {**EVENT["attributes"], "id": "since"}}])  # the recorder goes on
    up = Receiver(default=202)
    try:
        resumed = cli("replay", str(dead), "--take", "--to", up.url)
    finally:
        up.close()
    assert resumed.returncode == 0, resumed.stdout
    assert "resuming dead-letters.jsonl.replaying" in resumed.stdout
    assert [h["ce-id"] for _, h, _ in up.requests] == ["old", "new"]  # oldest first; "since" waits for the next
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dead-letters.jsonl"]
    assert "deleted dead-letters.jsonl.replaying.1, dead-letters.jsonl.replaying" in resumed.stdout


def test_a_target_that_stays_down_is_given_up_on_after_three_events(tmp_path: Path) -> None:
    """Five events to a target down throughout: three are tried (with their retries), the other two are listed as
    not sent, rather than each waiting out its backoff; exit 1."""
    from tests.support.helpers import Receiver

    records = [{**EVENT, "attributes": {**EVENT["attributes"], "id": f"e{i}"}} for i in range(5)]
    sink = Receiver(default=503)
    try:
        result = cli("replay", str(write_jsonl(tmp_path / "in.jsonl", records)), "--to", sink.url, "--retries", "0")
    finally:
        sink.close()
    assert result.returncode == 1 and len(sink.requests) == 3, result.stdout
    assert "5/5 test.ping id e4 → not sent: the last 3 events were still answered 'try again'" in result.stdout
    assert result.stdout.rstrip().endswith("3x503 (0 retries); 5 not accepted")
