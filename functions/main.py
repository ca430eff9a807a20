"""Function targets served by functions-framework (SPEC §5), one per entry of `functions.registry`:

    functions-framework --source functions/main.py --target phase

Each target is a plain HTTP function; `functions.runtime.server` parses the CloudEvent, maps the outcome to Knative's
retry API and answers `GET /metrics`. Two more targets handle no event of their own: `metrics` (on `GET
/metrics`, the managed Jobs' state from one LIST served by the API server's watch cache) and `record` (the
dead-letter recorder, `functions.runtime.deadletters`). Importing this module loads functions-framework and
`functions.registry` only (it runs in gunicorn's arbiter, before the fork); when the target is looked up, a child
of the arbiter checks the settings and logs what runs, once (`start`), so the arbiter loads neither; the server,
the settings and the target's handler are built on the worker's first request.
What is loaded where, and why: docs/architecture.md#processes-what-each-one-loads.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import importlib
import logging
import os
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import functions_framework

from functions.registry import HANDLERS, METRICS, RECORD, SERVED

if TYPE_CHECKING:
    from functions.runtime.context import Context
    from functions.runtime.metrics import Exposition

_lock = threading.Lock()
LISTENING = ("functions_framework._http.gunicorn", "encodings.idna")
"""What the arbiter imports next, to listen (functions-framework's gunicorn application, with gunicorn's arbiter and
threaded worker; the codec `getaddrinfo` encodes the host with): imported while the settings are checked."""


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
    """What serves the target's requests, made on the first one (the imports happen here), with the garbage
    collector paused: what importing makes lives as long as the process, so a collection meanwhile finds next to
    nothing (about 30 ms of a `phase` worker's first request went to them); once built, it is frozen
    (`gc.freeze`), so that later collections do not walk it again."""
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
    """An HTTP function for functions-framework, registered under the target's name, once the settings are
    checked and what runs is said (`start`)."""
    start(name)

    def respond(request: Any) -> Any:
        return responder(name)(request)

    respond.__name__ = respond.__qualname__ = name
    return functions_framework.http(respond)


def start(name: str) -> None:
    """Check the settings and say what runs (`say_start`) before the server listens, in a child process: checking
    them loads pydantic and the settings (about 9 MiB), which the arbiter would otherwise hold, and every worker it
    forks inherit, for its whole life. Settings that cannot be used: the child's one CRITICAL line, and exit 1."""
    sys.stdout.flush()
    sys.stderr.flush()
    checker = os.fork()
    if checker == 0:  # the child checks, says, and exits without running anything of the arbiter's
        gc.disable()  # it exits at once: nothing to collect
        code = 1
        try:
            code = say_start(name)
        except BaseException:  # a bug: its traceback, and the start fails as it did in the arbiter
            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(code)
    for module in LISTENING:  # meanwhile, on the other core
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
    if os.waitstatus_to_exitcode(os.waitpid(checker, 0)[1]) != 0:
        raise SystemExit(1)


def say_start(name: str) -> int:
    """Check the settings and log what runs: one line with the version, the target and the effective settings
    (secrets redacted), then one line per `CREFN_*` variable no setting reads (a typo keeps the default: said,
    not refused, since a revision rolled back may meet a variable a newer release added); 0. Settings that
    cannot be used: one CRITICAL line naming what is wrong; 1."""
    from functions.runtime.environment import shown, unknown_variables
    from functions.runtime.logs import announce, configure
    from functions.runtime.settings import InvalidSettings, load_settings
    from functions.runtime.version import version

    try:
        settings = load_settings()
    except InvalidSettings as e:
        configure("INFO")
        announce(logging.CRITICAL, str(e), function=name)
        return 1
    configure(settings.log_level)
    announce(logging.INFO, f"cre-functions {version()} serving {name} in {settings.mode} mode", function=name,
             version=version(), revision=settings.revision, mode=settings.mode, settings=shown(settings))
    for variable, near in unknown_variables():
        guess = f" (did you mean {near}?)" if near else ""
        announce(logging.WARNING, f"unknown variable {variable}: no setting reads it, ignored{guess}", function=name,
                 variable=variable)
    return 0


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
