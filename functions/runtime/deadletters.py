"""`cre-fn record`: an HTTP CloudEvents sink that keeps every event it receives as JSON lines.

Deployed as the Broker's dead-letter sink (`crefn-dead-letters` in `knative/`): the Broker adds the
`knativeerrorcode`/`knativeerrordest`/`knativeerrordata` extensions, kept as attributes. Served as the
functions are (functions-framework on the `record` target of `functions.main`, its flags passed as the
`CREFN_RECORD_*` settings, each request through `functions.runtime.server.receive`, with the same limits). Each line
is `{"attributes": ..., "data": ...}`, the format `cre-fn replay` reads (data that is not JSON: the CloudEvent
in its JSON format, `data_base64`); a Pod is kept redacted (`redact`). Written to `--file` (a
`functions.runtime.journal`: fsynced before the 202, 503 when it cannot be written, rotated at `--max-bytes`), then to
`--out`. `event_server` serves a recorder without functions-framework (the local stack's Broker).
What is kept, the file's cap and rotation, the metrics, replaying: docs/operating.md#dead-letters.
"""

from __future__ import annotations

import base64
import json
import logging
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any, TypeGuard

from functions.runtime.codec import MAX_BODY_BYTES, Record, decode
from functions.runtime.errors import PermanentError, TemporaryError, one_line
from functions.runtime.journal import Journal
from functions.runtime.logs import LOGGER, fields
from functions.runtime.metrics import count_dropped, expose_process, set_journal_bytes
from functions.runtime.server import METRICS_PATH, answer_for
from functions.runtime.settings import Settings

DEAD_LETTERS = "dead-letters"
"""The `function` label of the events `record` counts (deployed as crefn-dead-letters)."""
POD_KEPT = {
    "metadata": ("name", "namespace", "uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "labels",
                 "ownerReferences"),
    "spec": ("nodeName",),
    "status": ("phase", "reason", "message", "startTime", "conditions"),
}
"""What a recorded Pod keeps of each part; everything else of it is dropped."""
CONTAINER_KEPT = ("name", "ready", "restartCount", "state", "lastState")
"""What a recorded Pod keeps of each of its (init) container statuses."""
log = logging.getLogger(LOGGER)
REDACTED_POD = ("Pod: kept metadata name, namespace, uid, resourceVersion, timestamps, labels and ownerReferences, "
                "spec.nodeName, status phase, reason, message, startTime, conditions and container states; "
                "dropped the rest")


class JsonlWriter:
    """Appends records to a text stream, one JSON line each, safe across threads."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.count = 0
        self._lock = threading.Lock()

    def __call__(self, record: Record) -> None:
        line = json.dumps(record, separators=(",", ":"))
        with self._lock:
            self.out.write(line + "\n")
            self.out.flush()
            self.count += 1


def is_pod(data: Any) -> TypeGuard[dict[str, Any]]:
    """Whether an event's data is a whole Pod (a Resource-mode ApiServerSource event), not a reference."""
    return isinstance(data, dict) and data.get("apiVersion") == "v1" and data.get("kind") == "Pod" \
        and isinstance(data.get("metadata"), dict)


def redact(record: Record) -> Record:
    """The record as kept: a Pod's data reduced to `POD_KEPT` and `CONTAINER_KEPT`, marked `redacted`;
    any other record as it is."""
    data = record.get("data")
    if not is_pod(data):
        return record
    kept: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod"}
    for part, keys in POD_KEPT.items():
        source = data[part] if isinstance(data.get(part), dict) else {}
        kept[part] = {key: source[key] for key in keys if key in source}
    status = data["status"] if isinstance(data.get("status"), dict) else {}
    for key in ("initContainerStatuses", "containerStatuses"):
        if isinstance(status.get(key), list):
            kept["status"][key] = [{k: c[k] for k in CONTAINER_KEPT if k in c} for c in status[key]
                                   if isinstance(c, dict)]
    return {**record, "data": kept, "redacted": REDACTED_POD}


def to_line(record: Record) -> Record:
    """What a record's line holds: the record, or, when its data is bytes (not JSON), the CloudEvent in
    its JSON format with `data_base64`."""
    data = record.get("data")
    if not isinstance(data, bytes):
        return record
    return {**record["attributes"], "data_base64": base64.b64encode(data).decode()}


class Recorder:
    """Keeps each record, redacted: in the journal (durable) and then in the stream. Returns what it did
    (the 202's reason); raises what the journal raised (503: not written; 413: over the file's cap)."""

    def __init__(self, journal: Journal | None, stream: Callable[[Record], None] | None) -> None:
        self.journal = journal
        self.stream = stream
        if journal is not None:
            set_journal_bytes(str(journal.path), journal.size())
            count_dropped(str(journal.path), 0, 0)  # the series exist, at 0, before the first drop

    def __call__(self, record: Record) -> str:
        kept = redact(record)
        line = to_line(kept)
        if self.journal is not None:
            set_journal_bytes(str(self.journal.path), self.journal.append(line))
        if self.stream is not None:
            self.stream(line)
        return "recorded (Pod redacted)" if kept is not record else "recorded"


def recorder(out: IO[str] | None, file: str | None, max_bytes: int | None = None, keep: int = 0) -> Recorder:
    """What `cre-fn record` records with: the journal at `file` (when given; capped at `max_bytes`, with
    `keep` rotated files), then the stream `out`."""
    journal = None
    if file:
        path = Path(file)
        journal = Journal(path, warn=lambda text: log.warning(text, extra=fields(function=DEAD_LETTERS)),
                          max_bytes=max_bytes, keep=keep,
                          dropped=lambda lines, size: count_dropped(str(path), lines, size))
    return Recorder(journal, JsonlWriter(out) if out is not None else None)


def from_settings(settings: Settings) -> Recorder:
    """The recorder the `CREFN_RECORD_*` settings describe, its `--out` stream opened now (for the process's life)."""
    out = settings.record_out
    stream = sys.stdout if out in ("-", "/dev/stdout") else None if not out else Path(out).open("a")  # noqa: SIM115
    return recorder(stream, settings.record_file or None, settings.record_max_bytes, settings.record_keep)


def event_server(port: int, receive: Callable[[Record], object], host: str = "0.0.0.0") -> ThreadingHTTPServer:
    """An HTTP server handing every POSTed CloudEvent to `receive` (202), or answering 400 (413 past
    the codec's body limit, unread); a `TemporaryError` from `receive` is its answer (503: retry)."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            if length > MAX_BODY_BYTES:
                self.close_connection = True
                self._answer(413, f"request body of {length} bytes is over the limit of {MAX_BODY_BYTES} bytes")
                return
            try:
                record = decode({k.lower(): v for k, v in self.headers.items()}, self.rfile.read(length))
            except PermanentError as e:
                self._answer(400, str(e))
                return
            try:
                receive(record)
            except (PermanentError, TemporaryError) as e:  # a record over the file's cap: 413
                self._answer(answer_for(e) or 503, one_line(str(e)))
                return
            self._answer(202, "")

        def do_GET(self) -> None:
            if self.path != METRICS_PATH:
                self._answer(404, f"not found: the metrics are at {METRICS_PATH}")
                return
            exposition = expose_process(self.headers.get("Accept", ""))
            self.send_response(200)
            self.send_header("content-type", exposition.content_type)
            self.send_header("content-length", str(len(exposition.body)))
            self.end_headers()
            self.wfile.write(exposition.body)

        def _answer(self, status: int, text: str) -> None:
            payload = (text + "\n").encode() if text else b""
            self.send_response(status)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    return ThreadingHTTPServer((host, port), Handler)
