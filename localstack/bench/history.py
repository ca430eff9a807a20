"""`make bench`'s figures against history, on the real API server: a resync tick over the running Jobs alone
and over the same running Jobs beside many finished ones (the finished label keeps them out of a tick's
LISTs; the hourly sweep still lists them all), and a metrics scrape over N Jobs from the API server's watch
cache against the same LIST from etcd. The decisions behind them: docs/cost.md.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from events.types import MANAGED_LABEL
from functions.main import scrape_jobs
from functions.resync import read as resync
from functions.runtime.codec import to_envelope
from functions.runtime.context import Context
from functions.runtime.gateway import Gateway
from functions.runtime.resources import NAMESPACES, TRAINJOBS, cre_jobs
from functions.runtime.settings import Settings
from localstack.cluster.apiserver import LocalCluster
from localstack.serving import ServedFunction

GROUP, NAMESPACE = "nvcre.nvidia.com", "bench"
TICK = datetime(2026, 12, 2, 10, 17, tzinfo=UTC)
SWEEP = datetime(2026, 12, 2, 11, 0, tzinfo=UTC)
NOOP = Path(__file__).with_name("noop.py")
PING = {"attributes": {"specversion": "1.0", "id": "bench", "source": "/bench", "type": "dev.knative.sources.ping"},
        "data": {}}


class Counting(Gateway):
    """The real gateway, counting its requests."""

    calls = 0

    def request(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        Counting.calls += 1
        return super().request(*args, **kwargs)


def say(text: str) -> None:
    print(f"[bench] {text}", file=sys.stderr, flush=True)


def make_jobs(gw: Gateway, make: Callable[[Gateway, str], None], prefix: str, n: int) -> None:
    say(f"creating {n} {prefix} Jobs ...")
    with ThreadPoolExecutor(max_workers=8) as pool:
        for i, _ in enumerate(pool.map(lambda k: make(gw, f"{prefix}-{k}"), range(n)), 1):
            if i % 1000 == 0:
                say(f"  {i}/{n}")


def job_with_trainjob(gw: Gateway, name: str, finished: bool) -> None:
    """A Job in step with its TrainJob: running, or finished (Succeeded, its TrainJob Complete)."""
    job = gw.create(cre_jobs(GROUP), NAMESPACE, {"apiVersion": f"{GROUP}/v1alpha1", "kind": "Job",
                                                 "metadata": {"name": name, "labels": {MANAGED_LABEL: "true"}},
                                                 "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "t"}}}}})
    gw.create(TRAINJOBS, NAMESPACE, {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {
        "name": f"{name}-workload", "labels": {"app.kubernetes.io/managed-by": "nvcre",
                                               f"{GROUP}/job": name, "crefn.dev/attempt": "0"},
        "ownerReferences": [{"apiVersion": f"{GROUP}/v1alpha1", "kind": "Job", "name": name,
                             "uid": job["metadata"]["uid"], "controller": True}]},
        "spec": {"runtimeRef": {"name": "t"}}})
    stamp = "2026-11-30T10:00:00Z"
    true_type, reason = ("Succeeded", "WorkloadCompleted") if finished else ("InProgress", "WorkloadRunning")
    message = f"Workload TrainJob/{name}-workload " + ("completed successfully" if finished else "is running")
    conditions = [{"type": t, "status": "True" if t == true_type else "False",
                   "reason": reason if t == true_type else "NotApplicable",
                   "message": message if t == true_type else "", "lastTransitionTime": stamp}
                  for t in ("InProgress", "Succeeded", "Failed")]
    gw.patch(cre_jobs(GROUP), NAMESPACE, name, {"status": {
        "workloadRef": {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                        "name": f"{name}-workload", "namespace": NAMESPACE}, "workloadStartTime": stamp,
        "conditions": conditions}}, status=True)
    if finished:
        gw.patch(TRAINJOBS, NAMESPACE, f"{name}-workload", {"status": {"conditions": [
            {"type": "Complete", "status": "True", "reason": "JobsCompleted", "message": "done",
             "lastTransitionTime": stamp}]}}, status=True)


def tick(ctx: Context, now: datetime, rounds: int = 3) -> tuple[float, int, str]:
    """The best of `rounds` ticks at `now`: seconds, API requests, the tick's reason."""
    ping = to_envelope(PING)
    ctx.clock = lambda: now
    best, calls, reason = float("inf"), 0, ""
    for _ in range(rounds):
        Counting.calls = 0
        start = time.perf_counter()
        reason = resync.handle(ping, ctx).reason
        elapsed = time.perf_counter() - start
        if elapsed < best:
            best, calls = elapsed, Counting.calls
    return best, calls, reason


def history_figures(rows: list[dict[str, Any]], running: int, finished: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, open(os.devnull, "w") as quiet, \
            LocalCluster(Path(tmp), log=quiet) as cluster:
        gw = cluster.gateway()
        gw.create(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        make_jobs(gw, lambda g, n: job_with_trainjob(g, n, finished=False), "running", running)
        sink = ServedFunction("noop", {"CREFN_LOG_LEVEL": "ERROR"}, source=NOOP).start()
        try:
            ctx = Context(Settings(kubeconfig=str(cluster.kubeconfig), k_sink=sink.url),
                          gateway=Counting(cluster.gateway().transport))
            tick(ctx, TICK, rounds=1)  # warm
            alone_s, alone_calls, _ = tick(ctx, TICK)
            make_jobs(gw, lambda g, n: job_with_trainjob(g, n, finished=True), "finished", finished)
            say("the first tick labels the finished Jobs and their TrainJobs ...")
            tick(ctx, TICK, rounds=1)
            with_s, with_calls, reason = tick(ctx, TICK)
            sweep_s, sweep_calls, sweep_reason = tick(ctx, SWEEP, rounds=1)
        finally:
            sink.stop()
    rows.append({"figure": f"resync tick, {running} running + {finished} finished (s)",
                 "baseline": f"tick over {running} running", "base": round(alone_s, 3), "ours": round(with_s, 3),
                 "ratio": round(with_s / alone_s, 2), "note": f"{with_calls} vs {alone_calls} API requests; {reason}"})
    rows.append({"figure": "resync sweep (hourly), the same Jobs (s)", "baseline": f"tick over {running} running",
                 "base": round(alone_s, 3), "ours": round(sweep_s, 3), "ratio": round(sweep_s / alone_s, 2),
                 "note": f"{sweep_calls} API requests; {sweep_reason}"})


def scrape_figures(rows: list[dict[str, Any]], jobs: int) -> None:
    def make(gw: Gateway, name: str) -> None:
        gw.create(cre_jobs(GROUP), NAMESPACE, {"apiVersion": f"{GROUP}/v1alpha1", "kind": "Job",
                                               "metadata": {"name": name, "labels": {MANAGED_LABEL: "true"}},
                                               "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "t"}}}}})

    with tempfile.TemporaryDirectory() as tmp, open(os.devnull, "w") as quiet, \
            LocalCluster(Path(tmp), log=quiet) as cluster:
        gw = cluster.gateway()
        gw.create(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        make_jobs(gw, make, "scraped", jobs)
        ctx = Context(Settings(kubeconfig=str(cluster.kubeconfig)), gateway=cluster.gateway())
        etcd_s = best_of(lambda: gw.list_all(cre_jobs(GROUP), None, label_selector=f"{MANAGED_LABEL}=true"))
        scrape_s = best_of(lambda: scrape_jobs("", ctx))
    rows.append({"figure": f"metrics scrape over {jobs} Jobs, watch cache (s)", "baseline": "the LIST from etcd",
                 "base": round(etcd_s, 3), "ours": round(scrape_s, 3), "ratio": round(scrape_s / etcd_s, 2)})


def best_of(fn: Callable[[], object], rounds: int = 3) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best
