"""The verdict scenarios of `python -m localstack dev --scenario NAME`: one Job each, driven by the Trainer simulator,
with what a cluster would do beside it (a node going bad, a training that stops stepping, measurements
that come in too low), and the outcome a user should see. `demo` (the default) is `localstack.scenarios.demo`.

- `node-failure`: the Job's pods run on `gpu-node-1`; it is cordoned (`spec.unschedulable`), the Job's
  `nodeHealthMonitor` finds it: `HardwareFailed` with the node in `failedNodes`, and the run goes on to
  succeed (report only, CRE's Job tier).
- `stall`: the GoodputMeasurement `measurements` created for the Job reports its last step ten minutes
  ago at 1.5 s a step: stalled, and with no checkpoint the Job fails `WorkloadStalled`.
- `thresholds`: the run succeeds, then its GoodputMeasurement completes with a goodput ratio of 0.72
  against `value >= 0.9`: `ValidationFailed` / `ThresholdViolated`; the Job stays Succeeded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from events.types import CRE_VERSION, MANAGED_LABEL
from functions.runtime.resources import NODES, cre_goodput, cre_jobs
from localstack.scenarios.demo import create_job, summary
from localstack.stack import Stack
from localstack.timeline import Timeline
from localstack.trainer import Script, TrainerSimulator, wait_until

Hook = Callable[[Stack, str, str, int, str], None]
"""Called after each Trainer action: (stack, namespace, job, attempt, action)."""


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    job: Callable[[str], dict[str, Any]]
    script: Script
    after: Hook
    expect: Callable[[dict[str, Any]], str]
    """The Job at the end → "" when it is what the scenario promises, else what differs."""


def job_body(group: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    workload = {"trainJob": {"runtimeRef": {"name": "torch-distributed"},
                             "trainer": {"image": "nvcr.io/nvidia/pytorch:25.01-py3", "numNodes": 1,
                                         "numProcPerNode": 8, "command": ["torchrun"], "args": ["train.py"]}}}
    return {"apiVersion": f"{group}/{CRE_VERSION}", "kind": "Job",
            "metadata": {"name": name, "labels": {MANAGED_LABEL: "true", "team": "foundation-models"}},
            "spec": {"workload": workload, **spec}}


def conditions(job: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c.get("reason", "")) for c in (job.get("status") or {}).get("conditions") or []}


def stamp(delta: timedelta = timedelta(0)) -> str:
    return (datetime.now(UTC) + delta).strftime("%Y-%m-%dT%H:%M:%SZ")


def goodput(stack: Stack, namespace: str, job: str, status: dict[str, Any]) -> None:
    """Patch the status of the GoodputMeasurement `measurements` created for the Job (once it exists)."""
    res = cre_goodput(stack.group)
    wait_until(lambda: stack.gateway.get(res, namespace, f"{job}-goodput") is not None, 20)
    stack.gateway.patch(res, namespace, f"{job}-goodput", {"status": status}, status=True)


def cordon_after_run(stack: Stack, namespace: str, job: str, attempt: int, action: str) -> None:
    if action == "run":
        stack.gateway.patch(NODES, None, "gpu-node-1", {"spec": {"unschedulable": True}})


def stall_after_run(stack: Stack, namespace: str, job: str, attempt: int, action: str) -> None:
    if action == "run":
        goodput(stack, namespace, job, {"startTime": stamp(-timedelta(minutes=30)),
                                        "lastStepTimestamp": stamp(-timedelta(minutes=10)),
                                        "avgStepTimeSec": "1.5", "logInterval": 1, "currentStep": 812})


def measure_after_complete(stack: Stack, namespace: str, job: str, attempt: int, action: str) -> None:
    if action == "complete":
        goodput(stack, namespace, job, {"result": "0.72", "conditions": [
            {"type": "Complete", "status": "True", "reason": "Completed", "message": "measurement complete",
             "lastTransitionTime": stamp()}]})


def expect(wanted: dict[str, tuple[str, str]]) -> Callable[[dict[str, Any]], str]:
    def check(job: dict[str, Any]) -> str:
        have = conditions(job)
        wrong = [f"{t} {have.get(t)} (want {v})" for t, v in wanted.items() if have.get(t) != v]
        return "; ".join(wrong)
    return check


MONITOR = {"nodeHealthMonitor": {"cel": {"expression": "node.spec.unschedulable == true"}}}
MEASURED = {"goodputMeasurement": {"logProfileRef": "pytorch", "sampleInterval": "1s"}}

SCENARIOS: dict[str, Scenario] = {s.name: s for s in (
    Scenario("node-failure", "a node of the run is cordoned: HardwareFailed, the run goes on",
             lambda g: job_body(g, "llama-nodes", MONITOR), {0: ["run", "complete"]}, cordon_after_run,
             expect({"Succeeded": ("True", "WorkloadCompleted"),
                     "HardwareFailed": ("True", "HardwareFailureDetected")})),
    Scenario("stall", "the training stops stepping: WorkloadStalled",
             lambda g: job_body(g, "llama-stall", {**MEASURED, "stallMultiplier": 2}), {0: ["run"]}, stall_after_run,
             expect({"Failed": ("True", "WorkloadStalled")})),
    Scenario("thresholds", "the run succeeds too slowly: ValidationFailed",
             lambda g: job_body(g, "llama-bench", {**MEASURED, "thresholds": {"goodputRatio": "value >= 0.9"}}),
             {0: ["run", "complete"]}, measure_after_complete,
             expect({"Succeeded": ("True", "WorkloadCompleted"), "ValidationFailed": ("True", "ThresholdViolated")})),
)}


def run_scenario(stack: Stack, scenario: Scenario, namespace: str, timeline: Timeline, timeout: float) -> int:
    """Create the scenario's Job, drive it, wait for its promised outcome (or the timeout), print the
    Job's summary; 0 when the outcome is the promised one."""
    body = scenario.job(stack.group)
    name = body["metadata"]["name"]
    timeline.say(f"scenario {scenario.name}: Job {namespace}/{name}: {scenario.description}")
    create_job(stack.gateway, namespace, body, evidence=False, group=stack.group)
    jobs = cre_jobs(stack.group)

    def read() -> dict[str, Any]:
        return stack.gateway.get(jobs, namespace, name) or {}

    def acted(attempt: int, action: str) -> None:
        timeline.say(f"-- Trainer: {action} TrainJob of {name}, attempt {attempt}")
        scenario.after(stack, namespace, name, attempt, action)

    trainer = TrainerSimulator(stack.gateway, namespace, name, scenario.script, stack.quiet, cre_group=stack.group,
                               kubelet=stack.cluster.kubelet, on_action=acted).start()
    wait_until(lambda: trainer.finished and not scenario.expect(read()) and stack.quiet(), timeout, interval=0.5)
    trainer.stop()
    summary(stack, namespace, name, timeline)
    differs = scenario.expect(read())
    print(f"\nscenario {scenario.name} {'ended as expected' if not differs else f'did NOT end as expected: {differs}'}",
          file=timeline.out)
    return 0 if not differs else 1
