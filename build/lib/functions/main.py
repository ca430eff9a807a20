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


def serve(request: Any, name: str, handle: Any) -> Any:
    ctx = context()
    return transport.respond(request, lambda env: handle(env, ctx), name)


@functions_framework.http
def phase(request: Any) -> Any:
    return serve(request, "phase", phase_fn.handle)


@functions_framework.http
def launch(request: Any) -> Any:
    return serve(request, "launch", launch_fn.handle)


@functions_framework.http
def status(request: Any) -> Any:
    return serve(request, "status", status_fn.handle)


@functions_framework.http
def restart(request: Any) -> Any:
    return serve(request, "restart", restart_fn.handle)


@functions_framework.http
def resync(request: Any) -> Any:
    return serve(request, "resync", resync_fn.handle)


@functions_framework.http
def workloadrun(request: Any) -> Any:
    return serve(request, "workloadrun", workloadrun_fn.handle)


@functions_framework.http
def alert(request: Any) -> Any:
    return serve(request, "alert", alert_fn.handle)
