"""`cre-fn replay FILE --to URL`: post a recording in order, each event with its recorded id.

A recording is JSON lines, each a record `{"attributes": {...}, "data": ...}` (what `cre-fn record`, the
dead-letter sink and the local stack write) or a CloudEvent in the CloudEvents JSON format (`specversion`,
`id`, ... and `data` or `data_base64` at the top level); a torn last line is skipped with a warning. Prints a
summary of the answers; exits 1 when any event was rejected (an answer that is neither accepted nor a
transient 409/429/503), 2 when the recording or the token file cannot be read, 0 otherwise.
The drills (`--rate`, `--duplicate`, `--shuffle-window`, `--fresh-ids`) and `--token-file`:
docs/development.md#recording-and-replaying-events.
"""

from __future__ import annotations

import base64
import json
import random
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from functions.runtime.client import Answer, bearer, send
from functions.runtime.errors import TemporaryError
from functions.runtime.journal import read_lines


def read_recording(path: Path, warn: TextIO = sys.stderr) -> list[dict[str, Any]]:
    """The records of a recording. A torn last line (its writer stopped mid-write: it was never
    acknowledged, so the sender sent it again) is skipped with a warning on `warn`."""
    read = read_lines(path)
    if read.torn:
        print(f"cre-fn replay: {path}:{len(read.lines) + 1}: skipped a torn last line ({len(read.torn)} characters, "
              "no newline, not JSON)", file=warn)
    records = []
    for n, line in enumerate(read.lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{n}: not JSON: {e.msg}") from None
        if isinstance(record, dict) and isinstance(record.get("attributes"), dict):
            records.append(record)
        elif isinstance(record, dict) and isinstance(record.get("specversion"), str):
            records.append(from_cloudevent_json(record))
        else:
            raise ValueError(f"{path}:{n}: not a recorded event (want an object with 'attributes', "
                             "or a CloudEvent in the JSON format with 'specversion')")
    return records


def from_cloudevent_json(event: dict[str, Any]) -> dict[str, Any]:
    """A CloudEvent in the CloudEvents JSON format as a record."""
    attributes = {k: v for k, v in event.items() if k not in ("data", "data_base64")}
    data = base64.b64decode(event["data_base64"]) if "data_base64" in event else event.get("data")
    return {"attributes": attributes, "data": data}


def arrange(records: list[dict[str, Any]], duplicate: bool = False, shuffle_window: int = 0,
            seed: int = 0) -> Iterator[dict[str, Any]]:
    rng = random.Random(seed)
    ordered = list(records)
    if shuffle_window > 1:
        for start in range(0, len(ordered), shuffle_window):
            window = ordered[start:start + shuffle_window]
            rng.shuffle(window)
            ordered[start:start + shuffle_window] = window
    for record in ordered:
        yield record
        if duplicate:
            yield record


def replay(records: list[dict[str, Any]], url: str, rate: float = 0, duplicate: bool = False,
           shuffle_window: int = 0, structured: bool = False, seed: int = 0,
           out: TextIO = sys.stdout, fresh_ids: bool = False, token_file: str | None = None) -> Counter[int]:
    answers: Counter[int] = Counter()
    total = len(records) * (2 if duplicate else 1)
    started = time.monotonic()
    for i, record in enumerate(arrange(records, duplicate, shuffle_window, seed), 1):
        if rate > 0:
            time.sleep(max(0.0, started + i / rate - time.monotonic()))
        try:
            answer = send(url, fresh_id(record) if fresh_ids else record, structured=structured,
                          token_file=token_file)
        except TemporaryError as e:  # the peer unreachable, or the token file unreadable since the start
            answer = Answer.unreachable(e)
        answers[answer.status] += 1
        if not answer.accepted:
            print(f"  {i}/{total} {record['attributes'].get('type')} → {answer.status} {answer.text}", file=out)
        if i % 50 == 0 or i == total:
            print(f"  replayed {i}/{total}", file=out, flush=True)
    return answers


def fresh_id(record: dict[str, Any]) -> dict[str, Any]:
    return {**record, "attributes": {**record["attributes"], "id": str(uuid.uuid4())}}


def rejected(answers: Counter[int]) -> int:
    return sum(n for status, n in answers.items() if not (a := Answer(status, {}, b"")).accepted and not a.temporary)


def main(path: str, url: str, rate: float, duplicate: bool, shuffle_window: int, structured: bool, seed: int,
         fresh_ids: bool = False, token_file: str | None = None) -> int:
    try:
        records = read_recording(Path(path))
        bearer(token_file)  # a token file that cannot be read fails every send: say so once, send nothing
    except (OSError, ValueError, TemporaryError) as e:
        print(f"cre-fn replay: {e}", file=sys.stderr)
        return 2
    answers = replay(records, url, rate, duplicate, shuffle_window, structured, seed, fresh_ids=fresh_ids,
                     token_file=token_file)
    summary = ", ".join(f"{n}x{status}" for status, n in sorted(answers.items()))
    bad = rejected(answers)
    print(f"replayed {sum(answers.values())} events to {url}: {summary}; {bad} rejected")
    return 1 if bad else 0
