"""`python -m localstack dev` (behind `make run`): the whole system on one machine, with no cluster.

Starts the local stack (`localstack.stack`), then by default the demo (`localstack.scenarios.demo`) with a
live timeline (`localstack.timeline`) and a summary; the full event log (replayable JSONL) and the
dead letters are written to the output directory. `--replay FILE` reproduces a recorded event log in
the fresh stack instead (`localstack.scenarios.reproduce`). `CREFN_*` settings in the environment reach the
functions.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path
from typing import TextIO

from functions.runtime.resources import cre_jobs
from functions.runtime.settings import Settings
from functions.tools.replay import read_recording
from localstack.cluster.apiserver import LocalCluster
from localstack.eventing.chaos import Chaos, ChaosError
from localstack.processes import until_interrupted
from localstack.scenarios import shadow
from localstack.scenarios.demo import (
    DEMO_FAILING_JOB,
    DEMO_FAILING_SCRIPT,
    DEMO_JOB,
    DEMO_NAMESPACE,
    DEMO_SCRIPT,
    count_trainjobs,
    create_job,
    demo_job,
    drive,
    failing_job,
    measured_complete,
    measurement_of,
    placed_nodes,
    summary,
)
from localstack.scenarios.reproduce import reproduce
from localstack.scenarios.verdicts import SCENARIOS, run_scenario
from localstack.stack import start_stack
from localstack.timeline import Timeline
from localstack.trainer import wait_until

SHADOW_INSTALL = "installs/observe"
"""What `--scenario shadow` deploys: observe mode, its read-only roles and the parity Trigger."""


def run(out_dir: Path, demo: bool = True, keep: bool = False, replay_file: Path | None = None,
        ping_interval: float = 10.0, timeout: float = 180.0, out: TextIO = sys.stdout,
        cluster: LocalCluster | None = None, namespace: str | None = None, scenario: str = "demo",
        chaos: str = "") -> int:
    """`python -m localstack dev`. `namespace` runs the demo (or reproduces the recording) in that namespace and
    confines the sources to it; `cluster` reuses a running API server (the test suite's)."""
    if scenario not in ("demo", "shadow") and scenario not in SCENARIOS:
        print(f"python -m localstack dev: unknown scenario {scenario!r}; choose one of: demo, "
              f"{', '.join(SCENARIOS)}, shadow", file=sys.stderr)
        return 2
    try:
        drills = Chaos.parse(chaos) if chaos else None
    except ChaosError as e:
        print(f"python -m localstack dev: {e}", file=sys.stderr)
        return 2
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in ("events.jsonl", "dead-letters.jsonl"):
        (out_dir / name).unlink(missing_ok=True)
    settings = {k: v for k, v in os.environ.items() if k.startswith("CREFN_")}
    group = Settings().cre_group
    settings.setdefault("CREFN_RESTART_GRACE_SECONDS", "2")
    settings.setdefault("CREFN_LOG_LEVEL", "WARNING")
    install = "installs/default"
    if scenario == "shadow" and demo and not replay_file:
        settings.update(shadow.stack_settings())
        install = SHADOW_INSTALL
    timeline = Timeline(out)
    records = read_recording(replay_file) if replay_file else []
    demo_ns = namespace or DEMO_NAMESPACE
    with tempfile.TemporaryDirectory(prefix="crefn-dev-") as tmp, \
            start_stack(out_dir, timeline, settings, ping_interval, Path(tmp), group, cluster, namespace,
                        chaos=drills, install=install) as stack:
        if drills:
            timeline.say(f"chaos in the Broker: {drills}")
        code = 0
        if replay_file:
            code = reproduce(stack, records, timeline, timeout, namespace)
        elif demo and scenario == "shadow":
            code = shadow.run_shadow(stack, demo_ns, timeline, timeout)
        elif demo and scenario != "demo":
            code = run_scenario(stack, SCENARIOS[scenario], demo_ns, timeline, timeout)
        elif demo:
            timeline.say(f"demo: Job {demo_ns}/{DEMO_JOB}, checkpoint restarts allowed: 2, "
                         "TrainJob starts suspended")
            timeline.say(f"demo: Job {demo_ns}/{DEMO_FAILING_JOB}, no checkpoint: its OOMKilled pod fails it; no "
                         "group-nodes annotation: its failed nodes are where its pods were placed")
            create_job(stack.gateway, demo_ns, demo_job(group), evidence=False, group=group)
            create_job(stack.gateway, demo_ns, failing_job(group), evidence=False, group=group)
            drive(stack, demo_ns, {DEMO_JOB: DEMO_SCRIPT, DEMO_FAILING_JOB: DEMO_FAILING_SCRIPT}, timeline, timeout,
                  hold=min(ping_interval + 2, 30))  # a tick after the 1 s grace says WorkloadSchedulingBlocked
            if stack.alertmanager is not None:  # let Alertmanager send the pretrain Job's resolved notifications
                wait_until(lambda: "firing" not in {v for (_, j, _), v in timeline.notified.items() if j == DEMO_JOB},
                           20, interval=0.5)
            measured = measurement_of(stack, demo_ns, DEMO_JOB)  # frozen by measure's next tick after the verdict
            wait_until(lambda: bool(measured().get("completionTime")), 2 * ping_interval + 10, interval=0.5)
            failed = summary(stack, demo_ns, DEMO_FAILING_JOB, timeline, overall=False)
            state = summary(stack, demo_ns, DEMO_JOB, timeline)
            expected = ("Succeeded", "WorkloadCompleted", 1)
            trainjobs = count_trainjobs(out_dir / "events.jsonl", DEMO_JOB, group)
            job = stack.gateway.get(cre_jobs(group), demo_ns, DEMO_FAILING_JOB) or {}
            log = (job.get("status") or {}).get("failureLog") or {}
            placed = placed_nodes(stack.gateway, demo_ns, DEMO_FAILING_JOB, group)
            attributed = [(n["name"], n["reason"]) for n in (job.get("status") or {}).get("failedNodes") or []]
            figures = measured()
            ok = (state == expected and trainjobs == 2 and not stack.broker.dead
                  and int(figures.get("lastCheckpointStep") or 0) >= 20 and figures.get("interruptionCount") == 1
                  and measured_complete(figures)
                  and failed == ("Failed", "WorkloadFailed", 0) and log.get("reason") == "OOMKilled"
                  and "CUDA out of memory" in str(log.get("tail"))
                  and bool(placed) and attributed == [(n, "WorkloadFailed") for n in placed])
            want = (f"{DEMO_JOB} {expected} with 2 TrainJobs and its measurement complete (JobSucceeded) with a "
                    f"checkpoint and one interruption, {DEMO_FAILING_JOB} Failed with an OOMKilled failure log and its "
                    "placed nodes as failedNodes")
            print(f"\ndemo {'ended as expected' if ok else f'did NOT end as expected (want {want})'}", file=out)
            code = 0 if ok else 1
        if keep:
            print(f"KUBECONFIG={stack.cluster.kubeconfig}", file=out)
            if stack.revisions is not None:  # a new settings ConfigMap beside it: a new revision of every function
                print(f"SETTINGS={stack.revisions.namespace}/{stack.revisions.served}", file=out)
            if stack.prometheus is not None:
                print(f"PROMETHEUS={stack.prometheus.url}", file=out)
            print(f"BROKER={stack.broker.url}", file=out, flush=True)
            # the stand-in pods' logs: POST lines to KUBELET/containerLogs/NS/POD/CONTAINER (localstack/README.md)
            print(f"KUBELET=https://127.0.0.1:{stack.cluster.kubelet.port}", file=out, flush=True)
            print("the stack stays up; Ctrl-C stops everything", file=out, flush=True)
            with contextlib.suppress(KeyboardInterrupt):  # leaving the stack stops every process (`start_stack`)
                until_interrupted()
        return code
