"""Function targets served by functions-framework (SPEC §5):

    functions-framework --source functions/main.py --target phase

Each target is a plain HTTP function; the transport parses the CloudEvent and maps the outcome to
Knative's retry API. Settings and the Kubernetes connection are built once per process, on the first
request, never at import time.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from typing import Any

import functions_framework

from functions import alert as alert_fn
from functions import launch as launch_fn
from functions import phase as phase_fn
from functions import restart as restart_fn
from functions import resync as resync_fn
from functions import status as status_fn
from functions import transport
from functions import workloadrun as workloadrun_fn
from functions.context import Context
from functions.outcome import Envelope, Outcome
from functions.settings import Settings


@functools.cache
def context() -> Context:
    settings = Settings()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    log = logging.getLogger("crefn")
    log.handlers[:] = [handler]
    log.setLevel(settings.log_level)
    log.propagate = False
    return Context(settings)


Handle = Callable[[Envelope, Context], Outcome]


def target(name: str, handle: Handle) -> Callable[[Any], Any]:
    """An HTTP function for functions-framework, registered under `name`."""

    def serve(request: Any) -> Any:
        ctx = context()
        return transport.respond(request, lambda env: handle(env, ctx), name)

    serve.__name__ = serve.__qualname__ = name
    return functions_framework.http(serve)


phase = target("phase", phase_fn.handle)
launch = target("launch", launch_fn.handle)
status = target("status", status_fn.handle)
restart = target("restart", restart_fn.handle)
resync = target("resync", resync_fn.handle)
workloadrun = target("workloadrun", workloadrun_fn.handle)
alert = target("alert", alert_fn.handle)
