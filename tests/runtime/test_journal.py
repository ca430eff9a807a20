"""The JSONL journal (`functions.runtime.journal`): a torn last line a crash left is cut before the next append, and
appends from many threads stay whole lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from functions.runtime.client import send
from functions.runtime.journal import Journal, read_lines
from tests.support.recorder import DEAD, record


@pytest.mark.process
def test_a_torn_last_line_is_cut_before_the_next_append(tmp_path: Path) -> None:
    journal = tmp_path / "dead-letters.jsonl"
    torn = '{"attributes": {"id": "to'  # a crash mid-write
    journal.write_text('{"attributes": {"id": "whole"}, "data": null}\n' + torn)
    assert read_lines(journal).lines == ['{"attributes": {"id": "whole"}, "data": null}']
    with record(tmp_path, "--file", str(journal), "--out", "") as served:
        assert send(served.url, DEAD).status == 202
    assert [json.loads(x)["attributes"]["id"] for x in journal.read_text().splitlines()] == [
        "whole", DEAD["attributes"]["id"]]
    logged = [json.loads(line) for line in served.stderr.read_text().splitlines()]
    cut = {"severity": "WARNING", "function": "dead-letters",
           "message": f"{journal}: cut a torn last line of {len(torn)} bytes (a write that never finished)"}
    assert [line for line in logged if cut.items() <= line.items()]


def test_journal_appends_are_whole_lines_across_threads(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    journal = Journal(tmp_path / "j.jsonl")
    with ThreadPoolExecutor(8) as pool:
        sizes = list(pool.map(lambda i: journal.append({"attributes": {"id": str(i)}, "data": "x" * 5000}),
                              range(64)))
    ids = sorted(int(json.loads(x)["attributes"]["id"]) for x in journal.path.read_text().splitlines())
    assert ids == list(range(64)) and max(sizes) == journal.size()
