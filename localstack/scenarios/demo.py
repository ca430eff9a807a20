"""The demo of `python -m localstack dev` (`make run`): two Jobs the Trainer simulator drives, and the summary that
says whether they ended as expected. The CRE group is the `CREFN_CRE_GROUP` setting, as for the functions. No CRE
component runs: the GoodputMeasurement's status is the functions' own.

- `llama-pretrain` (checkpoint, 2 restarts, measured by CRE's `megatron-training` LogProfile): suspended, resumed,
  its pods unschedulable (held until the Job says `WorkloadSchedulingBlocked`), scheduled, training (held until
  `measure` has read a checkpoint from the pods' Megatron log: the evidence a restart needs), OOMKilled →
  checkpoint restart → the next attempt resumes and completes: Succeeded, one restart, the measurement frozen.
- `llama-eval` (no checkpoint, no group-nodes annotation): runs, one pod is OOMKilled → Failed, with the failure
  log (pod, node, exit code, the end of the container's log) and its failedNodes from where its pods were placed
  (CRE's `DiscoverPlacedNodesForJob`).
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from events.types import (
    CRE_GROUP_DEFAULT,
    CRE_VERSION,
    MANAGED_LABEL,
    Reason,
    group_nodes_annotation,
    job_label,
)
from functions.domain.conditions import true_exclusive
from functions.domain.goodput_state import when
from functions.domain.gotime import NS
from functions.runtime.errors import AlreadyExists
from functions.runtime.gateway import Gateway
from functions.runtime.resources import NAMESPACES, PODS, cre_goodput, cre_jobs
from functions.tools.replay import read_recording
from localstack.observability.dashboard import print_dashboard
from localstack.observability.prometheus import print_summary as print_prometheus_summary
from localstack.stack import Stack
from localstack.timeline import Timeline
from localstack.trainer import Script, TrainerSimulator, wait_until

DEMO_NAMESPACE, DEMO_JOB, DEMO_FAILING_JOB = "ml-team", "llama-pretrain", "llama-eval"
DEMO_SCRIPT: Script = {0: ["resume", "block", "run", "fail"], 1: ["resume", "run", "complete"]}
DEMO_FAILING_SCRIPT: Script = {0: ["run", "fail"]}


def create_job(gw: Gateway, namespace: str, body: dict[str, Any], evidence: bool,
               group: str = CRE_GROUP_DEFAULT) -> None:
    """Create the namespace if needed, the Job, and with `evidence` a GoodputMeasurement with a checkpoint planted
    (what a measurement controller wrote before: a recording reproduced, the bench's Jobs, which log nothing)."""
    if gw.get(NAMESPACES, None, namespace) is None:
        gw.create(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    gw.create(cre_jobs(group), namespace, body)
    if evidence:
        name = body["metadata"]["name"]
        goodput = cre_goodput(group)
        with contextlib.suppress(AlreadyExists):  # the Job's own, which `measurements` may have made already
            gw.create(goodput, namespace, {"apiVersion": f"{group}/{CRE_VERSION}", "kind": "GoodputMeasurement",
                                           "metadata": {"name": f"{name}-goodput"},
                                           "spec": {"jobRef": {"kind": "Job", "name": name},
                                                    "logProfileRef": "default"}})
        gw.patch(goodput, namespace, f"{name}-goodput", {"status": {"lastCheckpointStep": 4200}}, status=True)


def demo_job(group: str) -> dict[str, Any]:
    return {"apiVersion": f"{group}/{CRE_VERSION}", "kind": "Job",
            "metadata": {"name": DEMO_JOB, "labels": {MANAGED_LABEL: "true", "team": "foundation-models"},
                         # the nodes CRE's Workflow places the Job on (what failedNodes attributes)
                         "annotations": {group_nodes_annotation(group): "gpu-node-11, gpu-node-07"}},
            "spec": {"checkpoint": {"pvcName": f"{DEMO_JOB}-ckpt", "maxRestarts": 2},
                     "goodputMeasurement": {"logProfileRef": "megatron-training"},
                     "schedulingStallGraceSeconds": 1,
                     "workload": {"trainJob": {
                         "runtimeRef": {"name": "torch-distributed"}, "suspend": True,
                         "trainer": {"image": "nvcr.io/nvidia/pytorch:25.01-py3", "numNodes": 2, "numProcPerNode": 8,
                                     "command": ["torchrun"], "args": ["train.py", "--resume-from", "/ckpt"]}}}}}


def failing_job(group: str) -> dict[str, Any]:
    return {"apiVersion": f"{group}/{CRE_VERSION}", "kind": "Job",
            "metadata": {"name": DEMO_FAILING_JOB, "labels": {MANAGED_LABEL: "true", "team": "foundation-models"}},
            "spec": {"workload": {"trainJob": {
                "runtimeRef": {"name": "torch-distributed"},
                "trainer": {"image": "nvcr.io/nvidia/pytorch:25.01-py3", "numNodes": 1, "numProcPerNode": 8,
                            "command": ["torchrun"], "args": ["eval.py"]}}}}}


def placed_nodes(gw: Gateway, namespace: str, job: str, group: str) -> list[str]:
    """The nodes the Job's pods (of every attempt) were placed on, sorted."""
    pods = gw.list_all(PODS, namespace, label_selector=f"{job_label(group)}={job}")
    return sorted({str(p["spec"]["nodeName"]) for p in pods if (p.get("spec") or {}).get("nodeName")})


def final_state(job: dict[str, Any]) -> tuple[str, str, int]:
    status = job.get("status") or {}
    cond = true_exclusive(status.get("conditions") or [])
    return (cond.type if cond else "", cond.reason if cond else "", int(status.get("restartCount", 0)))


def drive(stack: Stack, namespace: str, scripts: dict[str, Script], timeline: Timeline, timeout: float,
          hold: float = 0.0, measured_within: float = 60.0, trained_for: float = 10.0) -> None:
    """One Trainer simulator per Job; a Job whose pods were just blocked holds its Trainer until it
    says so (the grace is over and a resync tick re-drove it), for at most `hold` seconds, so the demo
    shows the condition; a Job with a GoodputMeasurement holds the action after `run` until its workload has trained
    `trained_for` seconds and the measurement names a checkpoint it saved, for at most `measured_within` seconds: a
    real workload trains for hours between two samples of the functions' `measure`, and far longer than a restart
    takes (what its goodput measures), this one for seconds."""
    jobs = cre_jobs(stack.group)
    ran: dict[tuple[str, int], int] = {}  # (Job, attempt) → when its pods were set running (ns, wall clock)

    def read(job: str) -> dict[str, Any]:
        return stack.gateway.get(jobs, namespace, job) or {}

    def training(job: dict[str, Any]) -> bool:
        """Measured, its attempt's pods running, and either trained less than `trained_for` or no checkpoint they
        saved in its measurement yet."""
        status = job.get("status") or {}
        since = ran.get((job.get("metadata", {}).get("name", ""), int(status.get("restartCount") or 0)))
        if not (job.get("spec") or {}).get("goodputMeasurement") or since is None:
            return False
        return (time.time_ns() - since < trained_for * NS
                or not checkpoint_after(measurement_of(stack, namespace, job["metadata"]["name"])(), since))

    def quiet_for(job: str) -> Callable[[], bool]:
        held_since: dict[str, float] = {}

        def holding(why: str, held: bool, limit: float) -> bool:
            if not held:
                held_since.pop(why, None)
                return False
            return time.monotonic() - held_since.setdefault(why, time.monotonic()) < limit

        def quiet() -> bool:
            current = read(job)
            status = current.get("status") or {}
            cond = true_exclusive(status.get("conditions") or [])
            blocked = bool(status.get("schedulingBlockedSince")) and (
                cond is None or cond.reason != Reason.WORKLOAD_SCHEDULING_BLOCKED)
            waiting = holding("blocked", blocked, hold) or holding("measured", training(current), measured_within)
            return not waiting and stack.quiet()
        return quiet

    def said(job: str) -> Callable[[int, str], None]:
        def on_action(attempt: int, action: str) -> None:
            if action == "run":
                ran[(job, attempt)] = time.time_ns()
            timeline.say(f"-- Trainer: {action} TrainJob of {job}, attempt {attempt}")
        return on_action

    trainers = [TrainerSimulator(stack.gateway, namespace, job, script, quiet_for(job), cre_group=stack.group,
                                 kubelet=stack.cluster.kubelet, on_action=said(job)).start()
                for job, script in scripts.items()]

    def settled() -> bool:
        return (all(t.finished for t in trainers) and stack.quiet()
                and all(final_state(read(job))[0] in ("Succeeded", "Failed") for job in scripts))

    wait_until(settled, timeout, interval=0.5)
    for trainer in trainers:
        trainer.stop()


def summary(stack: Stack, namespace: str, job: str, timeline: Timeline, overall: bool = True) -> tuple[str, str, int]:
    """The Job's end state, its Events and failure log; with `overall`, the stack's deliveries and alerts."""
    obj = stack.gateway.get(cre_jobs(stack.group), namespace, job) or {}
    state = final_state(obj)
    outcomes = Counter((o.trigger.removeprefix("crefn-"), o.status) for o in stack.broker.outcomes)
    trainjobs = count_trainjobs(stack.out_dir / "events.jsonl", job, stack.group)
    if overall:
        print("\n== summary", file=timeline.out)
    print(f"   Job {namespace}/{job}: {state[0]}/{state[1]}, restartCount {state[2]}, TrainJobs created {trainjobs}",
          file=timeline.out)
    for cond in (obj.get("status") or {}).get("conditions") or []:
        print(f"     {cond['type']:<11} {cond['status']:<5} {cond['reason']:<18} {cond.get('message', '')}",
              file=timeline.out)
    status = obj.get("status") or {}
    if status.get("failedNodes") and not ((obj.get("metadata") or {}).get("annotations") or {}).get(
            group_nodes_annotation(stack.group)):
        placed = ", ".join(placed_nodes(stack.gateway, namespace, job, stack.group)) or "none"
        print(f"     no group-nodes annotation: failedNodes are the nodes its pods were placed on ({placed})",
              file=timeline.out)
    for node in status.get("failedNodes") or []:
        print(f"     failed node {node['name']} ({node['reason']}): {node.get('message', '')}", file=timeline.out)
    if status.get("schedulingResumedTime"):
        print(f"     scheduling resumed {status['schedulingResumedTime']}; workloadStartTime "
              f"{status.get('workloadStartTime', 'unset')}", file=timeline.out)
    if (log := status.get("failureLog")) and not log.get("podName"):
        print(f"   failureLog: {log.get('reason')}: {log.get('tail')}", file=timeline.out)
    elif log:
        print(f"   failureLog: {log.get('reason')} (exit {log.get('exitCode')}) in pod {log.get('podName')} "
              f"on node {log.get('nodeName')}; last lines:", file=timeline.out)
        for line in str(log.get("tail") or "").splitlines()[-4:]:
            print(f"     | {line}", file=timeline.out)
    measured = stack.gateway.get(cre_goodput(stack.group), namespace, f"{job}-goodput")
    if measured is not None:
        print(f"   GoodputMeasurement {job}-goodput (written by the functions' measure from the pods' logs):",
              file=timeline.out)
        for line in measurement_lines(measured.get("status") or {}):
            print(f"     {line}", file=timeline.out)
    events = stack.gateway.request("GET", f"/api/v1/namespaces/{namespace}/events",
                                   query=[("fieldSelector", f"involvedObject.name={job}")]).get("items") or []
    print("   Kubernetes Events (kubectl describe):", file=timeline.out)
    for event in sorted(events, key=lambda e: e.get("eventTime") or e["metadata"]["creationTimestamp"]):
        print(f"     {event['type']:<8} {event['reason']:<22} {event.get('message', '')}", file=timeline.out)
    if not overall:
        return state
    counts = ", ".join(f"{fn} {st}x{n}" for (fn, st), n in sorted(outcomes.items()))
    print(f"   deliveries: {counts}", file=timeline.out)
    print(f"   events published: {stack.broker.published}; dead letters: {len(stack.broker.dead)}", file=timeline.out)
    if stack.alertmanager is not None:
        active = [f"{a['labels']['job']}: {a['labels']['alertname']} ({a['labels']['severity']})"
                  for a in stack.alertmanager.alerts() if a["labels"].get("namespace") == namespace]
        print(f"   active alerts in Alertmanager: {', '.join(active) or 'none'}", file=timeline.out)
    print_prometheus_summary(stack.prometheus, namespace, timeline.out)
    print_dashboard(stack.prometheus, timeline.out)
    print(f"   event log: {stack.out_dir / 'events.jsonl'} (replay: python -m localstack dev --replay FILE)",
          file=timeline.out)
    return state


def checkpoint_after(status: Mapping[str, Any], since: int) -> bool:
    """Whether a GoodputMeasurement's status names a checkpoint saved after `since` (ns since the epoch; the status
    keeps whole seconds, and the stand-in workload saves its first checkpoint 2.5 s after it starts)."""
    at = when(status.get("lastCheckpointTime"))
    return at is not None and at > since


def measurement_of(stack: Stack, namespace: str, job: str) -> Callable[[], dict[str, Any]]:
    """A reader of the status of the Job's GoodputMeasurement (empty while there is none)."""
    def read() -> dict[str, Any]:
        found = stack.gateway.get(cre_goodput(stack.group), namespace, f"{job}-goodput") or {}
        return dict(found.get("status") or {})
    return read


def measured_complete(status: dict[str, Any]) -> bool:
    """Whether a GoodputMeasurement's status is frozen with a goodput: `Complete=True/JobSucceeded`."""
    return bool(status.get("completionTime")) and any(
        (c.get("type"), c.get("status"), c.get("reason")) == ("Complete", "True", "JobSucceeded")
        for c in status.get("conditions") or [])


def measurement_lines(status: dict[str, Any]) -> list[str]:
    """A GoodputMeasurement's figures, then its conditions."""
    keys = ("currentStep", "lastCheckpointStep", "interruptionCount", "lostWorkTimeSec", "rescheduleTimeSec",
            "resumeTimeSec", "checkpointSaveTimeSec", "result", "completionTime")
    figures = ", ".join(f"{k} {status[k]}" for k in keys if k in status) or "no status"
    conditions = [f"{c['type']}={c['status']}/{c.get('reason', '')}: {c.get('message', '')}"
                  for c in status.get("conditions") or []]
    return [figures, *conditions]


def count_trainjobs(event_log: Path, job: str, group: str) -> int:
    """How many TrainJobs of the Job the event log saw created (distinct uids of `add` events)."""
    uids = set()
    for r in read_recording(event_log):
        if r["attributes"].get("type") == "dev.knative.apiserver.resource.add" and r["attributes"].get("kind") == \
                "TrainJob" and (r["data"]["metadata"].get("labels") or {}).get(job_label(group)) == job:
            uids.add(r["data"]["metadata"]["uid"])
    return len(uids)
