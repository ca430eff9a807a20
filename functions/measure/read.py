"""`measure`: a PingSource tick samples the GoodputMeasurement of every managed Job, as CRE's GoodputMeasurement
controller does every `sampleInterval` (here: every tick, a minute).

Per measurement (concurrently, through `functions.runtime.apply.run_each`): the Job its `spec.jobRef` names, read
fresh; its LogProfile (cluster-scoped, compiled as CRE compiles it); the pods of the Job's current workload
(`jobset.sigs.k8s.io/jobset-name=<workloadRef.name>`, of its current attempt, by completion index): worker-0, and
for a `Multi` profile the last worker too, each read while Running (`functions.runtime.logreads`) and parsed
(`functions.domain.goodput_logs`) from the read position (`functions.domain.goodput_window.since`).
decide: `functions.measure.decide.decide`. The answer is 202, or 503 when a measurement could not be sampled.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from events.envelope import Envelope
from events.types import ApiServerType
from functions.domain.goodput_logs import Window, merged, parse_window
from functions.domain.goodput_window import ordered, read_from, terminated_at, verdict_of
from functions.domain.jobs import JobState, Skipped, is_managed
from functions.domain.logprofile import Profile, ProfileError, goodput_profile
from functions.measure.decide import FUNCTION, Observed, Sample, decide, ns_of
from functions.runtime.apply import Each, run_each
from functions.runtime.context import Context
from functions.runtime.errors import CrefnError, PermanentError, Unavailable, one_line
from functions.runtime.logreads import list_goodputs, read_goodput, read_log_window, read_logprofile, read_workload_pods
from functions.runtime.logs import fields
from functions.runtime.plan import Outcome
from functions.runtime.reads import read_job

ACCEPTS = frozenset({ApiServerType.PING.value})
CONCURRENCY = 8
log = logging.getLogger("crefn")


def read_profile(ctx: Context, name: str) -> tuple[Profile | None, str]:
    """The LogProfile compiled, or why it cannot be: CRE's causes."""
    try:
        raw = read_logprofile(ctx, name)
    except CrefnError as e:
        return None, f"failed to get LogProfile {name}: {one_line(str(e), 300)}"
    if raw is None:
        return None, f'failed to get LogProfile {name}: logprofiles.{ctx.settings.cre_group} "{name}" not found'
    try:
        return goodput_profile(raw), ""
    except ProfileError as e:
        return None, str(e)


def window_of(ctx: Context, pods: list[dict[str, Any]], profile: Profile, since: int) -> Window | None:
    """The window of worker-0 (None unless it runs), merged with the last worker's for a `Multi` profile."""
    def read(pod: Mapping[str, Any]) -> Window:
        return parse_window(profile, read_log_window(ctx, pod, profile.container, since))

    if not pods or (pods[0].get("status") or {}).get("phase") != "Running":
        return None
    last = pods[-1]
    if not profile.multi or len(pods) < 2 or (last.get("status") or {}).get("phase") != "Running":
        return read(pods[0])
    return merged(read(pods[0]), read(last))


def read_one(ctx: Context, measurement: dict[str, Any]) -> Observed:
    meta, spec = measurement["metadata"], measurement.get("spec") or {}
    name = str((spec.get("jobRef") or {}).get("name") or "")
    state = read_job(ctx, meta["namespace"], name) if name else None
    if state is None or not is_managed(state.job.metadata.labels, ctx.settings):
        return Skipped(f"GoodputMeasurement {meta['namespace']}/{meta['name']}: no managed Job {name!r} to measure")
    verdict, anchor = verdict_of(state.conditions)
    if verdict not in ("InProgress", "Succeeded", "Failed"):
        return Sample(measurement, state, verdict)
    profile, error = read_profile(ctx, str(spec.get("logProfileRef") or ""))
    if profile is None:
        return Sample(measurement, state, verdict, anchor, profile_error=error)
    return sampled(ctx, measurement, state, verdict, anchor, profile)


def sampled(ctx: Context, measurement: dict[str, Any], state: JobState, verdict: str, anchor: int | None,
            profile: Profile) -> Sample:
    """The window of the Job's running workers from the read position, and worker-0's end for a failed Job."""
    ref = state.job.status.workload_ref
    pods = ordered(read_workload_pods(ctx, state.ref.namespace, ref.name) if ref else [],
                   state.job.status.restart_count)
    since = read_from(measurement, pods[0] if pods else None, verdict, anchor, ns_of(ctx.clock()))
    terminated = terminated_at(pods[0], profile.container) if pods and verdict == "Failed" else None
    try:
        window = window_of(ctx, pods, profile, since)
    except CrefnError:
        if verdict == "InProgress":
            raise  # no sample this time: the tick is answered for retry, as CRE requeues
        window = None  # a terminal Job's last read is best effort: it is frozen all the same
    return Sample(measurement, state, verdict, anchor, profile, window=window, terminated=terminated)


def reads(ctx: Context, listed: dict[str, Any]) -> Callable[[], Observed]:
    """A listed measurement's reads, as `run` takes them: the list's copy first; after a conflict, read again."""
    done: list[Observed] = []

    def next_read() -> Observed:
        meta = listed["metadata"]
        again = read_goodput(ctx, meta["namespace"], meta["name"]) if done else listed
        done.append(read_one(ctx, again) if again is not None else Skipped(
            f"GoodputMeasurement {meta['namespace']}/{meta['name']} is gone"))
        return done[-1]
    return next_read


def handle(env: Envelope, ctx: Context) -> Outcome:
    if env.type != ApiServerType.PING:
        raise PermanentError(f"unknown event type {env.type!r} for this function")
    with ThreadPoolExecutor(max_workers=CONCURRENCY) as pool:
        each = run_each(ctx, list_goodputs(ctx), lambda listed: reads(ctx, listed), decide, map_each=pool.map)
    failed = [e for e in each if e.error is not None]
    text = f"measure: {len(each)} measurements, {len(failed)} failed"
    log.info(text, extra=fields(function=FUNCTION, measurements=len(each), failed=len(failed),
                                errors=[named(e) for e in failed][:5]))
    if failed:
        raise Unavailable(f"{text}; first: {named(failed[0])}")
    return Outcome(None, text)


def named(each: Each[dict[str, Any]]) -> str:
    meta = each.key["metadata"]
    return f"{meta['namespace']}/{meta['name']}: {each.error}"
