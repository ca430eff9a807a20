"""`cre-fn record` (`functions.deadletters`), the Broker's dead-letter sink, over real HTTP: it appends
binary and structured CloudEvents to JSONL and refuses the rest; with `--file` each line is on disk
before the 202, a file that cannot be written answers 503 (the sender retries), a torn last line a
crash left is cut before the next append, and `/metrics` shows the file's size."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from functions.journal import Journal, read_lines
from functions.transport import post, send
from localstack.apiserver import free_port
from localstack.samples import load_sample
from localstack.serving import wait_for_port

DEAD = dict(load_sample("trainjob-resource-update-failed"))
DEAD["attributes"] = {**DEAD["attributes"], "knativeerrorcode": "400", "knativeerrordest": "http://crefn-phase/",
                      "knativeerrordata": "expected TrainJob, got v1/Pod"}


@dataclass
class Served:
    url: str
    stdout: Path
    stderr: Path


@contextlib.contextmanager
def record(tmp_path: Path, *args: str) -> Iterator[Served]:
    """`cre-fn record` with `args` on a free port; its stdout and stderr go to files."""
    port = free_port()
    served = Served(f"http://127.0.0.1:{port}/", tmp_path / "stdout.jsonl", tmp_path / "stderr.txt")
    with served.stdout.open("w") as out, served.stderr.open("w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "functions.cli", "record", "--host", "127.0.0.1",
                                 "--port", str(port), *args], stdout=out, stderr=err)
        try:
            assert wait_for_port(port)
            yield served
        finally:
            proc.terminate()
            proc.wait(timeout=10)


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


def test_a_202_means_the_line_is_in_the_file_and_the_log_has_it_too(tmp_path: Path) -> None:
    file = tmp_path / "volume" / "dead-letters.jsonl"
    file.parent.mkdir()
    with record(tmp_path, "--file", str(file), "--out", "-") as served:
        for i in range(3):
            event = {**DEAD, "attributes": {**DEAD["attributes"], "id": f"dl-{i}"}}
            assert send(served.url, event, structured=bool(i % 2)).status == 202
            lines = [json.loads(x) for x in file.read_text().splitlines()]  # right after the 202
            assert [x["attributes"]["id"] for x in lines] == [f"dl-{n}" for n in range(i + 1)]
        assert lines[-1]["attributes"]["knativeerrordata"] == "expected TrainJob, got v1/Pod"
        assert lines[-1]["data"] == DEAD["data"]
    assert [json.loads(x)["attributes"]["id"] for x in served.stdout.read_text().splitlines()] == [
        "dl-0", "dl-1", "dl-2"]


def metrics_of(url: str) -> str:
    import urllib.request

    with urllib.request.urlopen(url.rstrip("/") + "/metrics", timeout=10) as r:
        return str(r.read().decode())


def test_a_file_that_cannot_be_written_answers_503_and_the_retry_is_recorded(tmp_path: Path) -> None:
    missing = tmp_path / "not-mounted-yet" / "dead-letters.jsonl"
    with record(tmp_path, "--file", str(missing), "--out", "-") as served:
        answer = send(served.url, DEAD)
        assert answer.status == 503 and "\n" not in answer.text.strip()
        assert f"cannot open {missing}: No such file or directory" in answer.text
        assert served.stdout.read_text() == ""  # not logged as recorded either
        missing.parent.mkdir()  # the volume is there now: the Broker's retry succeeds
        assert send(served.url, DEAD).status == 202
        assert [json.loads(x)["attributes"]["id"] for x in missing.read_text().splitlines()] == [
            DEAD["attributes"]["id"]]
        exposed = metrics_of(served.url)
    assert 'crefn_events_total{answer="503",function="dead-letters",type="dev.knative.apiserver.resource.update"}' \
        ' 1.0' in exposed
    assert f'crefn_dead_letters_file_bytes{{path="{missing}"}} {float(missing.stat().st_size)}' in exposed


def test_a_full_disk_answers_503_and_leaves_no_partial_line(tmp_path: Path) -> None:
    with record(tmp_path, "--file", "/dev/full", "--out", "") as served:  # every write: ENOSPC
        answer = send(served.url, DEAD)
    assert answer.status == 503 and "cannot write /dev/full: No space left on device" in answer.text


def test_a_torn_last_line_is_cut_before_the_next_append(tmp_path: Path) -> None:
    journal = tmp_path / "dead-letters.jsonl"
    torn = '{"attributes": {"id": "to'  # a crash mid-write
    journal.write_text('{"attributes": {"id": "whole"}, "data": null}\n' + torn)
    assert read_lines(journal).lines == ['{"attributes": {"id": "whole"}, "data": null}']
    with record(tmp_path, "--file", str(journal), "--out", "") as served:
        assert send(served.url, DEAD).status == 202
    assert [json.loads(x)["attributes"]["id"] for x in journal.read_text().splitlines()] == [
        "whole", DEAD["attributes"]["id"]]
    assert f"cre-fn record: {journal}: cut a torn last line of {len(torn)} bytes" in served.stderr.read_text()


def test_journal_appends_are_whole_lines_across_threads(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    journal = Journal(tmp_path / "j.jsonl")
    with ThreadPoolExecutor(8) as pool:
        sizes = list(pool.map(lambda i: journal.append({"attributes": {"id": str(i)}, "data": "x" * 5000}),
                              range(64)))
    ids = sorted(int(json.loads(x)["attributes"]["id"]) for x in journal.path.read_text().splitlines())
    assert ids == list(range(64)) and max(sizes) == journal.size()
