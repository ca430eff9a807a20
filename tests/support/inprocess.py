"""A function target served in this process: the same Flask view functions-framework serves (one request
in, `functions.main.responder_with` out), on a loopback port, by a threaded WSGI server.

`make mutation` serves the functions this way (`CREFN_TEST_IN_PROCESS`): a mutant is switched on, and
the tests that reach it are traced, only in the process that runs the tests. A child process would run
the original code and its calls would be credited to no test. Everything between the HTTP request
and the answer is the product's code; what is not there is gunicorn and a process of its own, so
tests that kill the process or read its log file are left out of that run."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import flask
from werkzeug.serving import BaseWSGIServer, make_server

_ENVIRON = threading.Lock()


@contextmanager
def environ(env: Mapping[str, str]) -> Iterator[None]:
    """os.environ without CREFN_*, KUBECONFIG and K_SINK, plus `env`, for as long as the block runs."""
    saved = dict(os.environ)
    with _ENVIRON:
        try:
            for key in list(os.environ):
                if key.startswith("CREFN_") or key in ("KUBECONFIG", "K_SINK"):
                    del os.environ[key]
            os.environ.update(env)
            yield
        finally:
            os.environ.clear()
            os.environ.update(saved)


class InProcessFunction:
    """ServedFunction's interface (start, url, terminate, stop) for a target served by a thread."""

    def __init__(self, target: str, env: Mapping[str, str] | None = None, log_path: Path | None = None,
                 clock: Callable[[], datetime] | None = None) -> None:
        """`clock`: the time the function decides with (the Context's), when a test fixes it."""
        self.target = target
        self.env = dict(env or {})
        self.log_path = log_path
        self.clock = clock
        self.port = 0
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None
        self._ctx: Any = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self) -> InProcessFunction:
        from functions.main import responder_with
        from functions.runtime.context import Context
        from functions.runtime.settings import Settings

        with environ(self.env):
            self._ctx = Context(Settings(), **({"clock": self.clock} if self.clock else {}))
        respond = responder_with(self.target, self._ctx)
        app = flask.Flask(f"crefn-{self.target}")

        @app.route("/", defaults={"path": ""}, methods=["GET", "POST", "PUT", "DELETE", "PATCH"])
        @app.route("/<path:path>", methods=["GET", "POST", "PUT", "DELETE", "PATCH"])
        def view(path: str) -> Any:
            return respond(flask.request)

        self._server = make_server("127.0.0.1", 0, app, threaded=True)
        self.port = self._server.server_port
        self._thread = threading.Thread(target=self._server.serve_forever, name=f"crefn-{self.target}",
                                        daemon=True)
        self._thread.start()
        return self

    def terminate(self) -> None:
        if self._server is not None:
            self._server.shutdown()

    def stop(self) -> None:
        self.terminate()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._server is not None:
            self._server.server_close()
        if self._ctx is not None and self._ctx._gateway is not None:
            self._ctx._gateway.close()
        self._server = self._thread = self._ctx = None
