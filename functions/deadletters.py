"""`cre-fn record`: an HTTP CloudEvents sink that keeps every event it receives as JSON lines.

Deployed as the Broker's dead-letter sink (`crefn-dead-letters` in `knative/`): the Broker adds the
`knativeerrorcode`/`knativeerrordest`/`knativeerrordata` extensions, kept as attributes. Also useful
to capture production traffic.

Served as the functions are: `cre-fn record` runs functions-framework (gunicorn, one worker) on the
`record` target of `functions.main`, its flags passed as the `CREFN_RECORD_*` settings, and each
request goes through `functions.server.receive`: binary and structured mode, the same limits
(a body over `MAX_BODY_BYTES` is 413 before it is read, gunicorn's header limits), 400 to what is
not a CloudEvent, one JSON log line and `crefn_events_total{function="dead-letters", type, answer}`
per request, and `GET /metrics` with the process's metrics (the monitoring overlay's "dead letters"
alert reads them). Each line is `{"attributes": ..., "data": ...}`, the format `cre-fn replay` reads;
data that is not JSON is kept as the CloudEvent in its JSON format (`data_base64`), which it reads too.

What is kept (`redact`): a Pod (the `crefn-pods` ApiServerSource sends whole ones) keeps only what an
operator reads and `phase` acts on when it is replayed: apiVersion and kind, metadata name,
namespace, uid, resourceVersion, creation and deletion time, labels and ownerReferences,
spec.nodeName, and status phase, reason, message, startTime, conditions and each container's name,
ready, restartCount, state and lastState (exit code, reason, termination message); its spec (env
values, commands, volumes), annotations and managedFields are dropped, and the line says so
(`"redacted"`). Every other kind is kept whole: the sources watch TrainJobs, CRE Jobs, WorkloadRuns,
GoodputMeasurements and Nodes (never Secrets), objects users write and handlers read whole on replay.

Two places, in this order: `--file` (a `functions.journal`, durable: the line is fsynced before the
answer) and `--out` (a stream, stdout for log collectors). Answers 202 once both have the event, 503
with a one-line reason when the file cannot be written (the Broker retries: nothing is lost). The
file has a cap (`--max-bytes`): it rotates before a line would pass it, `--keep` rotated files are
kept and the oldest beyond them is dropped, counted as `crefn_dead_letters_dropped_total` and
`crefn_dead_letters_dropped_bytes_total` and logged; the stream still had every one of its lines.
Rotating rather than refusing when full: a full recorder answering 503 would have the Broker drop the
newest dead letters after its retries, unseen by us, and keep doing so until someone empties the
volume; rotation keeps the newest, bounds the disk ((keep + 1) times max-bytes) and says what it dropped.
A single record longer than the cap is refused (413). The current file's size is
`crefn_dead_letters_file_bytes`.

`event_server` serves a recorder, or any receiver of records, on a thread without functions-framework
(the same codec, the same body limit): the local dev stack's Broker ingress and its dead-letter sink
(`localstack.eventing.broker`).
"""

from __future__ import annotations

import base64
import json
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any, TypeGuard

from functions.codec import MAX_BODY_BYTES, decode, one_line
from functions.errors import PermanentError, TemporaryError
from functions.journal import Journal
from functions.metrics import count_dropped, expose_process, set_journal_bytes
from functions.server import METRICS_PATH, answer_for
from functions.settings import Settings

Record = dict[str, Any]
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
        journal = Journal(path, warn=lambda text: print(f"cre-fn record: {text}", file=sys.stderr, flush=True),
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
