"""The demo of `cre-fn dev` (`make run`): a Job whose TrainJob the Trainer simulator drives through
suspend → resume → failure → checkpoint restart → success, and the summary that says whether it
ended as expected. The CRE group is the `CREFN_CRE_GROUP` setting, as for the functions.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from events.types import CRE_GROUP_DEFAULT, CRE_VERSION, MANAGED_LABEL, group_nodes_annotation, job_label
from functions.gateway import Gateway
from functions.replay import read_recording
from functions.resources import NAMESPACES, cre_goodput, cre_jobs
from functions.rules.conditions import true_exclusive
from localstack.stack import Stack
from localstack.timeline import Timeline
from localstack.trainer import Script, TrainerSimulator, wait_until

DEMO_NAMESPACE, DEMO_JOB = "ml-team", "llama-pretrain"
DEMO_SCRIPT: Script = {0: ["resume", "run", "fail"], 1: ["resume", "run", "complete"]}


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
                     "workload": {"trainJob": {
                         "runtimeRef": {"name": "torch-distributed"}, "suspend": True,
                         "trainer": {"image": "nvcr.io/nvidia/pytorch:25.01-py3", "numNodes": 2, "numProcPerNode": 8,
                                     "command": ["torchrun"], "args": ["train.py", "--resume-from", "/ckpt"]}}}}}


def final_state(job: dict[str, Any]) -> tuple[str, str, int]:
    status = job.get("status") or {}
    cond = true_exclusive(status.get("conditions") or [])
    return (cond.type if cond else "", cond.reason if cond else "", int(status.get("restartCount", 0)))


def drive(stack: Stack, namespace: str, job: str, script: Script, timeline: Timeline, timeout: float) -> None:
    trainer = TrainerSimulator(stack.gateway, namespace, job, script, stack.quiet, cre_group=stack.group,
                               on_action=lambda a, act: timeline.say(f"-- Trainer: {act} TrainJob attempt {a}")).start()
    jobs = cre_jobs(stack.group)

    def settled() -> bool:
        obj = stack.gateway.get(jobs, namespace, job) or {}
        return trainer.finished and final_state(obj)[0] in ("Succeeded", "Failed") and stack.quiet()

    wait_until(settled, timeout, interval=0.5)
    trainer.stop()


def summary(stack: Stack, namespace: str, job: str, timeline: Timeline) -> tuple[str, str, int]:
    obj = stack.gateway.get(cre_jobs(stack.group), namespace, job) or {}
    state = final_state(obj)
    outcomes = Counter((o.trigger.removeprefix("crefn-"), o.status) for o in stack.broker.outcomes)
    trainjobs = count_trainjobs(stack.out_dir / "events.jsonl", job, stack.group)
    print("\n== summary", file=timeline.out)
    print(f"   Job {namespace}/{job}: {state[0]}/{state[1]}, restartCount {state[2]}, TrainJobs created {trainjobs}",
          file=timeline.out)
    for cond in (obj.get("status") or {}).get("conditions") or []:
        print(f"     {cond['type']:<11} {cond['status']:<5} {cond['reason']:<18} {cond.get('message', '')}",
              file=timeline.out)
    for node in (obj.get("status") or {}).get("failedNodes") or []:
        print(f"     failed node {node['name']} ({node['reason']}): {node.get('message', '')}", file=timeline.out)
    events = stack.gateway.request("GET", f"/api/v1/namespaces/{namespace}/events",
                                   query=[("fieldSelector", f"involvedObject.name={job}")]).get("items") or []
    print("   Kubernetes Events (kubectl describe):", file=timeline.out)
    for event in sorted(events, key=lambda e: e.get("eventTime") or e["metadata"]["creationTimestamp"]):
        print(f"     {event['type']:<8} {event['reason']:<22} {event.get('message', '')}", file=timeline.out)
    counts = ", ".join(f"{fn} {st}x{n}" for (fn, st), n in sorted(outcomes.items()))
    print(f"   deliveries: {counts}", file=timeline.out)
    print(f"   events published: {stack.broker.published}; dead letters: {len(stack.broker.dead)}", file=timeline.out)
    if stack.alertmanager is not None:
        active = [f"{a['labels']['alertname']} ({a['labels']['severity']})" for a in stack.alertmanager.alerts()
                  if a["labels"].get("namespace") == namespace and a["labels"].get("job") == job]
        print(f"   active alerts in Alertmanager: {', '.join(active) or 'none'}", file=timeline.out)
    print(f"   event log: {stack.out_dir / 'events.jsonl'} (replay: cre-fn dev --replay FILE)", file=timeline.out)
    return state


def count_trainjobs(event_log: Path, job: str, group: str) -> int:
    """How many TrainJobs of the Job the event log saw created (distinct uids of `add` events)."""
    uids = set()
    for r in read_recording(event_log):
        if r["attributes"].get("type") == "dev.knative.apiserver.resource.add" and r["attributes"].get("kind") == \
                "TrainJob" and (r["data"]["metadata"].get("labels") or {}).get(job_label(group)) == job:
            uids.add(r["data"]["metadata"]["uid"])
    return len(uids)
