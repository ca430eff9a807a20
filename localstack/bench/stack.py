"""`make bench`'s end-to-end figures, through the local stack (the real API server, every function served by
functions-framework as its ServiceAccount, the local Broker with knative/base's Triggers), with restart
grace 0, no resync tick, no Alertmanager and no Prometheus, so that every figure is what the event path
alone does: Job created → its first TrainJob, TrainJob Failed → the next attempt's TrainJob (latency
percentiles), and a burst of TrainJobs failed at once (time until every one has its next attempt, with one
create per Job and attempt, counted from a watch). The baseline of the latencies is the API server itself:
a TrainJob's create → its ADDED event on the same watch. The goals and the figures in full:
docs/development.md#benchmarks-make-bench.
"""

from __future__ import annotations

import contextlib
import os
import re
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

from events.types import ATTEMPT_LABEL, CRE_GROUP_DEFAULT, CRE_VERSION, MANAGED_LABEL
from functions.domain.attempts import workload_name
from functions.runtime.resources import TRAINJOBS, cre_jobs
from localstack.bench.apiprofile import Capture
from localstack.eventing.apisource import WatchSource
from localstack.scenarios.demo import create_job
from localstack.stack import start_stack
from localstack.timeline import Timeline
from localstack.trainer import apply_action, wait_until

NAMESPACE = "bench"
GROUP = CRE_GROUP_DEFAULT
SETTINGS = {"CREFN_RESTART_GRACE_SECONDS": "0", "CREFN_LOG_LEVEL": "ERROR"}
OWN = "broker and sources"
"""This process (its own CPU only: the stack's other processes are its children)."""
KUBE_REQUESTS = re.compile(r"^crefn_kube_requests_total\{.*\} ([0-9.e+]+)$", re.M)


class QuietTimeline(Timeline):
    """A timeline that prints only the stack's start-up steps (a delivery line per event would cost
    the bench process, which also runs the Broker, more than the events themselves)."""

    def outcome(self, o: Any) -> None:
        pass

    def published(self, record: dict[str, Any]) -> None:
        pass


class Creates:
    """Every TrainJob ADDED on a watch: (namespace, name, attempt) → arrival times (monotonic)."""

    def __init__(self) -> None:
        self.seen: dict[tuple[str, str, str], list[float]] = {}
        self.changed = threading.Condition()

    def publish(self, record: dict[str, Any]) -> None:
        if not record["attributes"]["type"].endswith(".add"):
            return
        meta = record["data"]["metadata"]
        key = (meta["namespace"], meta["name"], (meta.get("labels") or {}).get(ATTEMPT_LABEL, ""))
        with self.changed:
            self.seen.setdefault(key, []).append(time.monotonic())
            self.changed.notify_all()

    def first(self, key: tuple[str, str, str], timeout: float = 30) -> float | None:
        deadline = time.monotonic() + timeout
        with self.changed:
            while key not in self.seen:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.changed.wait(left)
            return self.seen[key][0]

    def count(self, attempt: str, prefix: str) -> Counter[str]:
        with self.changed:
            return Counter({name: len(times) for (_, name, a), times in self.seen.items()
                            if a == attempt and name.startswith(prefix)})


def job_body(name: str) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/{CRE_VERSION}", "kind": "Job",
            "metadata": {"name": name, "labels": {MANAGED_LABEL: "true"}},
            "spec": {"checkpoint": {"pvcName": f"{name}-ckpt", "maxRestarts": 1},
                     "workload": {"trainJob": {"runtimeRef": {"name": "torch-distributed"},
                                               "trainer": {"image": "pytorch:25.01", "numNodes": 1}}}}}


def process_tree(pid: int) -> list[int]:
    """A process and its descendants (those alive now)."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            todo += [int(c) for c in Path(f"/proc/{p}/task/{p}/children").read_text().split()]
        except OSError:
            continue
        found.append(p)
    return found


def cpu_seconds(pid: int, tree: bool = True) -> float:
    """CPU time (user + system) of a process (and its descendants, with `tree`) so far."""
    ticks = 0
    for p in process_tree(pid) if tree else [pid]:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def components(stack: Any) -> dict[str, int]:
    """The stack's processes by name: the API server, etcd, each function, and this process (the
    Broker, the sources and the bench's own watch)."""
    procs: dict[str, int] = stack.cluster.processes()
    procs.update({f"fn {name}": served.pid for name, served in stack.functions.items() if served.pid})
    procs[OWN] = os.getpid()
    return procs


def api_requests(stack: Any) -> int:
    """Kubernetes API calls made by all functions so far (their own `crefn_kube_requests_total`)."""
    total = 0
    for served in stack.functions.values():
        with contextlib.suppress(OSError), urllib.request.urlopen(served.url + "metrics", timeout=10) as resp:
            total += sum(int(float(n)) for n in KUBE_REQUESTS.findall(resp.read().decode()))
    return total


def profile_of(stack: Any, before: tuple[dict[str, float], int], burst: int) -> str:
    """Where the burst's CPU went (seconds, the largest first) and the API calls per restart."""
    (cpu, requests), (cpu_after, requests_after) = before, snapshot(stack)
    spent = {name: seconds - cpu.get(name, 0.0) for name, seconds in cpu_after.items()}
    top = sorted(spent.items(), key=lambda kv: -kv[1])
    parts = ", ".join(f"{name} {seconds:.0f}" for name, seconds in top if seconds >= 0.5)
    return f"CPU s: {parts}; API calls per restart: {(requests_after - requests) / burst:.1f}"


def snapshot(stack: Any) -> tuple[dict[str, float], int]:
    """CPU seconds so far by process of the stack, and the functions' API calls so far."""
    return {name: cpu_seconds(pid, name != OWN) for name, pid in components(stack).items()}, api_requests(stack)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def say(text: str) -> None:
    print(f"[bench] {text}", file=sys.stderr, flush=True)


def launch_running(stack: Any, creates: Creates, names: list[str]) -> list[float]:
    """Create the Jobs (with checkpoint evidence), wait for each first TrainJob and set it running;
    the create → TrainJob latencies when the Jobs were created one at a time."""
    latencies = []
    for i, name in enumerate(names, 1):
        started = time.monotonic()
        create_job(stack.gateway, NAMESPACE, job_body(name), evidence=True, group=GROUP)
        if len(names) <= 200:  # one at a time: a latency
            seen = creates.first((NAMESPACE, workload_name(name), "0"))
            if seen is None:
                raise SystemExit(f"Job {name} got no TrainJob within 30 s")
            latencies.append(seen - started)
        if i % 250 == 0:
            say(f"  {i}/{len(names)} Jobs created")
    for i, name in enumerate(names, 1):
        if creates.first((NAMESPACE, workload_name(name), "0"), timeout=120) is None:
            raise SystemExit(f"Job {name} got no TrainJob within 120 s")
        apply_action(stack.gateway, {"metadata": {"namespace": NAMESPACE, "name": workload_name(name)}}, "run")
        if i % 250 == 0:
            say(f"  {i}/{len(names)} TrainJobs running")
    stack.broker.wait_idle(timeout=120, quiet=0.5)
    return latencies


def api_floor(stack: Any, creates: Creates, n: int = 50) -> list[float]:
    """The API server's own create → ADDED-on-the-watch latency, for TrainJobs no Job owns."""
    times = []
    for i in range(n):
        name, started = f"floor-{i}", time.monotonic()
        stack.gateway.create(TRAINJOBS, NAMESPACE, {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                                    "metadata": {"name": name, "labels": {ATTEMPT_LABEL: "0"}},
                                                    "spec": {"runtimeRef": {"name": "t"}}})
        seen = creates.first((NAMESPACE, name, "0"))
        if seen is not None:
            times.append(seen - started)
    return times


def lifecycle_figures(rows: list[dict[str, Any]], sequential: int, burst: int, profile: str = "") -> None:
    """The latencies and the burst (with `profile`, a file: the API server's CPU profile during the burst,
    written there and summarised, `localstack.bench.apiprofile`)."""
    with tempfile.TemporaryDirectory(prefix="crefn-bench-") as tmp, open(os.devnull, "w") as quiet:
        out = Path(tmp) / "out"
        out.mkdir()
        say("starting the local stack (restart grace 0, no resync tick) ...")
        with start_stack(out, QuietTimeline(out=quiet), SETTINGS, 3600, Path(tmp), GROUP, monitoring=False,
                         knative=False) as stack:
            creates = Creates()
            source = WatchSource(stack.cluster.gateway(), TRAINJOBS, creates.publish, namespace=NAMESPACE).start()
            create_job(stack.gateway, NAMESPACE, job_body("warm-up"), evidence=True, group=GROUP)
            creates.first((NAMESPACE, workload_name("warm-up"), "0"))
            floor = api_floor(stack, creates)
            say(f"{sequential} Jobs one at a time: created → TrainJob, then Failed → next TrainJob ...")
            names = [f"seq-{i}" for i in range(sequential)]
            launched = launch_running(stack, creates, names)
            restarted = []
            for name in names:
                started = time.monotonic()
                apply_action(stack.gateway, {"metadata": {"namespace": NAMESPACE, "name": workload_name(name)}},
                             "fail")
                seen = creates.first((NAMESPACE, workload_name(name), "1"))
                if seen is None:
                    raise SystemExit(f"Job {name}: no next attempt within 30 s of its failure")
                restarted.append(seen - started)
            burst_s, once, restarts, spent = burst_figures(stack, creates, burst, profile) if burst \
                else (0.0, True, True, "")
            source.stop()
    floor_ms = statistics.median(floor) * 1000
    for label, values in (("Job created → TrainJob", launched), ("TrainJob Failed → next TrainJob", restarted)):
        for q in (50, 99):
            ms = percentile(values, q) * 1000
            rows.append({"figure": f"{label} p{q} (ms)", "baseline": "API create → watch p50",
                         "base": round(floor_ms, 1), "ours": round(ms, 1), "ratio": round(ms / floor_ms, 1)})
    if burst:
        rows.append({"figure": f"burst: {burst} TrainJobs failed → all replaced (s)", "baseline": "goal",
                     "base": 20, "ours": round(burst_s, 1), "ratio": round(burst_s / 20, 2),
                     "note": f"one create per attempt: {once}; restartCount 1 each: {restarts}; {spent}"})


def burst_figures(stack: Any, creates: Creates, burst: int, profile: str = "") -> tuple[float, bool, bool, str]:
    """Fail `burst` running TrainJobs at once; seconds until every Job has its next attempt (with `profile`,
    the API server's CPU profiled meanwhile)."""
    say(f"burst: {burst} Jobs launched and running ...")
    names = [f"burst-{i}" for i in range(burst)]
    launch_running(stack, creates, names)
    say(f"burst: failing {burst} TrainJobs at once ...")
    before = snapshot(stack)
    capture = Capture(stack.cluster, int(os.environ.get("BENCH_PROFILE_SECONDS", "30"))).start() if profile else None
    started = time.monotonic()
    for name in names:
        apply_action(stack.gateway, {"metadata": {"namespace": NAMESPACE, "name": workload_name(name)}}, "fail")
    written = time.monotonic() - started
    say(f"burst: {burst} TrainJobs failed in {written:.1f} s (the bench's writes, one after the other)")
    prefix = "burst-"
    done = wait_until(lambda: len(creates.count("1", prefix)) >= burst, timeout=300, interval=0.05)
    elapsed = time.monotonic() - started
    if not done:
        say(f"burst: only {len(creates.count('1', prefix))}/{burst} replaced within 300 s")
    spent = f"the failures written in {written:.1f} s, the last replaced {elapsed - written:.1f} s after; " \
            + profile_of(stack, before, burst)
    say(f"burst: {spent}")
    if capture is not None:
        print(capture.finish(Path(profile).resolve()), flush=True)
    stack.broker.wait_idle(timeout=60, quiet=1.0)
    counted = creates.count("1", prefix)
    once = len(counted) == burst and set(counted.values()) == {1} and not creates.count("2", prefix)
    jobs = stack.gateway.list_all(cre_jobs(GROUP), NAMESPACE)
    restarts = all((j.get("status") or {}).get("restartCount") == 1 for j in jobs
                   if j["metadata"]["name"].startswith("burst-"))
    return elapsed, once, restarts, spent
