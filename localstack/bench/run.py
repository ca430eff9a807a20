"""`make bench`: the functions' cost against baselines measured in the same run, printed as one table with
ratios (and written as JSON with `make bench BENCH_JSON=FILE`). Figures are reported, never asserted.

The figures here: `phase` over HTTP (throughput by wrk, memory, cold start) against a no-op
functions-framework function served the same way (`localstack/bench/noop.py`), its cold start also against the
least a `phase` within SPEC loads (`localstack/bench/models.py`: pydantic and its two models); `phase` in process
against parsing alone; a node health expression through the CEL budget's worker process (`functions.runtime.celbudget`)
against the same evaluation in process; a resync tick over N Jobs against the API server's own LIST. The
end-to-end figures come from `localstack.bench.stack`. Each figure and its baseline in full:
docs/development.md#benchmarks-make-bench.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

from events.objects import TrainJob
from functions.domain.adapter import decide_phase
from functions.domain.cel import outcomes
from functions.runtime.celbudget import CelBudget
from functions.runtime.codec import encode
from localstack.bench.calls import restart_call_figures
from localstack.bench.history import Counting, history_figures, job_with_trainjob, scrape_figures
from localstack.bench.served import CLIENTS, MODELS, NOOP, cold_start_ms, target_figures, throughput, tree_rss_mib
from localstack.bench.stack import lifecycle_figures
from localstack.samples import load_sample
from localstack.serving import ServedFunction

ROUNDS = 3
COLD_ROUNDS = 5
"""Cold starts of each of the floor, the models floor and `phase`, alternated (their medians)."""


def per_call(fn: Callable[[], object], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n


def http_figures(rows: list[dict[str, Any]]) -> None:
    sample = load_sample("trainjob-resource-update-failed")
    headers, body = encode(sample)
    env = {"CREFN_LOG_LEVEL": "ERROR"}
    floor_rps, phase_rps, floor_rss, phase_rss = 0.0, 0.0, 0.0, 0.0
    with ServedFunction("noop", env, source=NOOP) as floor, ServedFunction("phase", env) as phase:
        for url in (floor.url, phase.url):
            throughput(url, headers, body, seconds=1)  # warm up
        for _ in range(ROUNDS):
            floor_rps = max(floor_rps, throughput(floor.url, headers, body))
            phase_rps = max(phase_rps, throughput(phase.url, headers, body))
        floor_rss = tree_rss_mib(floor.pid or 0)
        phase_rss = tree_rss_mib(phase.pid or 0)
    rows.append({"figure": f"throughput, {CLIENTS} clients (req/s)", "baseline": "no-op function",
                 "base": round(floor_rps), "ours": round(phase_rps), "ratio": round(phase_rps / floor_rps, 2)})
    rows.append({"figure": "resident memory, served tree (MiB)", "baseline": "no-op function",
                 "base": round(floor_rss, 1), "ours": round(phase_rss, 1), "ratio": round(phase_rss / floor_rss, 2)})
    cold: dict[str, list[float]] = {"noop": [], "models": [], "phase": []}
    for _ in range(COLD_ROUNDS):  # alternated, so that a drift of the machine's load reaches the three alike
        cold["noop"].append(cold_start_ms(ServedFunction("noop", env, source=NOOP), sample))
        cold["models"].append(cold_start_ms(ServedFunction("models", env, source=MODELS), sample))
        cold["phase"].append(cold_start_ms(ServedFunction("phase", env), sample))
    floor_cold, models_cold, phase_cold = (statistics.median(cold[name]) for name in ("noop", "models", "phase"))
    rows.append({"figure": "cold start, process → first answer (ms)", "baseline": "no-op function",
                 "base": round(floor_cold), "ours": round(phase_cold), "ratio": round(phase_cold / floor_cold, 2)})
    rows.append({"figure": "cold start of the models floor (ms)", "baseline": "no-op function",
                 "base": round(floor_cold), "ours": round(models_cold), "ratio": round(models_cold / floor_cold, 2),
                 "note": "pydantic, the TrainJob and phase-event models"})
    rows.append({"figure": "cold start, phase over the models floor (ms)", "baseline": "models floor",
                 "base": round(models_cold), "ours": round(phase_cold), "ratio": round(phase_cold / models_cold, 2)})


def in_process_figures(rows: list[dict[str, Any]]) -> None:
    obj = load_sample("trainjob-resource-update-failed")["data"]
    parse_only = per_call(lambda: TrainJob.model_validate(obj), 20000)
    both = per_call(lambda: decide_phase(TrainJob.model_validate(obj)), 20000)
    rows.append({"figure": "phase in process, parse + adapter (µs)", "baseline": "parse alone",
                 "base": round(parse_only * 1e6, 2), "ours": round(both * 1e6, 2),
                 "ratio": round(both / parse_only, 2)})


def cel_figures(rows: list[dict[str, Any]]) -> None:
    node = {"metadata": {"name": "gpu-1", "labels": {f"example.com/label-{i}": "true" for i in range(30)},
                         "annotations": {"example.com/inventory": "x" * 2000}},
            "status": {"conditions": [{"type": f"Check{i}", "status": "False"} for i in range(15)],
                       "images": [{"names": [f"registry.example.com/image-{i}:v1"], "sizeBytes": i}
                                  for i in range(50)]}}
    expression = "node.status.conditions.exists(c, c.type == 'GPUHealthy' && c.status == 'False')"
    budget = CelBudget(timedelta(seconds=1))
    try:
        budget.outcomes("node", expression, [node])  # the worker started
        inside = per_call(lambda: list(outcomes("node", expression, [node])), 5000)
        through = per_call(lambda: budget.outcomes("node", expression, [node]), 5000)
    finally:
        budget.close()
    rows.append({"figure": "node health CEL per evaluation (µs)", "baseline": "in-process",
                 "base": round(inside * 1e6, 1), "ours": round(through * 1e6, 1), "ratio": round(through / inside, 2)})


def resync_figures(rows: list[dict[str, Any]], jobs: int) -> None:
    from functions.resync import read as resync
    from functions.runtime.codec import to_envelope
    from functions.runtime.context import Context
    from functions.runtime.resources import NAMESPACES, cre_jobs
    from functions.runtime.settings import Settings
    from localstack.cluster.apiserver import LocalCluster

    group, ns = "nvcre.nvidia.com", "bench"
    with tempfile.TemporaryDirectory() as tmp, open(os.devnull, "w") as quiet, \
            LocalCluster(Path(tmp), log=quiet) as cluster:
        gw = cluster.gateway()
        gw.create(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        print(f"[bench] creating {jobs} Jobs in step with their TrainJobs ...", file=sys.stderr, flush=True)
        with ThreadPoolExecutor(max_workers=8) as pool:
            made = pool.map(lambda n: job_with_trainjob(gw, f"job-{n}", finished=False), range(jobs))
            for i, _ in enumerate(made, 1):
                if i % 500 == 0:
                    print(f"[bench]   {i}/{jobs}", file=sys.stderr, flush=True)
        start = time.perf_counter()
        listed = len(gw.list_all(cre_jobs(group), None, label_selector="crefn.dev/managed=true"))
        list_s = time.perf_counter() - start
        counting = Counting(cluster.gateway().transport)
        sink = ServedFunction("noop", {"CREFN_LOG_LEVEL": "ERROR"}, source=NOOP).start()
        ctx = Context(Settings(kubeconfig=str(cluster.kubeconfig), k_sink=sink.url), gateway=counting)
        ping = to_envelope({"attributes": {"specversion": "1.0", "id": "bench", "source": "/bench",
                                           "type": "dev.knative.sources.ping"}, "data": {}})
        resync.handle(ping, ctx)  # warm
        Counting.calls = 0
        start = time.perf_counter()
        outcome = resync.handle(ping, ctx)
        tick_s = time.perf_counter() - start
        sink.stop()
    rows.append({"figure": f"resync tick over {listed} Jobs in step (s)", "baseline": "the API server's LIST",
                 "base": round(list_s, 2), "ours": round(tick_s, 2), "ratio": round(tick_s / list_s, 2)})
    budget = 3 * -(-listed // 500)
    rows.append({"figure": "resync API requests per tick", "baseline": "3 * ceil(N/500)", "base": budget,
                 "ours": Counting.calls, "ratio": round(Counting.calls / budget, 2), "note": outcome.reason})


ROWS = ("http", "targets", "resync", "lifecycle", "calls", "tick", "scrape")
"""The groups of rows, in order; `BENCH_ROWS=calls,resync` runs only those (all by default)."""


def main() -> int:
    rows: list[dict[str, Any]] = []
    chosen = {r.strip() for r in os.environ.get("BENCH_ROWS", "").split(",") if r.strip()} or set(ROWS)
    if unknown := chosen - set(ROWS):
        raise SystemExit(f"BENCH_ROWS: unknown {', '.join(sorted(unknown))} (known: {', '.join(ROWS)})")
    if "http" in chosen and os.environ.get("BENCH_HTTP", "1") != "0":
        print("[bench] phase over HTTP against the no-op floor ...", file=sys.stderr, flush=True)
        http_figures(rows)
        in_process_figures(rows)
        cel_figures(rows)
    if "targets" in chosen:
        target_figures(rows)
    jobs = int(os.environ.get("BENCH_JOBS", "1000"))
    if jobs and "resync" in chosen:
        resync_figures(rows, jobs)
    sequential, burst = int(os.environ.get("BENCH_RESTARTS", "100")), int(os.environ.get("BENCH_BURST", "1000"))
    if sequential and "lifecycle" in chosen:
        lifecycle_figures(rows, sequential, burst, os.environ.get("BENCH_PROFILE", ""))
    if "calls" in chosen:
        restart_call_figures(rows, int(os.environ.get("BENCH_CALL_RESTARTS", "5")))
        restart_call_figures(rows, int(os.environ.get("BENCH_CALL_RESTARTS", "5")), grace=3)
    if "tick" in chosen:
        history_figures(rows, int(os.environ.get("BENCH_TICK_RUNNING", "150")),
                        int(os.environ.get("BENCH_TICK_FINISHED", "2850")))
    if "scrape" in chosen:
        scrape_figures(rows, int(os.environ.get("BENCH_SCRAPE_JOBS", "10000")))
    print(f"\n{'figure':<52} {'baseline':<24} {'baseline':>10} {'ours':>10} {'ratio':>7}")
    for r in rows:
        print(f"{r['figure']:<52} {r['baseline']:<24} {r['base']:>10} {r['ours']:>10} {r['ratio']:>6}x"
              + (f"  ({r['note']})" if r.get("note") else ""))
    if out := os.environ.get("BENCH_JSON"):
        Path(out).write_text(json.dumps(rows, indent=2) + "\n")
        print(f"\nwritten to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
