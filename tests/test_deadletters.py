"""`cre-fn record` (`functions.deadletters`), the Broker's dead-letter sink, over real HTTP: it appends
binary and structured CloudEvents to JSONL and refuses the rest."""

from __future__ import annotations

import json
from pathlib import Path

from functions.transport import post, send
from localstack.samples import load_sample


def test_record_appends_binary_and_structured_events(recorder: tuple[str, Path]) -> None:
    url, out = recorder
    sample = load_sample("trainjob-resource-update-failed")
    assert send(url, sample).status == 202
    assert send(url, sample, structured=True).status == 202
    assert post(url, {"content-type": "text/plain"}, b"hello").status == 400
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 2
    for line in lines:
        assert line["data"] == sample["data"]
        assert {k: v for k, v in line["attributes"].items() if k != "id"} == {
            k: v for k, v in sample["attributes"].items() if k != "id"}
