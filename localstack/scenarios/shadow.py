"""`python -m localstack dev --scenario shadow`: the functions in observe mode beside a stand-in for CRE's
controller, which writes CRE's verdicts on seven Jobs — four the functions would write too, three they would
not — and the parity table at the end (`functions.tools.paritytable`). It ends 0 when exactly the planted
differences are reported.

The stand-in does what CRE does on the cluster, by hand: creates the Job's TrainJob `<job>-workload` (controlled
by the Job), sets its state, places a pod on a node, then writes the verdict on the Job's status. How the
comparison works: docs/switching.md#how-a-verdict-is-compared
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from events.types import CRE_VERSION, job_label
from functions.domain.deletion import finalizer
from functions.runtime.resources import TRAINJOBS, cre_jobs
from functions.tools.paritytable import Table
from functions.tools.replay import read_recording
from localstack.cluster.pods import create_pod, terminate
from localstack.scenarios.demo import create_job
from localstack.scenarios.verdicts import job_body, stamp
from localstack.stack import Stack
from localstack.timeline import Timeline
from localstack.trainer import wait_until

SETTLE_SECONDS = "2"
"""The scenario's settle window (`CREFN_PARITY_SETTLE_SECONDS`): its TrainJobs change a moment before CRE writes."""
CHECKPOINT = {"checkpoint": {"pvcName": "ckpt", "maxRestarts": 2}}


@dataclass(frozen=True)
class Planted:
    """One Job: what its workload does, CRE's verdict on it, and the fields the functions would write otherwise."""

    name: str
    spec: dict[str, Any]
    workload: str
    """`Running`, `Failed` (its pod OOMKilled on gpu-node-3), `Complete` or `Pending` (suspended)."""
    verdict: tuple[str, str, str]
    restarts: int = 0
    started: bool = False
    """CRE wrote `workloadStartTime`."""
    attributed: bool = False
    """CRE wrote `failedNodes` (gpu-node-3) and the `failureLog` of the OOMKilled pod."""
    differs: tuple[str, ...] = ()
    evidence: bool = False


def exclusive(true_type: str, reason: str, message: str) -> list[dict[str, Any]]:
    return [{"type": t, "status": "True" if t == true_type else "False",
             "reason": reason if t == true_type else "NotApplicable", "message": message if t == true_type else "",
             "observedGeneration": 1, "lastTransitionTime": stamp()} for t in ("InProgress", "Succeeded", "Failed")]


JOBS: tuple[Planted, ...] = (
    Planted("shadow-running", {}, "Running",
            ("InProgress", "WorkloadRunning", "Workload TrainJob/{job}-workload is running"), started=True),
    Planted("shadow-failed", {}, "Failed",
            ("Failed", "WorkloadFailed", "Workload TrainJob/{job}-workload failed: exit"), attributed=True),
    Planted("shadow-restarted", CHECKPOINT, "Failed",
            ("InProgress", "WorkloadRestarting", "Restarting workload from checkpoint (restart 1/2)"), restarts=1),
    Planted("shadow-completed", {}, "Complete",
            ("Succeeded", "WorkloadCompleted", "Workload TrainJob/{job}-workload completed successfully"),
            started=True),
    Planted("planted-restart", {}, "Failed",
            ("InProgress", "WorkloadRestarting", "Restarting workload from checkpoint (restart 1/1)"), restarts=1,
            differs=("phase", "restartCount")),
    Planted("planted-failure", CHECKPOINT, "Failed",
            ("Failed", "WorkloadFailed", "Workload TrainJob/{job}-workload failed: exit"),
            differs=("phase", "restartCount"), evidence=True),
    Planted("planted-pending", {}, "Running",
            ("InProgress", "WorkloadPending", "Workload TrainJob/{job}-workload is pending"),
            differs=("phase", "workloadStartTime")),
)
"""`planted-failure` has a checkpoint, restarts left and checkpoint evidence: the functions would restart it."""


def play_cre(stack: Stack, namespace: str, planted: Planted) -> None:
    """What CRE's controller does for the Job: its finalizer, its TrainJob, the workload's state, then the
    verdict."""
    group, gw, name = stack.group, stack.gateway, planted.name
    create_job(gw, namespace, job_body(group, name, planted.spec), evidence=planted.evidence, group=group)
    job = gw.patch(cre_jobs(group), namespace, name, {"metadata": {"finalizers": [finalizer(group)]}})
    trainjob = f"{name}-workload"
    gw.create(TRAINJOBS, namespace, {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": trainjob, "labels": {job_label(group): name}, "ownerReferences": [
            {"apiVersion": f"{group}/{CRE_VERSION}", "kind": "Job", "name": name, "uid": job["metadata"]["uid"],
             "controller": True}]},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "suspend": planted.workload == "Pending"}})
    pod = f"{trainjob}-node-0-0"
    create_pod(gw, namespace, pod, {job_label(group): name}, node="gpu-node-3", containers=("node",))
    condition = {"Failed": ("Failed", "exit 137"), "Complete": ("Complete", "")}.get(planted.workload)
    if planted.workload == "Failed":
        terminate(gw, namespace, pod, {"node": (137, "OOMKilled")})
    if condition is not None:
        gw.patch(TRAINJOBS, namespace, trainjob, {"status": {"conditions": [
            {"type": condition[0], "status": "True", "reason": condition[0], "message": condition[1],
             "lastTransitionTime": stamp()}]}}, status=True)
    true_type, reason, message = planted.verdict
    status: dict[str, Any] = {"conditions": exclusive(true_type, reason, message.format(job=name)),
                              "restartCount": planted.restarts}
    if reason != "WorkloadRestarting":  # CRE's restart clears it, as the functions' does
        status["workloadRef"] = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": trainjob}
    if planted.started:
        status["workloadStartTime"] = stamp()
    if planted.attributed:
        status["failedNodes"] = [{"name": "gpu-node-3", "reason": "WorkloadFailed", "message": "failed"}]
        status["failureLog"] = {"podName": pod, "nodeName": "gpu-node-3", "exitCode": 137, "reason": "OOMKilled",
                                "tail": "CUDA out of memory"}
    gw.patch(cre_jobs(group), namespace, name, {"status": status}, status=True)


def reported(stack: Stack) -> Table:
    return Table().add(read_recording(stack.out_dir / "events.jsonl"))


def run_shadow(stack: Stack, namespace: str, timeline: Timeline, timeout: float) -> int:
    """Play CRE on each Job, wait until every verdict is checked, print the parity table; 0 when the differences
    reported are exactly the planted ones."""
    for planted in JOBS:
        kind = f"planted difference: {', '.join(planted.differs)}" if planted.differs else "both agree"
        timeline.say(f"shadow: CRE writes {'/'.join(planted.verdict[:2])} on {namespace}/{planted.name} ({kind})")
        play_cre(stack, namespace, planted)
    names = {p.name for p in JOBS}

    def checked() -> set[str]:
        return {d.job.name for d in reported(stack).checks.values() if d.job.namespace == namespace} & names

    wait_until(lambda: checked() == names and stack.quiet(), timeout, interval=0.5)
    table = reported(stack)
    print("\nparity of CRE's verdicts with the functions' (cre-fn parity events.jsonl):", file=timeline.out)
    table.render(timeline.out)
    ours = [d for d in table.checks.values() if d.job.namespace == namespace]
    found = {(d.job.name, f.field) for d in ours for f in d.fields if f.result == "differ"}
    planted_set = {(p.name, f) for p in JOBS for f in p.differs}
    missing = sorted(names - {d.job.name for d in ours})
    ok = found == planted_set and not missing
    if ok:
        print("\nscenario shadow ended as expected: exactly the planted differences", file=timeline.out)
    else:
        print(f"\nscenario shadow did NOT end as expected: reported {sorted(found - planted_set)} not planted, "
              f"planted {sorted(planted_set - found)} not reported, no check for {missing}", file=timeline.out)
    return 0 if ok else 1


def stack_settings() -> dict[str, str]:
    """The functions' settings for the scenario: observe mode, its short settle window, a recheck by two ticks."""
    return {"CREFN_MODE": "observe", "CREFN_PARITY_SETTLE_SECONDS": SETTLE_SECONDS,
            "CREFN_PARITY_RECHECK_SECONDS": "20"}

