"""`cre-fn record`: an HTTP CloudEvents sink that appends every event it receives to JSONL.

Deployed as the Broker's dead-letter sink (`crefn-dead-letters` in `knative/`): the Broker adds the
`knativeerrorcode`/`knativeerrordest`/`knativeerrordata` extensions, kept as attributes. Also useful
to capture production traffic. Binary and structured mode are accepted (the transport's codec); each
line is `{"attributes": ..., "data": ...}`, the format `cre-fn replay` reads. Answers 202 to a
CloudEvent, 400 with a one-line reason to anything else.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any

from functions.errors import PermanentError
from functions.transport import decode

Record = dict[str, Any]


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
        server = event_server(port, JsonlWriter(out), host)
        stack.callback(server.server_close)
        print(f"recording CloudEvents on http://{host}:{port}/ to {out_path}", file=sys.stderr, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()
    return 0
