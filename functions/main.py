"""Function targets served by functions-framework (SPEC §5), one per entry of `functions.registry`:

    functions-framework --source functions/main.py --target phase

Each target is a plain HTTP function; the transport parses the CloudEvent and maps the outcome to
Knative's retry API, and answers `GET /metrics` with the process's metrics. The `metrics` target
handles no event: on `GET /metrics` it lists the managed Jobs (one paged LIST across namespaces) and
answers with their state. Settings and the Kubernetes connection are built once per process, on the
first request, never at import time.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from typing import Any

import functions_framework

from events.types import MANAGED_LABEL
from functions import transport
from functions.context import Context
from functions.metrics import Exposition, expose_jobs
from functions.registry import METRICS, TARGETS, Target
from functions.resources import cre_jobs
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


def serve(target: Target) -> Callable[[Any], Any]:
    """An HTTP function for functions-framework, registered under the target's name."""

    def respond(request: Any) -> Any:
        ctx = context()
        return transport.respond(request, lambda env: target.handle(env, ctx), target.name)

    respond.__name__ = respond.__qualname__ = target.name
    return functions_framework.http(respond)


def scrape_jobs(accept: str) -> Exposition:
    """The managed Jobs' state (`crefn.dev/managed=true`, or every Job with `CREFN_MANAGE_ALL`), read now."""
    ctx = context()
    selector = "" if ctx.settings.manage_all else f"{MANAGED_LABEL}=true"
    return expose_jobs(ctx.gateway.list_all(cre_jobs(ctx.settings.cre_group), None, label_selector=selector), accept)


def scraped(name: str, collect: Callable[[str], Exposition]) -> Callable[[Any], Any]:
    """An HTTP function for functions-framework that answers Prometheus scrapes only."""

    def respond(request: Any) -> Any:
        return transport.scrape(request, collect, name)

    respond.__name__ = respond.__qualname__ = name
    return functions_framework.http(respond)


phase = serve(TARGETS["phase"])
launch = serve(TARGETS["launch"])
status = serve(TARGETS["status"])
restart = serve(TARGETS["restart"])
timeout = serve(TARGETS["timeout"])
measurements = serve(TARGETS["measurements"])
nodehealth = serve(TARGETS["nodehealth"])
validate = serve(TARGETS["validate"])
resync = serve(TARGETS["resync"])
workloadrun = serve(TARGETS["workloadrun"])
alert = serve(TARGETS["alert"])
metrics = scraped(METRICS, scrape_jobs)
