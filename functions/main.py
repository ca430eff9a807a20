"""Function targets served by functions-framework (SPEC §5), one per entry of `functions.registry`:

    functions-framework --source functions/main.py --target phase

Each target is a plain HTTP function; `functions.runtime.server` parses the CloudEvent, maps the outcome to Knative's
retry API and answers `GET /metrics`. Two more targets handle no event of their own: `metrics` (on `GET
/metrics`, the managed Jobs' state from one LIST served by the API server's watch cache) and `record` (the
dead-letter recorder, `functions.runtime.deadletters`). Importing this module loads functions-framework and
`functions.registry` only (it runs in gunicorn's arbiter, before the fork); the worker builds the server, the
settings and the target's handler as it starts, says what runs (once), and only then is the port listened on
(`start`).
What is loaded where, and why: docs/architecture.md#processes-what-each-one-loads.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import logging
import os
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import functions_framework

from functions.registry import HANDLERS, METRICS, ONE_AT_A_TIME, RECORD, SERVED

if TYPE_CHECKING:
    from functions.runtime.context import Context
    from functions.runtime.metrics import Exposition
    from functions.runtime.settings import Settings

_lock = threading.Lock()
KEEP_ALIVE_SECONDS = 120
"""How long a connection may wait idle for its next request: longer than Knative's queue-proxy and activator keep an
idle connection to the container (Go's default transport: 90 s), so that they always close first. A server that
closes first races a request the proxy sends on that connection at the same moment, which the proxy answers 502
(knative/serving#12414). gunicorn's default is 2 s."""


@functools.cache
def context() -> Context:
    from functions.runtime.context import Context
    from functions.runtime.logs import configure
    from functions.runtime.settings import load_settings

    settings = load_settings()
    configure(settings.log_level)
    return Context(settings)


@functools.cache
def responder(name: str) -> Callable[[Any], Any]:
    """What serves the target's requests, made as the worker starts (`build_in_worker`; on the first request where
    no gunicorn hook ran), with the garbage collector paused: what importing makes lives as long as the process, so
    a collection meanwhile finds next to nothing (about 30 ms of a `phase` worker's build went to them); once built,
    it is frozen (`gc.freeze`), so that later collections do not walk it again."""
    with _lock, paused_collector():  # one thread builds the settings and the connection; the others wait for them
        return responder_with(name, context())


@contextlib.contextmanager
def paused_collector() -> Iterator[None]:
    """The garbage collector off, then what exists frozen and the collector as it was."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def responder_with(name: str, ctx: Context) -> Callable[[Any], Any]:
    """What serves the target's requests with this context: a Flask request in, a Flask response out."""
    from functions.runtime import server
    from functions.runtime.metrics import set_build_info
    from functions.runtime.version import version

    set_build_info(version(), ctx.settings.revision, ctx.settings.mode)

    if name == METRICS:
        return lambda request: server.scrape(request, lambda accept: scrape_jobs(accept, ctx), name)
    if name == RECORD:
        from functions.runtime import deadletters

        recorder = deadletters.from_settings(ctx.settings)
        return lambda request: server.receive(request, recorder, deadletters.DEAD_LETTERS)
    from functions.registry import TARGETS, start

    target = TARGETS[name]
    start(name, ctx.settings)
    return lambda request: server.respond(request, lambda env: target.handle(env, ctx), name)


def scrape_jobs(accept: str, ctx: Context) -> Exposition:
    """The managed Jobs' state (`crefn.dev/managed=true`, or every Job with `CREFN_MANAGE_ALL`), read now from
    the API server's watch cache (`functions.runtime.reads.cached_jobs`)."""
    from events.types import MANAGED_LABEL
    from functions.runtime.metrics import expose_jobs
    from functions.runtime.reads import cached_jobs

    selector = "" if ctx.settings.manage_all else f"{MANAGED_LABEL}=true"
    return expose_jobs(cached_jobs(ctx, selector), accept, ctx.settings.cre_group)


def serve(name: str) -> Callable[[Any], Any]:
    """An HTTP function for functions-framework, registered under the target's name; its worker builds it, checks
    the settings and says what runs before the port listens (`start`)."""
    start(name)

    def respond(request: Any) -> Any:
        return responder(name)(request)

    respond.__name__ = respond.__qualname__ = name
    return functions_framework.http(respond)


def start(name: str) -> None:
    """In the arbiter, when functions-framework looks the target up: the port it is about to open bound but not
    listened on, and its worker told to build the target first (`build_in_worker`, gunicorn's `post_fork` hook).
    The worker builds it (the settings, the server, the handler: pydantic and the catalog, which the arbiter never
    loads, so neither holds them twice), says what runs, then listens on the arbiter's socket: a Knative Service's
    readiness probe (a TCP connection) passes only once the settings are known good and a request is served at
    once; the first request does not wait for the imports. Settings that cannot be used: the worker's one CRITICAL
    line, and the arbiter exits 1 (`await_verdict`) before the port ever listened; the worker follows it. A target
    of `ONE_AT_A_TIME` is served one request at a time, unless `THREADS` says otherwise, and so is any target given
    `THREADS=1` (`one_at_a_time_worker`: its connections kept alive, as the threaded worker keeps them, where
    gunicorn's sync worker closes each after its answer); an idle connection is kept `KEEP_ALIVE_SECONDS`.
    gunicorn's control socket (a thread with asyncio in the arbiter, a socket under `$HOME`) is not started: a pod is
    controlled by Kubernetes, and it cost the arbiter 1.7 MiB, and CPU on the other core while the worker builds."""
    import gunicorn.config
    import gunicorn.sock

    telling = token = -1  # the pipes of a gunicorn arbiter that serves (`on_starting`): a lookup alone opens none

    def on_starting(server: Any) -> None:
        nonlocal telling, token
        failed, telling = os.pipe()
        token, giving = os.pipe()
        os.write(giving, b"!")  # whoever takes it says what runs: once for the arbiter's life
        os.close(giving)
        os.set_blocking(token, False)
        threading.Thread(target=await_verdict, args=(failed,), name="crefn-start", daemon=True).start()
        server.cfg.set("keepalive", KEEP_ALIVE_SECONDS)
        if name in ONE_AT_A_TIME and "THREADS" not in os.environ:  # functions-framework's default is 4 per CPU
            server.cfg.set("threads", 1)
        if server.cfg.threads == 1 and server.cfg.worker_class_str == "sync":  # one thread, and no worker chosen
            server.cfg.set("worker_class", one_at_a_time_worker())
            server.worker_class = server.cfg.worker_class

    def post_fork(server: Any, worker: Any) -> None:
        build_in_worker(name, worker, telling, token)

    gunicorn.config.OnStarting.default = staticmethod(on_starting)
    gunicorn.config.Postfork.default = staticmethod(post_fork)
    gunicorn.config.ControlSocketDisable.default = True  # gunicorn's control socket: see above
    gunicorn.sock.BaseSocket._is_listening = staticmethod(lambda sock: True)  # so it binds, and does not listen


def one_at_a_time_worker() -> type[Any]:
    """gunicorn's threaded worker with each request served on the thread that polls the connections, so one at a
    time and nothing handed between threads, and each connection kept alive for the next request
    (`KEEP_ALIVE_SECONDS`). gunicorn's sync worker, which also serves one request at a time, closes every connection
    after its answer and then waits for the client to close its side, so a proxy or a client that sends many
    events opened a connection for each (docs/cost.md#what-a-process-loads: about a fifth more `phase` events a
    second from the same worker, 11 % less CPU each). A new connection whose request has not arrived yet waits in the
    poller, as the threaded worker's does, never holding the thread; one that stalls mid-request holds it for
    `CREFN_CLIENT_STALL_SECONDS` at most (`build_in_worker`). Made when the arbiter starts serving: gunicorn's
    threaded worker is imported then, never by a lookup alone."""
    from concurrent.futures import Future

    from gunicorn.workers import gthread

    class OneAtATime(gthread.ThreadWorker):  # type: ignore[misc]
        def enqueue_req(self, conn: Any) -> None:
            done: Future[Any] = Future()
            if conn.initialized or conn.wait_for_data(0):  # kept alive, or its request (or its close) is here
                done.set_result(self.handle(conn))  # it answers every Exception itself, as in a pool thread
            else:
                done.set_result(gthread._DEFER)  # to the poller, until the request arrives
            self.finish_request(conn, done)

    return OneAtATime


def await_verdict(failed: int) -> None:
    """The arbiter's side: a worker that cannot serve says so on this pipe, and the arbiter exits 1 at once,
    before gunicorn would boot another worker to fail the same way (the worker waits for it, then exits too)."""
    if os.read(failed, 1):
        os._exit(1)


def build_in_worker(name: str, worker: Any, telling: int, token: int) -> None:
    """In a worker just forked, before it accepts: the target built (`responder`), what runs said (by the first
    worker to serve only), then the arbiter's sockets listened on, a connection's receive and send bounded by
    `CREFN_CLIENT_STALL_SECONDS` (a blocked call then fails, and the connection is dropped). A stop meanwhile stops
    it at once (it holds the arbiter's signal handlers, which would swallow it, until gunicorn sets its own).
    Settings that cannot be used: one CRITICAL line naming what is wrong; a build that fails otherwise: one
    CRITICAL line, its traceback in `trace`; either way the arbiter is told, and the worker exits 1 once the
    arbiter has."""
    for stop in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT):
        signal.signal(stop, signal.SIG_DFL)
    arbiter = os.getppid()
    try:
        responder(name)
        settings = context().settings
        with contextlib.suppress(BlockingIOError):
            if os.read(token, 1):
                say_start(name, settings)
    except BaseException as e:  # the start fails, whatever failed: one line says why
        from functions.runtime.errors import one_line
        from functions.runtime.logs import announce, configure
        from functions.runtime.settings import InvalidSettings

        configure("INFO")
        if isinstance(e, InvalidSettings):
            announce(logging.CRITICAL, str(e), function=name)
        else:
            announce(logging.CRITICAL, f"cannot serve {name}: {type(e).__name__}: {one_line(str(e))}", e,
                     function=name)
        sys.stderr.flush()
        os.write(telling, b"\1")
        while os.getppid() == arbiter:
            time.sleep(0.005)
        os._exit(1)
    stall = struct.pack("ll", *divmod(int(settings.client_stall_seconds * 1_000_000), 1_000_000))
    for listener in worker.sockets:  # each connection accepted inherits the bounds of a receive and a send
        listener.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, stall)
        listener.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, stall)
        listener.sock.listen(worker.cfg.backlog)


def say_start(name: str, settings: Settings) -> None:
    """Log what runs: one line with the version, the target and the effective settings (secrets redacted), then
    one line per `CREFN_*` variable no setting reads (a typo keeps the default: said, not refused, since a revision
    rolled back may meet a variable a newer release added)."""
    from functions.runtime.environment import shown, unknown_variables
    from functions.runtime.logs import announce
    from functions.runtime.version import version

    announce(logging.INFO, f"cre-functions {version()} serving {name} in {settings.mode} mode", function=name,
             version=version(), revision=settings.revision, mode=settings.mode, settings=shown(settings))
    for variable, near in unknown_variables():
        guess = f" (did you mean {near}?)" if near else ""
        announce(logging.WARNING, f"unknown variable {variable}: no setting reads it, ignored{guess}", function=name,
                 variable=variable)


def __getattr__(name: str) -> Callable[[Any], Any]:
    """functions-framework looks the target up by name (PEP 562)."""
    if name not in SERVED and name != RECORD:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    with _lock:
        if name not in globals():
            globals()[name] = serve(name)
    function: Callable[[Any], Any] = globals()[name]
    return function


def __dir__() -> list[str]:
    return sorted({*globals(), *HANDLERS, METRICS, RECORD})
