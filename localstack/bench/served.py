"""A served function's figures — throughput by wrk, the served tree's resident memory, cold start — and `make
bench`'s rows per served target (`BENCH_ROWS=targets`): each target served as a pod serves it, connected to a
local API server by a kubeconfig and bound to a sink (a no-op function), beside the no-op functions-framework
function served by the same binary, measured just before each target: the served tree's resident memory once it
has answered, cold start to the first answer (the median of three), and requests per second with 16 keep-alive
connections.

Each target gets an event the install's Triggers route to it (`event_for`): `status` and `restart` get what
`phase` answers to its samples; `resync` a ping; `metrics` a scrape (GET). The objects the events name are
absent from the API server, so each answer is the function's read finding nothing (or, for `phase`, which reads
nothing, its decision): the cost of a process and of one event's path through it.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from events.types import CRE_GROUP_DEFAULT, CRE_VERSION, MANAGED_LABEL
from functions.registry import METRICS, SERVED, TARGETS
from functions.runtime.client import send
from functions.runtime.codec import encode
from functions.runtime.resources import Resource
from localstack.bench.stack import process_tree
from localstack.cluster.apiserver import LocalCluster
from localstack.eventing.apisource import apiserver_record
from localstack.eventing.broker import Trigger, triggers_from_manifests
from localstack.manifests import render
from localstack.samples import SAMPLES, load_sample
from localstack.serving import ServedFunction

NOOP = Path(__file__).with_name("noop.py")
MODELS = Path(__file__).with_name("models.py")
"""The models floor: what a `phase` within SPEC cannot do without (pydantic and its two models)."""
CLIENTS = 16
DURATION = 5
PING = {"attributes": {"specversion": "1.0", "id": "bench", "source": "/bench", "type": "dev.knative.sources.ping"},
        "data": {}}
SECONDS = 3
COLD = 3
"""Cold starts per figure (their median)."""
JOB = {"apiVersion": f"{CRE_GROUP_DEFAULT}/{CRE_VERSION}", "kind": "Job",
       "metadata": {"name": "bench", "namespace": "bench", "uid": "b3", "labels": {MANAGED_LABEL: "true"}},
       "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "torch-distributed"}}}}}
RUN = {"apiVersion": f"{CRE_GROUP_DEFAULT}/{CRE_VERSION}", "kind": "WorkloadRun",
       "metadata": {"name": "bench", "namespace": "bench", "uid": "b4", "labels": {MANAGED_LABEL: "true"}},
       "spec": {"torch": {"script": "train.py"}}}


def throughput(url: str, headers: dict[str, str], body: bytes, seconds: float = DURATION,
               clients: int = CLIENTS, method: str = "POST") -> float:
    """Requests per second answered 2xx with `clients` keep-alive connections, for `seconds`, by wrk
    (one thread: the served worker, GIL-bound, gets the other core)."""
    wrk = shutil.which("wrk")
    if wrk is None:
        raise SystemExit("make bench needs wrk, the load generator: run `make deps`")
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(f'wrk.method = "{method}"\nwrk.body = {lua_string(body.decode())}\n')
        for name, value in headers.items():
            script.write(f"wrk.headers[{lua_string(name)}] = {lua_string(value)}\n")
    try:
        out = subprocess.run([wrk, "-t1", f"-c{clients}", f"-d{seconds}s", "-s", script.name, url],
                             capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(script.name)
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    total = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    failed = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = int(failed.group(1)) if failed else 0
    return rate * (total - errors) / total if total else 0.0


def lua_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def tree_rss_mib(pid: int) -> float:
    """Resident memory of a process and its children."""
    total = 0
    for p in process_tree(pid):
        with contextlib.suppress(OSError):
            total += sum(int(line.split()[1]) for line in Path(f"/proc/{p}/status").read_text().splitlines()
                         if line.startswith("VmRSS:"))
    return total / 1024


def cold_start_ms(served: ServedFunction, record: dict[str, Any] | None) -> float:
    """From the process started to its first answer (to `record`, or to a GET without one); whether it listens is
    asked every 5 ms, so that a figure is not rounded up to the next tenth of a second."""
    start = time.perf_counter()
    served.start(timeout=30, interval=0.005)
    while True:
        try:
            if record is None:
                try:
                    with urllib.request.urlopen(served.url + "metrics", timeout=10) as answer:
                        answer.read()
                except urllib.error.HTTPError:
                    pass  # an answer all the same
            else:
                send(served.url, record, timeout=10)
            break
        except Exception:  # not answering yet
            time.sleep(0.005)
    elapsed = (time.perf_counter() - start) * 1000
    served.stop()
    return elapsed


def event_for(target: str, phase_answers: list[dict[str, Any]]) -> dict[str, Any] | None:
    """An event the default (or observe) install's Triggers route to `target` (None for the scrape target):
    phase's own sample, else one of its answers, a sample of `events/samples`, a Job or a WorkloadRun added; or,
    for a PingSource's sink, a ping."""
    if target == METRICS:
        return None
    triggers = [t for t in routes() if t.subscriber == target]
    candidates = [load_sample("trainjob-resource-update-failed"), *phase_answers, *samples(), added(JOB), added(RUN)]
    for record in candidates:
        if any(t.matches(record["attributes"]) for t in triggers):
            return dict(record)
    if PING["attributes"]["type"] in TARGETS[target].accepts:  # a PingSource's sink is the Service itself
        return PING
    raise SystemExit(f"make bench: no event for {target}")


@functools.cache
def routes() -> tuple[Trigger, ...]:
    """The Triggers of the default install and observe's (parity's), each subscriber named by its target: rendered
    once for all the targets."""
    subscribers = {f"crefn-{target}": target for target in SERVED}
    return tuple(t for install in ("installs/default", "installs/observe")
                 for t in triggers_from_manifests(render(install), subscribers)[0])


@functools.cache
def samples() -> tuple[dict[str, Any], ...]:
    return tuple(json.loads(p.read_text()) for p in sorted(SAMPLES.rglob("*.json")))


def added(obj: dict[str, Any]) -> dict[str, Any]:
    group, version = obj["apiVersion"].split("/")
    plural = {"Job": "jobs", "WorkloadRun": "workloadruns"}[obj["kind"]]
    return apiserver_record("add", obj, Resource(group, version, plural, obj["kind"]), "https://10.96.0.1:443")


def phase_answers() -> list[dict[str, Any]]:
    """What `phase` answers to its samples of a failed and a running TrainJob: the events `restart` and `status`
    are sent."""
    answers = []
    with ServedFunction("phase", {"CREFN_LOG_LEVEL": "ERROR"}) as phase:
        for name in ("trainjob-resource-update-failed", "trainjob-resource-update-running"):
            answer = send(phase.url, load_sample(name), timeout=10)
            answers.append({"attributes": answer.ce, "data": json.loads(answer.body)})
    return answers


def figures_of(served: ServedFunction, record: dict[str, Any] | None) -> tuple[float, float, float]:
    """(cold start ms, requests per second, served tree MiB) of a target started anew: the cold start the median
    of COLD starts."""
    headers, body = encode(record) if record is not None else ({}, b"")
    method = "POST" if record is not None else "GET"
    cold = statistics.median(cold_start_ms(served, record) for _ in range(COLD))
    served.start(timeout=30)
    try:
        throughput(served.url + ("metrics" if record is None else ""), headers, body, seconds=1,
                   method=method)  # warm
        rate = throughput(served.url + ("metrics" if record is None else ""), headers, body, seconds=SECONDS,
                          method=method)
        rss = tree_rss_mib(served.pid or 0)
    finally:
        served.stop()
    return cold, rate, rss


def target_figures(rows: list[dict[str, Any]]) -> None:
    """Each target's figures beside the floor's, measured just before it: a machine's load drifts over the
    minutes the rows take, and each ratio is of two measurements a few seconds apart."""
    print("[bench] each served target against the no-op floor, measured beside it ...", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory() as tmp, open(os.devnull, "w") as quiet, \
            LocalCluster(Path(tmp), log=quiet) as cluster, \
            ServedFunction("noop", {"CREFN_LOG_LEVEL": "ERROR"}, source=NOOP) as sink:  # K_SINK, as a pod is bound
        env = {"CREFN_LOG_LEVEL": "ERROR", "CREFN_KUBECONFIG": str(cluster.kubeconfig), "K_SINK": sink.url}
        answers = phase_answers()
        sample = load_sample("trainjob-resource-update-failed")
        for target in sorted(SERVED):
            print(f"[bench]   {target}", file=sys.stderr, flush=True)
            floor = figures_of(ServedFunction("noop", env, source=NOOP), sample)
            ours = figures_of(ServedFunction(target, env), event_for(target, answers))
            for (what, unit), base, value in zip((("cold start", "ms"), ("throughput", "req/s"),
                                                  ("served tree", "MiB")), floor, ours, strict=True):
                note = f"+{value - base:.1f} MiB" if unit == "MiB" else ""
                rows.append({"figure": f"{target}: {what} ({unit})", "baseline": "no-op function",
                             "base": round(base, 1 if unit == "MiB" else None),
                             "ours": round(value, 1 if unit == "MiB" else None),
                             "ratio": round(value / base, 2) if base else 0.0, "note": note})
