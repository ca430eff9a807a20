"""docs/switching.md followed end to end: deploy the `observe` install beside CRE (here the shadow scenario's stand-in
for CRE's controller), record the parity checks and read them with `cre-fn parity`, then switch to manage mode as
step 5 says, and the functions carry a Job on from the status CRE left; the Jobs CRE saw (its finalizer on each),
deleted then, are gone: none stays Terminating. A Job made then is the functions'; going back (step 6: observe
again, then CRE), CRE's stand-in takes it over with its finalizer and its verdict, the functions write nothing on
it, and CRE finishes its deletion. No dead letter on the way."""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from functions.runtime.gateway import Gateway
from functions.runtime.resources import PODS, TRAINJOBS, cre_jobs
from localstack import dev
from localstack.cluster.apiserver import LocalCluster
from localstack.cluster.pods import terminate
from localstack.manifests import render
from localstack.scenarios.shadow import exclusive
from localstack.scenarios.soak import DEFAULT_CHAOS
from tests.support.docs import section
from tests.support.world import World

JOBS = cre_jobs("nvcre.nvidia.com")


def test_step_1_the_observe_install_routes_every_managed_job_change_to_parity() -> None:
    docs = render("installs/observe")
    phase = next(d for d in docs if d["kind"] == "Service" and d["metadata"]["name"] == "crefn-phase")
    (named,) = phase["spec"]["template"]["spec"]["containers"][0]["envFrom"][:1]
    settings = next(d for d in docs if d["kind"] == "ConfigMap"
                    and d["metadata"]["name"] == named["configMapRef"]["name"])
    assert settings["data"]["CREFN_MODE"] == "observe" and settings["data"]["CREFN_PARITY_SETTLE_SECONDS"] == "60"
    trigger = next(d for d in docs if d["kind"] == "Trigger" and d["metadata"]["name"] == "crefn-parity-jobs")
    assert trigger["spec"]["subscriber"]["ref"]["name"] == "crefn-parity"
    assert trigger["spec"]["filters"] == [
        {"any": [{"exact": {"type": "dev.knative.apiserver.resource.add"}},
                 {"exact": {"type": "dev.knative.apiserver.resource.update"}}]},
        {"exact": {"kind": "Job", "apiversion": "nvcre.nvidia.com/v1alpha1"}}]
    assert sum(2 ** (n - 1) for n in range(1, trigger["spec"]["delivery"]["retry"] + 1)) > 60  # outlasts the window
    assert "crefn-parity-jobs" not in {d["metadata"]["name"] for d in render("base") if d["kind"] == "Trigger"}


@pytest.mark.stack
def test_observe_read_the_table_then_switch_and_the_functions_carry_on(
        cluster: LocalCluster, gateway: Gateway, namespace: str, tmp_path: Path,
        world: Callable[..., World], functions: Callable[..., dict[str, str]]) -> None:
    # steps 1-3: observe beside CRE, record, read the table; under the soak's chaos (a check whose event is
    # dropped is made by the parity tick, every 2 s here)
    out = io.StringIO()
    code = dev.run(tmp_path / "shadow", cluster=cluster, namespace=namespace, ping_interval=2, out=out,
                   scenario="shadow", chaos=f"{DEFAULT_CHAOS},seed=4")
    text = out.getvalue()
    assert code == 0, text[-3000:]
    assert "scenario shadow ended as expected: exactly the planted differences" in text
    table = subprocess.run([sys.executable, "-m", "functions.cli", "parity", str(tmp_path / "shadow" / "events.jsonl")],
                           capture_output=True, text=True, timeout=60)
    assert table.returncode == 1, table.stderr
    assert table.stdout.splitlines()[:2] == ["7 checks of CRE's verdicts, 3 differing",
                                             "field                 checks   agree  differ  agreement"]
    assert (f"  {namespace}/planted-restart  CRE InProgress/WorkloadRestarting: restartCount: CRE 1, functions 0"
            in table.stdout)
    events = gateway.request("GET", f"/api/v1/namespaces/{namespace}/events")["items"]
    assert {e["involvedObject"]["name"] for e in events if e["reason"] == "VerdictsDiffer"} == {
        "planted-restart", "planted-failure", "planted-pending"}
    statuses = {j["metadata"]["name"]: j["status"] for j in gateway.list_all(JOBS, namespace)}
    assert statuses["shadow-running"]["conditions"][0]["reason"] == "WorkloadRunning"  # as CRE wrote it

    # step 5: CRE stopped (the stand-in is gone with the scenario), its running TrainJob and pods labelled, manage
    assert "crefn.dev/attempt" in section("switching.md", "## Steps")
    restarts = statuses["shadow-running"].get("restartCount", 0)
    labels = {"metadata": {"labels": {"crefn.dev/managed": "true", "crefn.dev/attempt": str(restarts)}}}
    gateway.patch(TRAINJOBS, namespace, "shadow-running-workload", labels)
    for pod in gateway.list_all(PODS, namespace, "nvcre.nvidia.com/job=shadow-running"):
        gateway.patch(PODS, namespace, pod["metadata"]["name"], labels)
    w = world()
    fail(gateway, namespace, "shadow-running-workload")
    w.settle()
    assert w.final("shadow-running") == ("Failed", "WorkloadFailed", 0), w.dump()
    log = w.job("shadow-running")["status"]
    assert log["conditions"][2]["message"] == "Workload TrainJob/shadow-running-workload failed: exit 1"
    assert [n["name"] for n in log["failedNodes"]] == ["gpu-node-3"]  # where CRE's pod ran (nvcre.nvidia.com/job)

    # the Jobs CRE saw carry its finalizer: deleted now, the functions finish CRE's deletion once their pods have
    # ended (the Trainer's doing as their TrainJobs go), and none stays Terminating
    jobs = gateway.list_all(JOBS, namespace)
    assert jobs and all(j["metadata"]["finalizers"] == ["nvcre.nvidia.com/finalizer"] for j in jobs)
    for pod in gateway.list_all(PODS, namespace):
        terminate(gateway, namespace, pod["metadata"]["name"], {"node": (0, "Completed")})
    for job in jobs:
        gateway.delete(JOBS, namespace, job["metadata"]["name"])
    w.settle()
    assert gateway.list_all(JOBS, namespace) == [], w.dump()

    # a Job made after the switch is the functions' to launch
    w.create_job("after-switch", max_restarts=None)
    w.settle()
    launched = w.trainjob("after-switch")
    assert launched is not None and launched["metadata"]["labels"]["crefn.dev/attempt"] == "0", w.dump()
    assert w.final("after-switch")[:2] == ("InProgress", "WorkloadRunning")  # the Trainer runs its pods

    # step 6, going back: the observe install again, then CRE's controller. It reconciles the functions' Job as
    # its own: its finalizer, the TrainJob it finds under its name and controlled by the Job adopted, its verdict
    assert "6. **Going back**: deploy the observe install again" in section("switching.md", "## Steps")
    back = world(functions(CREFN_MODE="observe"))
    cre_reconciles(gateway, namespace, "after-switch")
    written = w.job("after-switch")["metadata"]["resourceVersion"]
    back.settle()
    job = back.job("after-switch")
    assert job["metadata"]["resourceVersion"] == written, back.dump()  # the functions wrote nothing on it
    assert back.final("after-switch")[:2] == ("InProgress", "WorkloadRunning")
    assert [(t["metadata"]["uid"], t["metadata"]["resourceVersion"]) for t in gateway.list_all(TRAINJOBS, namespace)] \
        == [(launched["metadata"]["uid"], launched["metadata"]["resourceVersion"])]  # adopted, untouched
    # deleted now, CRE finishes its deletion: the functions, observing, leave it to CRE
    gateway.delete(JOBS, namespace, "after-switch")
    back.settle()
    assert "deletionTimestamp" in back.job("after-switch")["metadata"], back.dump()
    assert back.trainjob("after-switch") is not None
    cre_finishes_deletion(gateway, namespace, "after-switch")
    back.settle()
    assert gateway.list_all(JOBS, namespace) == [] and gateway.list_all(TRAINJOBS, namespace) == []
    assert w.dead_letters == [] and back.dead_letters == []


def cre_reconciles(gateway: Gateway, namespace: str, job: str) -> None:
    """What CRE's Job controller does with a Job it finds running under its own names: its finalizer, then its
    verdict on the workload `<job>-workload` it adopts."""
    gateway.patch(JOBS, namespace, job, {"metadata": {"finalizers": ["nvcre.nvidia.com/finalizer"]}})
    gateway.patch(JOBS, namespace, job, {"status": {
        "conditions": exclusive("InProgress", "WorkloadRunning", f"Workload TrainJob/{job}-workload is running"),
        "workloadRef": {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                        "name": f"{job}-workload"}}}, status=True)


def cre_finishes_deletion(gateway: Gateway, namespace: str, job: str) -> None:
    """CRE's Job controller on a Job being deleted (no pod left): the TrainJob deleted, then its finalizer."""
    gateway.delete(TRAINJOBS, namespace, f"{job}-workload")
    gateway.patch(JOBS, namespace, job, {"metadata": {"finalizers": None}})


def fail(gateway: Gateway, namespace: str, name: str) -> dict[str, Any]:
    return gateway.patch(TRAINJOBS, namespace, name, {"status": {"conditions": [
        {"type": "Failed", "status": "True", "reason": "Failed", "message": "exit 1",
         "lastTransitionTime": "2026-12-03T10:00:00Z"}]}}, status=True)
