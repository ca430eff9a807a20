"""`cre-fn record`: an HTTP CloudEvents sink that appends every event it receives to JSONL.

Deployed as the Broker's dead-letter sink (`crefn-dead-letters` in `knative/`): the Broker adds the
`knativeerrorcode`/`knativeerrordest`/`knativeerrordata` extensions, kept as attributes. Also useful
to capture production traffic. Binary and structured mode are accepted (the transport's codec); each
line is `{"attributes": ..., "data": ...}`, the format `cre-fn replay` reads. Answers 202 to a
CloudEvent, 400 with a one-line reason to anything else. Each event recorded is counted as
`crefn_events_total{function="dead-letters", type, answer="202"}` (`functions.metrics`; a type of
ours or Knative's by name, any other as `other`), and `GET /metrics` answers the process's counters:
the monitoring overlay's "dead letters" alert reads them.
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

from functions.errors import PermanentError
from functions.metrics import count_event, expose_process
from functions.transport import KNOWN_TYPES, METRICS_PATH, decode

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


class Counted:
    """Hands each record on, then counts it as a dead letter answered 202."""

    def __init__(self, receive: Callable[[Record], None]) -> None:
        self.receive = receive

    def __call__(self, record: Record) -> None:
        started = time.monotonic()
        self.receive(record)
        event_type = str(record["attributes"].get("type"))
        count_event(DEAD_LETTERS, event_type if event_type in KNOWN_TYPES else "other", 202,
                    time.monotonic() - started)


def event_server(port: int, receive: Callable[[Record], None], host: str = "0.0.0.0") -> ThreadingHTTPServer:
    """An HTTP server handing every POSTed CloudEvent to `receive` (202), or answering 400."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                record = decode({k.lower(): v for k, v in self.headers.items()}, body)
            except PermanentError as e:
                self._answer(400, str(e))
                return
            receive(record)
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


def run(port: int, out_path: str, host: str = "0.0.0.0") -> int:
    with contextlib.ExitStack() as stack:
        out: IO[str] = (sys.stdout if out_path in ("-", "/dev/stdout")
                        else stack.enter_context(Path(out_path).open("a")))
        server = event_server(port, Counted(JsonlWriter(out)), host)
        stack.callback(server.server_close)
        print(f"recording CloudEvents on http://{host}:{port}/ to {out_path}", file=sys.stderr, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()
    return 0
