"""The demo of `python -m localstack dev` (`make run`): two Jobs the Trainer simulator drives, and the summary that
says whether they ended as expected. The CRE group is the `CREFN_CRE_GROUP` setting, as for the
functions.

- `llama-pretrain` (checkpoint, 2 restarts): its TrainJob starts suspended, is resumed, its pods cannot
  be scheduled (the Trainer holds the next step until the Job says `WorkloadSchedulingBlocked`, which
  the resync tick brings once the 1 s grace is over), are scheduled, one is OOMKilled → checkpoint
  restart → the next attempt completes: Succeeded, one restart.
- `llama-eval` (no checkpoint, no group-nodes annotation: no Workflow placed it): runs, one pod is
  OOMKilled → Failed, with the failure log (pod, node, exit code, the end of the container's log read
  through the API server) and its failedNodes attributed from the nodes its pods were placed on (CRE's
  `DiscoverPlacedNodesForJob`).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from events.types import CRE_GROUP_DEFAULT, CRE_VERSION, MANAGED_LABEL, Reason, group_nodes_annotation, job_label
from functions.domain.conditions import true_exclusive
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
    """Create the namespace if needed, the Job, and with `evidence` a GoodputMeasurement with a checkpoint."""
    if gw.get(NAMESPACES, None, namespace) is None:
        gw.create(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    gw.create(cre_jobs(group), namespace, body)
    if evidence:
        name = body["metadata"]["name"]
        goodput = cre_goodput(group)
        gw.create(goodput, namespace, {"apiVersion": f"{group}/{CRE_VERSION}", "kind": "GoodputMeasurement",
                                       "metadata": {"name": f"{name}-goodput"},
                                       "spec": {"jobRef": {"kind": "Job", "name": name}, "logProfileRef": "default"}})
        gw.patch(goodput, namespace, f"{name}-goodput", {"status": {"lastCheckpointStep": 4200}}, status=True)


def demo_job(group: str) -> dict[str, Any]:
    return {"apiVersion": f"{group}/{CRE_VERSION}", "kind": "Job",
            "metadata": {"name": DEMO_JOB, "labels": {MANAGED_LABEL: "true", "team": "foundation-models"},
                         # the nodes CRE's Workflow places the Job on (what failedNodes attributes)
                         "annotations": {group_nodes_annotation(group): "gpu-node-11, gpu-node-07"}},
            "spec": {"checkpoint": {"pvcName": f"{DEMO_JOB}-ckpt", "maxRestarts": 2},
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
          hold: float = 0.0) -> None:
    """One Trainer simulator per Job; a Job whose pods were just blocked holds its Trainer until it
    says so (the grace is over and a resync tick re-drove it), for at most `hold` seconds, so the demo
    shows the condition."""
    jobs = cre_jobs(stack.group)

    def read(job: str) -> dict[str, Any]:
        return stack.gateway.get(jobs, namespace, job) or {}

    def quiet_for(job: str) -> Callable[[], bool]:
        held_since: list[float] = []

        def quiet() -> bool:
            status = read(job).get("status") or {}
            cond = true_exclusive(status.get("conditions") or [])
            held = bool(status.get("schedulingBlockedSince")) and (
                cond is None or cond.reason != Reason.WORKLOAD_SCHEDULING_BLOCKED)
            if not held:
                held_since.clear()
            elif not held_since:
                held_since.append(time.monotonic())
            waiting = held and time.monotonic() - held_since[0] < hold
            return not waiting and stack.quiet()
        return quiet

    def said(job: str) -> Callable[[int, str], None]:
        return lambda attempt, action: timeline.say(f"-- Trainer: {action} TrainJob of {job}, attempt {attempt}")

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


def count_trainjobs(event_log: Path, job: str, group: str) -> int:
    """How many TrainJobs of the Job the event log saw created (distinct uids of `add` events)."""
    uids = set()
    for r in read_recording(event_log):
        if r["attributes"].get("type") == "dev.knative.apiserver.resource.add" and r["attributes"].get("kind") == \
                "TrainJob" and (r["data"]["metadata"].get("labels") or {}).get(job_label(group)) == job:
            uids.add(r["data"]["metadata"]["uid"])
    return len(uids)
