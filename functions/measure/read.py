"""`measure`: a PingSource tick samples the Goodput- and BandwidthMeasurement of every managed Job, as CRE's two
controllers do every `sampleInterval` (here: every tick, a minute), each concurrently through `run_each`.

A GoodputMeasurement: the Job its `spec.jobRef` names, read fresh; its LogProfile (cluster-scoped, compiled as CRE
compiles it); the workload's pods (`jobset.sigs.k8s.io/jobset-name`, the Job's attempt, by completion index):
worker-0's log window, and the last worker's for a `Multi` profile (`functions.runtime.logreads`), from the read
position (`functions.domain.goodput_window.read_from`); decide: `functions.measure.decide`. A BandwidthMeasurement:
its Job (gone: None), the profile's parser and replicatedJob, that pod's whole log; decide:
`functions.measure.bandwidth`. The answer is 202, or 503 when a measurement could not be sampled.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

from events.envelope import Envelope
from events.types import ApiServerType
from functions.domain.goodput_logs import Window, merged, parse_window
from functions.domain.goodput_window import ordered, read_from, replicated_pod, terminated_at, verdict_of
from functions.domain.jobs import JobState, Skipped, is_managed
from functions.domain.logprofile import Profile, ProfileError, goodput_profile
from functions.domain.nccl import BandwidthParser, ParserError, bandwidth_parser
from functions.measure.bandwidth import BandwidthSample, decide_bandwidth
from functions.measure.decide import FUNCTION, Observed, Sample, decide, is_complete, ns_of
from functions.runtime.apply import Each, run_each
from functions.runtime.context import Context
from functions.runtime.errors import CrefnError, PermanentError, Unavailable, one_line
from functions.runtime.logreads import (
    Unpageable,
    list_bandwidths,
    list_goodputs,
    read_bandwidth,
    read_goodput,
    read_log_all,
    read_log_window,
    read_logprofile,
    read_workload_pods,
)
from functions.runtime.logs import fields
from functions.runtime.plan import Outcome, Plan
from functions.runtime.reads import read_job
from functions.runtime.settings import Settings

ACCEPTS = frozenset({ApiServerType.PING.value})
Sampled = Observed | BandwidthSample
CONCURRENCY = 8
log = logging.getLogger("crefn")


def fetch_profile(ctx: Context, name: str, getting: str) -> tuple[dict[str, Any] | None, str]:
    """The LogProfile as read, or why it cannot be, in the words of the controller that reads it (`getting`:
    "failed to get" for CRE's goodput controller, "getting" for its bandwidth one)."""
    try:
        raw = read_logprofile(ctx, name)
    except CrefnError as e:
        return None, f"{getting} LogProfile {name}: {one_line(str(e), 300)}"
    if raw is None:
        return None, f'{getting} LogProfile {name}: logprofiles.{ctx.settings.cre_group} "{name}" not found'
    return raw, ""


def read_profile(ctx: Context, name: str) -> tuple[Profile | None, str]:
    """The LogProfile compiled for the goodput parser, or why it cannot be: CRE's causes."""
    raw, cause = fetch_profile(ctx, name, "failed to get")
    if raw is None:
        return None, cause
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
    if is_complete(measurement):
        return Skipped(f"GoodputMeasurement {meta['namespace']}/{meta['name']} is complete")
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


def reads(ctx: Context, listed: dict[str, Any]) -> Callable[[], Sampled]:
    """A listed measurement's reads, as `run` takes them: the list's copy first; after a conflict, read again
    (a GoodputMeasurement, or a BandwidthMeasurement, by its kind)."""
    goodput = listed.get("kind") == "GoodputMeasurement"
    again, one = (read_goodput, read_one) if goodput else (read_bandwidth, read_bandwidth_one)
    done: list[Sampled] = []

    def next_read() -> Sampled:
        meta = listed["metadata"]
        current = again(ctx, meta["namespace"], meta["name"]) if done else listed
        done.append(one(ctx, current) if current is not None else Skipped(
            f"{listed.get('kind')} {meta['namespace']}/{meta['name']} is gone"))
        return done[-1]
    return next_read


def read_parser(ctx: Context, name: str) -> tuple[BandwidthParser | None, str]:
    """The LogProfile's bandwidth parser, or CRE's cause."""
    raw, cause = fetch_profile(ctx, name, "getting")
    if raw is None:
        return None, cause
    try:
        return bandwidth_parser(raw), ""
    except ParserError as e:
        return None, f"creating parser from LogProfile {name}: {e}"


def read_bandwidth_one(ctx: Context, measurement: dict[str, Any]) -> BandwidthSample | Skipped:
    meta, spec = measurement["metadata"], measurement.get("spec") or {}
    name = str((spec.get("jobRef") or {}).get("name") or "")
    if is_complete(measurement) or not name:
        return Skipped(f"BandwidthMeasurement {meta['namespace']}/{meta['name']} is complete or names no Job")
    state = read_job(ctx, meta["namespace"], name)
    if state is not None and not is_managed(state.job.metadata.labels, ctx.settings):
        return Skipped(f"BandwidthMeasurement {meta['namespace']}/{meta['name']}: Job {name!r} is not managed")
    if state is None:
        return BandwidthSample(measurement, None)
    verdict, anchor = verdict_of(state.conditions)
    parser, problem = read_parser(ctx, str(spec.get("logProfileRef") or ""))
    if parser is None or verdict not in ("InProgress", "Succeeded", "Failed"):
        return BandwidthSample(measurement, state, verdict, anchor, problem=problem)
    try:
        lines = launcher_log(ctx, state, verdict, parser)
    except CrefnError as e:
        if verdict == "InProgress":
            raise  # no sample this time: the tick is answered for retry, as CRE requeues
        return BandwidthSample(measurement, state, verdict, anchor, parser, str(e), isinstance(e, Unpageable))
    return BandwidthSample(measurement, state, verdict, anchor, parser, lines=lines)


def launcher_log(ctx: Context, state: JobState, verdict: str, parser: BandwidthParser) -> list[str] | None:
    """The whole log of the replicatedJob's pod: while the Job runs, once it runs (else None); once it ended, of the
    finished pod (else an error in CRE's words)."""
    ref = state.job.status.workload_ref
    if ref is None:
        if verdict == "InProgress":
            return None
        raise PermanentError(f"job {state.ref.name} has no workload reference")
    replicated, container = parser.replicated_job, parser.container
    pod = replicated_pod(read_workload_pods(ctx, state.ref.namespace, ref.name), replicated)
    phase = str(((pod or {}).get("status") or {}).get("phase", ""))
    if verdict == "InProgress":
        return read_log_all(ctx, pod, container) if pod and phase in ("Running", "Succeeded") else None
    if pod is None:
        raise PermanentError(f"no pod of replicated job {replicated} found for workload {ref.name}")
    if phase not in ("Succeeded", "Failed"):
        raise PermanentError(f"pod {pod['metadata']['name']} has not finished ({phase})")
    try:
        return read_log_all(ctx, pod, container)
    except CrefnError as e:
        raise type(e)(f"reading log of pod {pod['metadata']['name']}: {e}") from None


def decide_one(observed: Sampled, settings: Settings, now: datetime) -> Plan:
    if isinstance(observed, BandwidthSample):
        return decide_bandwidth(observed, settings.cre_group, now)
    return decide(observed, settings, now)


def handle(env: Envelope, ctx: Context) -> Outcome:
    if env.type != ApiServerType.PING:
        raise PermanentError(f"unknown event type {env.type!r} for this function")
    with ThreadPoolExecutor(max_workers=CONCURRENCY) as pool:
        each = run_each(ctx, [*list_goodputs(ctx), *list_bandwidths(ctx)], lambda listed: reads(ctx, listed),
                        decide_one, map_each=pool.map)
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
