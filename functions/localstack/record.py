"""`cre-fn record`: an HTTP CloudEvents sink that appends every event it receives to JSONL.

Binary and structured mode are accepted; each line is `{"attributes": ..., "data": ...}`, the format
`cre-fn replay` and `events/samples/` use. Use it as a Knative dead-letter sink (the Broker adds the
`knativeerrorcode`/`knativeerrordest`/`knativeerrordata` extensions, kept as attributes) or to
capture production traffic. Answers 202 to a CloudEvent, 400 to anything else.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Protocol

from functions.localstack.client import parse_record


class Recorder:
    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.count = 0
        self._lock = threading.Lock()

    def write(self, headers: dict[str, str], body: bytes) -> None:
        record = parse_record(headers, body)
        line = json.dumps(record, separators=(",", ":"))
        with self._lock:
            self.out.write(line + "\n")
            self.out.flush()
            self.count += 1


class Sink(Protocol):
    def write(self, headers: dict[str, str], body: bytes) -> None: ...


def make_server(port: int, recorder: Sink, host: str = "0.0.0.0") -> ThreadingHTTPServer:
    """An HTTP server handing every POSTed CloudEvent to `recorder.write` (202), or answering 400."""
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                recorder.write({k.lower(): v for k, v in self.headers.items()}, body)
            except (ValueError, KeyError) as e:
                self._answer(400, f"not a CloudEvent: {e}")
                return
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
        server = make_server(port, Recorder(out), host)
        stack.callback(server.server_close)
        print(f"recording CloudEvents on http://{host}:{port}/ to {out_path}", file=sys.stderr, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()
    return 0
