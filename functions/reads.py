"""Fresh reads the handlers share: a CRE Job as a `JobState`, a TrainJob as raw JSON.

Decisions about writes and deletes use what these return, never an event's payload alone: events
can be stale, duplicated or forged (SPEC §6.4).
"""

from __future__ import annotations

from typing import Any

from events.types import CRE_VERSION, JOB_KIND
from functions.context import Context
from functions.resources import TRAINJOBS, cre_goodput, cre_jobs
from functions.rules.jobs import JobState, parse_job


def read_job(ctx: Context, namespace: str, name: str) -> JobState | None:
    group = ctx.settings.cre_group
    raw = ctx.gateway.get(cre_jobs(group), namespace, name)
    if raw is None:
        return None
    raw.setdefault("apiVersion", f"{group}/{CRE_VERSION}")
    raw.setdefault("kind", JOB_KIND)
    return parse_job(raw, group)


def read_trainjob(ctx: Context, namespace: str, name: str) -> dict[str, Any] | None:
    return ctx.gateway.get(TRAINJOBS, namespace, name)


def read_checkpoint_evidence(ctx: Context, state: JobState) -> bool:
    """Whether a GoodputMeasurement of the Job reports `lastCheckpointStep > 0`."""
    for gm in ctx.gateway.list_all(cre_goodput(ctx.settings.cre_group), state.ref.namespace):
        ref = (gm.get("spec") or {}).get("jobRef") or {}
        step = (gm.get("status") or {}).get("lastCheckpointStep") or 0
        if ref.get("name") == state.ref.name and ref.get("kind", "Job") == "Job" and int(step) > 0:
            return True
    return False
