"""`make bench`: how fast `phase` answers, against baselines measured in the same run.

1. In process: the adapter on a parsed TrainJob, and parse + adapter, against parsing alone.
2. Over HTTP to functions-framework (one worker, sequential requests on loopback): a Resource-mode
   TrainJob event end to end, against the cheapest request the same server answers (a CloudEvent of
   an unknown type: transport and routing only, 400). The ratio is the cost of our work on top of
   the framework. The served process's resident memory is reported after the run.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from events.objects import TrainJob
from functions.rules.adapter import decide_phase
from functions.transport import send
from localstack.samples import load_sample
from localstack.serving import ServedFunction


def per_call(fn: Callable[[], object], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n


def latencies(url: str, record: dict[str, Any], n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        send(url, record)
        out.append(time.perf_counter() - start)
    return out


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main(n_local: int = 20000, n_http: int = 1000) -> int:
    sample = load_sample("trainjob-resource-update-failed")
    obj = sample["data"]
    parsed = TrainJob.model_validate(obj)
    parse_only = per_call(lambda: TrainJob.model_validate(obj), n_local)
    adapter = per_call(lambda: decide_phase(parsed), n_local)
    both = per_call(lambda: decide_phase(TrainJob.model_validate(obj)), n_local)
    print("in process (per call)")
    print(f"  {'case':<28} {'µs':>8} {'vs parse':>9}")
    for name, value in (("parse TrainJob (baseline)", parse_only), ("adapter", adapter), ("parse + adapter", both)):
        print(f"  {name:<28} {value * 1e6:8.2f} {value / parse_only:8.2f}x")

    baseline_record = {"attributes": {**sample["attributes"], "type": "com.example.unknown"}, "data": {}}
    with ServedFunction("phase", {"CREFN_LOG_LEVEL": "ERROR"}) as served:
        latencies(served.url, sample, 50)  # warm up
        base = latencies(served.url, baseline_record, n_http)
        work = latencies(served.url, sample, n_http)
        pid = served.pid
        memory = rss_mib(pid) if pid else 0.0
    print(f"\nover HTTP, {n_http} sequential requests each")
    print(f"  {'case':<28} {'p50 ms':>8} {'p95 ms':>8} {'req/s':>8} {'p50 vs baseline':>16}")
    b50 = statistics.median(base)
    for name, values in (("unknown type → 400 (baseline)", base), ("TrainJob update → 200", work)):
        p50 = statistics.median(values)
        p95 = statistics.quantiles(values, n=20)[18]
        print(f"  {name:<28} {p50 * 1e3:8.2f} {p95 * 1e3:8.2f} {len(values) / sum(values):8.0f} {p50 / b50:15.2f}x")
    print(f"\nserved phase process: {memory:.1f} MiB resident after {2 * n_http + 50} requests")
    return 0


if __name__ == "__main__":
    sys.exit(main())
