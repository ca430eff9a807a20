"""`make bench`'s "API calls per restart": what one checkpoint restart costs the API server, counted from its
audit log (`LocalCluster(audit_users=...)` records every request of every function's ServiceAccount).

Through the local stack (`localstack.stack.start_stack`, restart grace 0, no resync tick), Jobs are created
and their first TrainJob set running; once the Broker is idle, the audit log is marked, each TrainJob is
failed, and the count stops when the next attempt's TrainJob exists and the Broker is idle again: the
restart, the launch of the next attempt, its status, the alerts and the measurements, everything that one
failure sets off. The calls are counted per function and per (verb, resource), averaged over the restarts,
and printed as a table. The decisions behind the figure: docs/cost.md.
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from functions.domain.attempts import workload_name
from functions.registry import TARGETS
from functions.runtime.resources import TRAINJOBS
from localstack.bench.stack import GROUP, NAMESPACE, SETTINGS, Creates, QuietTimeline, launch_running, say
from localstack.eventing.apisource import WatchSource
from localstack.manifests import service_account_user
from localstack.stack import start_stack
from localstack.trainer import apply_action

GOAL = 8
FUNCTION_USERS = {service_account_user(f"crefn-{t}"): t for t in TARGETS}


def calls_of(entries: list[dict[str, Any]]) -> Counter[tuple[str, str, str]]:
    """(function, verb, resource) → calls, for the audit entries made by a function's ServiceAccount."""
    counted: Counter[tuple[str, str, str]] = Counter()
    for e in entries:
        function = FUNCTION_USERS.get((e.get("user") or {}).get("username", ""))
        if function is None:
            continue
        ref = e.get("objectRef") or {}
        resource = ref.get("resource", "") + (f"/{ref['subresource']}" if ref.get("subresource") else "")
        counted[(function, str(e.get("verb", "")), resource)] += 1
    return counted


def table(counted: Counter[tuple[str, str, str]], restarts: int) -> str:
    """The per-call table: function, verb, resource, calls per restart."""
    lines = [f"{'function':<14} {'verb':<8} {'resource':<36} {'per restart':>11}"]
    for (function, verb, resource), n in sorted(counted.items()):
        lines.append(f"{function:<14} {verb:<8} {resource:<36} {n / restarts:>11g}")
    return "\n".join(lines)


def restart_call_figures(rows: list[dict[str, Any]], restarts: int, grace: int = 0) -> None:
    """The calls of `restarts` restarts with a restart grace of `grace` seconds: with none, the goal's row (every
    call per function, and the total against the goal); with one, the total alone (the grace's own cost: its
    annotation, and `launch` creating the next attempt once it is over)."""
    with tempfile.TemporaryDirectory(prefix="crefn-bench-") as tmp, open(os.devnull, "w") as quiet:
        out = Path(tmp) / "out"
        out.mkdir()
        say(f"starting the local stack with every function's request audited (restart grace {grace} s) ...")
        settings = {**SETTINGS, "CREFN_RESTART_GRACE_SECONDS": str(grace)}
        with start_stack(out, QuietTimeline(out=quiet), settings, 3600, Path(tmp), GROUP, monitoring=False,
                         audit=True, knative=False) as stack:
            creates = Creates()
            source = WatchSource(stack.cluster.gateway(), TRAINJOBS, creates.publish, namespace=NAMESPACE).start()
            names = [f"calls-{i}" for i in range(restarts)]
            launch_running(stack, creates, names)
            mark = stack.cluster.audit_lines()
            for name in names:
                apply_action(stack.gateway, {"metadata": {"namespace": NAMESPACE, "name": workload_name(name)}},
                             "fail")
                if creates.first((NAMESPACE, workload_name(name), "1"), timeout=30 + grace) is None:
                    raise SystemExit(f"Job {name}: no next attempt within {30 + grace} s of its failure")
                stack.broker.wait_idle(timeout=60, quiet=0.5)
            counted = calls_of(stack.cluster.audit_entries(mark))
            source.stop()
    total = sum(counted.values()) / restarts
    if grace:
        rows.append({"figure": f"API calls per restart, restart grace {grace} s", "baseline": "-", "base": "-",
                     "ours": round(total, 2), "ratio": "-"})
        return
    print(f"\nAPI calls per restart, from the API server's audit log ({restarts} restarts):\n"
          + table(counted, restarts) + "\n", flush=True)
    per_function: Counter[str] = Counter()
    for (function, _, _), n in counted.items():
        per_function[function] += n
    for function, n in sorted(per_function.items()):
        rows.append({"figure": f"API calls per restart: {function}", "baseline": "-", "base": "-",
                     "ours": round(n / restarts, 2), "ratio": "-"})
    rows.append({"figure": "API calls per restart: all functions", "baseline": "goal", "base": GOAL,
                 "ours": round(total, 2), "ratio": round(total / GOAL, 2)})
