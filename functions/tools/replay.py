"""`cre-fn replay FILE --to URL`: post a recording in order, each event with its recorded id.

A recording is JSON lines of records `{"attributes": {...}, "data": ...}` (what `cre-fn record`, the dead-letter
sink and the local stack write) or of CloudEvents in their JSON format; a torn last line is skipped with a warning.
The recorder's rotated files beside FILE are read first, oldest first (`--no-rotated`: FILE alone). An answer that
asks to try again (409, 429, 503, none) is retried with a bounded backoff (`--retries`; `backoff`); after three
such events in a row the target is taken for down and the rest is listed, not sent. Exit status:
0 only when every event was accepted (2xx), 1 when any was not (each listed), 2 when the recording or the token
file cannot be read. `--take` (the dead-letter procedure: docs/operating.md#dead-letters) sets the recorder's
files aside first and deletes them only after an exit 0. The drills (`--rate`, `--duplicate`, `--shuffle-window`,
`--fresh-ids`): docs/development.md#recording-and-replaying-events.
"""

from __future__ import annotations

import base64
import json
import random
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from functions.runtime.client import Answer, bearer, send
from functions.runtime.errors import TemporaryError
from functions.runtime.journal import read_lines

RETRIES = 5
"""How many times an event whose answer asks to try again is sent again (`--retries`)."""
FIRST_BACKOFF, MAX_BACKOFF, MAX_RETRY_AFTER = 1.0, 30.0, 60.0
"""Seconds: the first wait before a retry (doubling each time), its cap, and the cap on a `Retry-After`."""
GIVE_UP = 3
"""Events in a row still asking to try again after their retries: the target is down, the rest is not sent."""
SHOWN = 20
"""How many events that were not accepted are listed one by one."""


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


@dataclass
class Replayed:
    """What a replay got: the final answer of each event, by status, and the events not accepted."""

    answers: Counter[int] = field(default_factory=Counter)
    retries: int = 0
    missed: list[str] = field(default_factory=list)
    """One line per event whose final answer was not 2xx: its place, type, id and the answer."""


def replay(records: list[dict[str, Any]], url: str, rate: float = 0, duplicate: bool = False,
           shuffle_window: int = 0, structured: bool = False, seed: int = 0,
           out: TextIO = sys.stdout, fresh_ids: bool = False, token_file: str | None = None,
           retries: int = RETRIES, sleep: Callable[[float], None] = time.sleep) -> Replayed:
    done = Replayed()
    total = len(records) * (2 if duplicate else 1)
    started = time.monotonic()
    down = 0
    for i, record in enumerate(arrange(records, duplicate, shuffle_window, seed), 1):
        if down >= GIVE_UP:  # the target is down: what is left is listed, not sent
            done.missed.append(missed(i, total, record, f"not sent: the last {GIVE_UP} events were still answered "
                                                        "'try again'"))
            continue
        if rate > 0:
            sleep(max(0.0, started + i / rate - time.monotonic()))
        event = fresh_id(record) if fresh_ids else record
        answer = deliver(event, url, structured, token_file, retries, sleep, done)
        done.answers[answer.status] += 1
        down = down + 1 if answer.temporary else 0
        if not answer.accepted:
            done.missed.append(missed(i, total, record, f"{answer.status} {answer.text[:200]}"))
        if i % 50 == 0 or i == total:
            print(f"  replayed {i}/{total}", file=out, flush=True)
    return done


def missed(i: int, total: int, record: dict[str, Any], what: str) -> str:
    """The line of an event not accepted: its place, type and id, and what became of it."""
    attrs = record["attributes"]
    return f"{i}/{total} {attrs.get('type')} id {attrs.get('id')} → {what}"


def deliver(event: dict[str, Any], url: str, structured: bool, token_file: str | None, retries: int,
            sleep: Callable[[float], None], done: Replayed) -> Answer:
    """One event sent, and sent again while its answer asks to (at most `retries` times): the last answer."""
    for attempt in range(retries + 1):
        try:
            answer = send(url, event, structured=structured, token_file=token_file)
        except TemporaryError as e:  # the peer unreachable, or the token file unreadable since the start
            answer = Answer.unreachable(e)
        if answer.accepted or not answer.temporary or attempt == retries:
            return answer
        done.retries += 1
        sleep(backoff(attempt, answer))
    raise AssertionError("unreachable")  # pragma: no cover


def backoff(attempt: int, answer: Answer) -> float:
    """Seconds before the next try: the answer's `Retry-After` (whole seconds, capped), else 1 s doubling."""
    after = answer.headers.get("retry-after", "")
    if after.isascii() and after.isdigit():
        return min(float(after), MAX_RETRY_AFTER)
    return min(FIRST_BACKOFF * float(2 ** attempt), MAX_BACKOFF)


def fresh_id(record: dict[str, Any]) -> dict[str, Any]:
    return {**record, "attributes": {**record["attributes"], "id": str(uuid.uuid4())}}


def recording_files(path: Path, rotated: bool = True) -> list[Path]:
    """The files of a recording, oldest first: the rotated files beside `path` (`<path>.<n>`, the highest number
    the oldest), then `path`."""
    if not rotated:
        return [path]
    numbered = [(int(n), p) for p in path.parent.glob(f"{path.name}.*")
                if (n := p.name.removeprefix(f"{path.name}.")).isascii() and n.isdigit()]
    return [p for _, p in sorted(numbered, reverse=True)] + [path]


TAKEN = ".replaying"
"""What `--take` appends to the recorder's file name (and its rotated files' names) when it takes them."""


def take(path: Path, out: TextIO) -> Path:
    """The recorder's set taken aside for a replay (`--take`): `FILE` and its rotated files renamed to
    `FILE.replaying[.<n>]`, so that the recorder, which opens its file for every line, writes what comes meanwhile
    to a new `FILE`; a set a replay that did not succeed left taken is resumed, and the new one left alone."""
    taken = path.with_name(path.name + TAKEN)
    if taken.exists():
        print(f"resuming {taken.name}, left by a replay that did not succeed (what came since stays in {path.name})",
              file=out)
        return taken
    for one in reversed(recording_files(path)):  # the current file first: the recorder moves on to a new one
        if one.exists():
            one.rename(taken.with_name(taken.name + one.name.removeprefix(path.name)))
    return taken


def main(path: str, url: str, rate: float, duplicate: bool, shuffle_window: int, structured: bool, seed: int,
         fresh_ids: bool = False, token_file: str | None = None, retries: int = RETRIES,
         rotated: bool = True, taking: bool = False) -> int:
    try:
        source = take(Path(path), sys.stdout) if taking else Path(path)
    except OSError as e:
        print(f"cre-fn replay: cannot take {path}: {e}", file=sys.stderr)
        return 2
    code = replay_files(recording_files(source, rotated or taking), url, rate, duplicate, shuffle_window,
                        structured, seed, fresh_ids, token_file, retries)
    if taking and code == 0:
        gone = [f for f in recording_files(source) if f.exists()]
        for f in gone:
            f.unlink()
        print(f"deleted {', '.join(f.name for f in gone)}: every event was accepted")
    elif taking:
        print(f"kept {source.name} and its rotated files: run the same command again to resume")
    return code


def replay_files(files: list[Path], url: str, rate: float, duplicate: bool, shuffle_window: int, structured: bool,
                 seed: int, fresh_ids: bool, token_file: str | None, retries: int) -> int:
    try:
        records = [r for f in files for r in read_recording(f)]
        bearer(token_file)  # a token file that cannot be read fails every send: say so once, send nothing
    except (OSError, ValueError, TemporaryError) as e:
        print(f"cre-fn replay: {e}", file=sys.stderr)
        return 2
    if len(files) > 1:
        print(f"reading {len(files)} files, oldest first: {', '.join(f.name for f in files)}")
    done = replay(records, url, rate, duplicate, shuffle_window, structured, seed, fresh_ids=fresh_ids,
                  token_file=token_file, retries=retries)
    if done.missed:
        print(f"not accepted ({len(done.missed)}, after up to {retries} retries each):")
        for line in done.missed[:SHOWN]:
            print(f"  {line}")
        if len(done.missed) > SHOWN:
            print(f"  ... and {len(done.missed) - SHOWN} more")
    summary = ", ".join(f"{n}x{status}" for status, n in sorted(done.answers.items()))
    print(f"replayed {sum(done.answers.values())} events to {url}: {summary} ({done.retries} retries); "
          f"{len(done.missed)} not accepted")
    return 1 if done.missed else 0
