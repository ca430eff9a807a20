"""Log lines: one JSON object per line on stderr, as log platforms read them.

Every line has `severity` (DEBUG, INFO, WARNING, ERROR, CRITICAL: the names Cloud Logging, Loki and Elastic map
as they are, so a platform no longer files every line of stderr as an error), `time` (RFC 3339, UTC,
milliseconds), `message`, then the line's own fields (`log.info(message, extra=fields(...))`), the CRE Job of the
request the thread serves when it has one (`namespace`, `job`: `concern`) and the request's `trace_id`
(`functions.runtime.tracing`; "" outside a request). `CREFN_LOG_LEVEL` sets the level; `announce` writes a line whatever
the level (what a process runs, said once at start). The settings object is not read here: the level comes in.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from functions.runtime import tracing

if TYPE_CHECKING:  # the start-up line is written before any event is read: the catalog is not loaded for it
    from events.envelope import Envelope

LOGGER = "crefn"
_local = threading.local()


class JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {"severity": record.levelname, "time": rfc3339(record.created),
                                "message": record.getMessage()}
        line.update(getattr(record, "fields", None) or {})
        namespace, job = getattr(_local, "job", ("", ""))
        if job and "job" not in line:
            line |= {"namespace": namespace, "job": job}
        if record.exc_info:
            line["trace"] = self.formatException(record.exc_info)
        line["trace_id"] = tracing.current_trace_id()
        return json.dumps(line, default=str)


def rfc3339(created: float) -> str:
    """`2026-11-02T09:20:11.402Z`"""
    return datetime.fromtimestamp(created, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def fields(**values: Any) -> dict[str, Any]:
    """A line's own fields, as `extra=` of a logging call."""
    return {"fields": values}


def of_job(where: str) -> dict[str, str]:
    """`namespace/name` as a line's `namespace` and `job` fields (none when it names no Job)."""
    namespace, _, name = where.partition("/")
    return {"namespace": namespace, "job": name} if namespace and name else {}


def concern(where: str) -> None:
    """The Job (`namespace/name`) the request this thread serves is about, for every line it logs; "" for none."""
    found = of_job(where)
    _local.job = (found["namespace"], found["job"]) if found else ("", "")


def configure(level: str) -> logging.Logger:
    """The `crefn` logger, writing JSON lines to stderr from `level` on."""
    # the logging HOWTO's "Optimization": a line is only what it says, so no caller frame or thread is looked up
    # for it (the per-request line then costs about a third less); the process id is kept: gunicorn's own lines,
    # in the same process, print it (without it, each of them fails to format and prints a traceback instead)
    logging._srcfile = None
    logging.logThreads = logging.logMultiprocessing = False
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLines())
    log = logging.getLogger(LOGGER)
    log.handlers[:] = [handler]
    log.setLevel(level)
    log.propagate = False
    return log


def announce(level: int, message: str, error: BaseException | None = None, **values: Any) -> None:
    """A line written whatever `CREFN_LOG_LEVEL` says (what the process runs, a setting it ignores); `error`'s
    traceback in its `trace`."""
    log = logging.getLogger(LOGGER)
    cause = (type(error), error, error.__traceback__) if error is not None else None
    log.handle(log.makeRecord(LOGGER, level, "", 0, message, (), cause, extra=fields(**values)))


def job_of(env: Envelope) -> str:
    """`namespace/name` of the CRE Job an event concerns, as far as the event itself says."""
    if env.extensions.get("namespace") and env.extensions.get("job"):
        return f"{env.extensions['namespace']}/{env.extensions['job']}"
    obj: dict[str, Any] = env.data if isinstance(env.data, dict) else {}
    meta: dict[str, Any] = obj["metadata"] if isinstance(obj.get("metadata"), dict) else {}
    namespace, labels = str(meta.get("namespace") or ""), meta.get("labels")
    if obj.get("kind") == "Job" and namespace and meta.get("name"):
        return f"{namespace}/{meta['name']}"
    for key, value in (labels.items() if isinstance(labels, dict) else ()):
        if key.endswith("/job") and namespace:
            return f"{namespace}/{value}"
    return ""
