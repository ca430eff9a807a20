"""A stand-in kubelet for the local API server: serves container logs registered in process, so code that
reads `pods/log` goes through the real API path (RBAC on `pods/log` included) with no node agent; and the
Nodes that point the API server at it (`ensure_node`).

Protocol facts relied on (kube-apiserver 1.20): the API server proxies `GET .../pods/P/log` to
`https://<node InternalIP>:<daemonEndpoints.kubeletEndpoint.Port>/containerLogs/<ns>/<pod>/<container>`
without verifying the kubelet's certificate (no `--kubelet-certificate-authority`), with the query sorted
(`limitBytes=…&previous=true&tailLines=…`), and passes the answer through unchanged: the kubelet applies
`sinceTime`, `tailLines`, `timestamps` and `limitBytes` itself. Plain HTTP is refused, hence TLS with a
self-signed certificate for `IP:127.0.0.1`, made by `openssl`. What it answers:
localstack/README.md#the-stand-in-kubelet.
"""

from __future__ import annotations

import contextlib
import ssl
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from functions.domain.gotime import RFC3339_NANO, Unparsed, parse, rfc3339
from functions.runtime.errors import AlreadyExists
from functions.runtime.gateway import Gateway
from functions.runtime.resources import NODES

LogKey = tuple[str, str, str]
TimedLine = tuple[int, str]
"""A log line as the kubelet keeps it: when it was written (nanoseconds since the epoch) and its text (with its
newline)."""
LineSource = Callable[[int], list[TimedLine]]
"""A container still writing: the lines it has written by a time (ns), in order."""


def _ended(line: TimedLine) -> TimedLine:
    at, text = line
    return at, text if text.endswith("\n") else text + "\n"


def tail(text: str, tail_lines: int | None, limit_bytes: int | None) -> bytes:
    """What a kubelet sends for a log: its last `tail_lines` lines, cut to the first `limit_bytes` bytes."""
    if tail_lines is not None:
        text = "".join(text.splitlines(keepends=True)[-tail_lines:]) if tail_lines > 0 else ""
    data = text.encode()
    return data[:limit_bytes] if limit_bytes is not None else data


def served(lines: list[TimedLine], since: int | None, tail_lines: int | None, timestamps: bool,
           limit_bytes: int | None) -> bytes:
    """What a kubelet sends for a log kept with its times: the lines written at or after `since`, their last
    `tail_lines`, each prefixed with its time (RFC 3339 with nanoseconds, as the kubelet writes it) when
    `timestamps`, cut to the first `limit_bytes` bytes."""
    chosen = [(at, text) for at, text in lines if since is None or at >= since]
    if tail_lines is not None:
        chosen = chosen[-tail_lines:] if tail_lines > 0 else []
    data = "".join(f"{rfc3339(at)} {text}" if timestamps else text for at, text in chosen).encode()
    return data[:limit_bytes] if limit_bytes is not None else data


def fed(lines: list[str], now: int) -> list[TimedLine]:
    """Lines given to the stand-in, each with its time: the RFC 3339 time it begins with (followed by a space, as a
    kubelet prints it with `timestamps=true`), taken off the line; else `now` (ns)."""
    timed = []
    for line in lines:
        stamp, _, rest = line.partition(" ")
        try:
            timed.append((parse(RFC3339_NANO, stamp), rest))
        except Unparsed:
            timed.append((now, line))
    return timed


def self_signed_context() -> ssl.SSLContext:
    """A server context with a fresh self-signed certificate for `IP:127.0.0.1` (key files are not kept)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with tempfile.TemporaryDirectory(prefix="crefn-kubelet-") as tmp:
        key, cert = Path(tmp) / "tls.key", Path(tmp) / "tls.crt"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "30",
                        "-subj", "/CN=crefn stand-in kubelet", "-addext", "subjectAltName=IP:127.0.0.1"],
                       check=True, capture_output=True)
        context.load_cert_chain(str(cert), str(key))
    return context


def ensure_node(gw: Gateway, name: str, kubelet_port: int | None = None) -> None:
    """A Node; with `kubelet_port`, its status points the API server at a kubelet on 127.0.0.1 there."""
    with contextlib.suppress(AlreadyExists):
        gw.create(NODES, None, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    if kubelet_port is not None:
        gw.patch(NODES, None, name, {"status": {
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet_port}}}}, status=True)


class StandInKubelet:
    """The log endpoint of a kubelet on 127.0.0.1 (`.port`), serving logs given to `set_log`.

    Use as a context manager, or call start()/stop(). Nodes pointing at it: `register_node`."""

    def __init__(self) -> None:
        self._logs: dict[LogKey, list[TimedLine]] = {}
        self._sources: dict[LogKey, LineSource] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- life cycle ---------------------------------------------------------------------------

    def __enter__(self) -> StandInKubelet:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> StandInKubelet:
        if self._server is None:
            server = _QuietServer(("127.0.0.1", 0), _handler(self))
            # the handshake happens in the request's thread: a slow client does not hold the others
            server.socket = self_signed_context().wrap_socket(server.socket, server_side=True,
                                                              do_handshake_on_connect=False)
            self._server = server
            self._thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True,
                                            name="stand-in-kubelet")
            self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the stand-in kubelet is not started")
        return int(self._server.server_address[1])

    # -- logs and nodes -----------------------------------------------------------------------

    def set_log(self, namespace: str, pod: str, container: str, text: str, at: int = 0) -> None:
        """Register (or replace) the whole log of a container, every line written at `at` (ns; the epoch)."""
        with self._lock:
            self._sources.pop((namespace, pod, container), None)
            self._logs[(namespace, pod, container)] = [(at, line) for line in text.splitlines(keepends=True)]

    def write(self, namespace: str, pod: str, container: str, lines: list[TimedLine]) -> None:
        """Lines the container writes, each with its time (ns since the epoch; a line without its newline gets
        one), after what it wrote before."""
        with self._lock:
            self._logs.setdefault((namespace, pod, container), []).extend(map(_ended, lines))

    def follow(self, namespace: str, pod: str, container: str, source: LineSource) -> None:
        """A container that goes on writing: each read serves, after what it wrote before, the lines `source` says
        it has written by then (the wall clock), until `halt`."""
        with self._lock:
            self._logs.setdefault((namespace, pod, container), [])
            self._sources[(namespace, pod, container)] = source

    def halt(self, namespace: str, pod: str, container: str, at: int) -> None:
        """The followed container stops writing at `at` (ns): what it wrote by then is its log from now on."""
        with self._lock:
            source = self._sources.pop((namespace, pod, container), None)
            if source is not None:
                self._logs.setdefault((namespace, pod, container), []).extend(map(_ended, source(at)))

    def log_of(self, namespace: str, pod: str, container: str) -> str | None:
        lines = self.lines_of(namespace, pod, container)
        return None if lines is None else "".join(text for _, text in lines)

    def lines_of(self, namespace: str, pod: str, container: str) -> list[TimedLine] | None:
        """The container's log as served now (None when it has none)."""
        with self._lock:
            lines, source = self._logs.get((namespace, pod, container)), self._sources.get((namespace, pod, container))
        if lines is None:
            return None
        return [*lines, *map(_ended, source(time.time_ns()))] if source is not None else list(lines)

    def register_node(self, gateway: Gateway, name: str) -> None:
        """A Node whose status sends the API server's log reads to this kubelet."""
        ensure_node(gateway, name, self.port)


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that drops the connection or fails the handshake is not worth a traceback


def _handler(kubelet: StandInKubelet) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        timeout = 30

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            if (key := _container(url.path)) is None:
                self._answer(404, f"404 page not found: {url.path}\n")
                return
            namespace, pod, container = key
            query = parse_qs(url.query)
            lines = kubelet.lines_of(namespace, pod, container)
            since = _time(query, "sinceTime")
            if query.get("previous") == ["true"]:
                self._answer(404, f'previous terminated container "{container}" in pod "{pod}" not found\n')
            elif lines is None:
                self._answer(404, f"container {namespace}/{pod}/{container} has no log on this node\n")
            elif since == -1:
                self._answer(400, f"sinceTime {query['sinceTime'][0]!r} is not an RFC 3339 time\n")
            else:
                self._answer(200, served(lines, since, _number(query, "tailLines"),
                                         query.get("timestamps") == ["true"], _number(query, "limitBytes")))

        def do_POST(self) -> None:
            """The stand-in's own feed (no kubelet has one): the body's lines appended to the container's log, each
            at the RFC 3339 time it begins with (as `timestamps=true` prints them), else at the time it arrives."""
            if (key := _container(urlsplit(self.path).path)) is None:
                self._not_found()
                return
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode(errors="replace")
            namespace, pod, container = key
            lines = fed(body.splitlines(), time.time_ns())
            kubelet.write(namespace, pod, container, lines)
            self._answer(200, f"{len(lines)} lines appended to {namespace}/{pod}/{container}\n")

        def _not_found(self) -> None:
            self._answer(404, f"404 page not found: {self.command} {urlsplit(self.path).path}\n")

        do_PUT = do_PATCH = do_DELETE = do_HEAD = _not_found

        def _answer(self, status: int, body: str | bytes) -> None:
            data = body.encode() if isinstance(body, str) else body
            self.send_response(status)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


def _container(path: str) -> LogKey | None:
    """The container a `/containerLogs/<ns>/<pod>/<container>` path names (None for any other path)."""
    parts = [unquote(p) for p in path.split("/")]
    return (parts[2], parts[3], parts[4]) if len(parts) == 5 and parts[:2] == ["", "containerLogs"] else None


def _time(query: dict[str, list[str]], key: str) -> int | None:
    """An RFC 3339 time of the query as nanoseconds; None when absent, -1 when unreadable."""
    if key not in query:
        return None
    try:
        return parse(RFC3339_NANO, query[key][0])
    except Unparsed:
        return -1


def _number(query: dict[str, list[str]], key: str) -> int | None:
    with contextlib.suppress(KeyError, IndexError, ValueError):
        return int(query[key][0])
    return None
