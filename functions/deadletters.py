"""`cre-fn record`: an HTTP CloudEvents sink that appends every event it receives to JSONL.

Deployed as the Broker's dead-letter sink (`crefn-dead-letters` in `knative/`): the Broker adds the
`knativeerrorcode`/`knativeerrordest`/`knativeerrordata` extensions, kept as attributes. Also useful
to capture production traffic. Binary and structured mode are accepted (the transport's codec); each
line is `{"attributes": ..., "data": ...}`, the format `cre-fn replay` reads.

Two places, in this order: `--file` (a `functions.journal`, durable: the line is fsynced before the
answer) and `--out` (a stream, stdout for log collectors). Answers 202 once both have the event, 503
with a one-line reason when the file cannot be written (the Broker retries: nothing is lost), 400 to
what is not a CloudEvent. Each event is counted as `crefn_events_total{function="dead-letters", type,
answer}` (`functions.metrics`; a type of ours or Knative's by name, any other as `other`), the file's
size as `crefn_dead_letters_file_bytes`, and `GET /metrics` answers the process's metrics: the
monitoring overlay's "dead letters" alert reads them.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any

from functions.errors import PermanentError, TemporaryError
from functions.journal import Journal
from functions.metrics import count_event, expose_process, set_journal_bytes
from functions.transport import KNOWN_TYPES, METRICS_PATH, answer_for, decode, one_line

Record = dict[str, Any]
DEAD_LETTERS = "dead-letters"
"""The `function` label of the events `record` counts (deployed as crefn-dead-letters)."""


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


class Recorder:
    """Appends each record to the journal (durable) and then to the stream, and counts it: 202 when
    both have it, 503 when the journal could not take it (raised, for the server to answer)."""

    def __init__(self, journal: Journal | None, stream: Callable[[Record], None] | None) -> None:
        self.journal = journal
        self.stream = stream
        if journal is not None:
            set_journal_bytes(str(journal.path), journal.size())

    def __call__(self, record: Record) -> None:
        started = time.monotonic()
        event_type = str(record["attributes"].get("type"))
        label = event_type if event_type in KNOWN_TYPES else "other"
        try:
            if self.journal is not None:
                set_journal_bytes(str(self.journal.path), self.journal.append(record))
        except TemporaryError as e:
            count_event(DEAD_LETTERS, label, answer_for(e) or 503, time.monotonic() - started)
            raise
        if self.stream is not None:
            self.stream(record)
        count_event(DEAD_LETTERS, label, 202, time.monotonic() - started)


def event_server(port: int, receive: Callable[[Record], None], host: str = "0.0.0.0") -> ThreadingHTTPServer:
    """An HTTP server handing every POSTed CloudEvent to `receive` (202), or answering 400; a
    `TemporaryError` from `receive` is its answer (503: retry)."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                record = decode({k.lower(): v for k, v in self.headers.items()}, body)
            except PermanentError as e:
                self._answer(400, str(e))
                return
            try:
                receive(record)
            except TemporaryError as e:
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


def recorder(out: IO[str] | None, file: str | None) -> Recorder:
    """What `cre-fn record` records with: the journal at `file` (when given), then the stream `out`."""
    journal = Journal(Path(file), warn=lambda text: print(f"cre-fn record: {text}", file=sys.stderr, flush=True)) \
        if file else None
    return Recorder(journal, JsonlWriter(out) if out is not None else None)


def run(port: int, out_path: str, host: str = "0.0.0.0", file: str | None = None) -> int:
    with contextlib.ExitStack() as stack:
        out: IO[str] | None = (sys.stdout if out_path in ("-", "/dev/stdout") else None if out_path == ""
                               else stack.enter_context(Path(out_path).open("a")))
        server = event_server(port, recorder(out, file), host)
        stack.callback(server.server_close)
        where = " and ".join(w for w in (file, out_path) if w)
        print(f"recording CloudEvents on http://{host}:{port}/ to {where}", file=sys.stderr, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()
    return 0
