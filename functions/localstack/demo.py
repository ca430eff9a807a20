"""`make run`: the phase function served locally against a real API server, fed the sample events.

Starts etcd + kube-apiserver with the CRDs, creates the demo Job and its TrainJob, serves `phase` with
functions-framework, and posts every bundled sample over HTTP (Resource mode as recorded; Reference
mode after changing the cluster so the GET sees what the event announces), printing each answer.
Exits non-zero when an answer differs from the phase the sample should produce.
"""

from __future__ import annotations

import copy
import sys
import tempfile
from pathlib import Path
from typing import Any

from functions.gateway import NAMESPACES, TRAINJOBS, Gateway, cre_jobs
from functions.localstack.apiserver import LocalCluster
from functions.localstack.client import Answer, load_sample, send
from functions.localstack.serving import ServedFunction

# sample → (HTTP status, phase) the served function must answer with
PLAN: list[tuple[str, int, str]] = [
    ("trainjob-resource-add", 200, "Running"),
    ("trainjob-resource-update-suspended", 200, "Pending"),
    ("trainjob-resource-update-running", 200, "Running"),
    ("trainjob-resource-update-failed", 200, "Failed"),
    ("trainjob-resource-update-complete", 200, "Succeeded"),
    ("trainjob-resource-delete", 200, "Failed"),
    ("trainjob-ref-add", 200, "Running"),
    ("trainjob-ref-update", 200, "Succeeded"),
    ("trainjob-ref-delete", 200, "Failed"),
]


def seed(gw: Gateway) -> dict[str, Any]:
    """Create the namespace, the demo CRE Job and its TrainJob (owned by the Job) in the cluster."""
    tj = load_sample("trainjob-resource-add")["data"]
    ns, job_name = tj["metadata"]["namespace"], tj["metadata"]["labels"]["nvcre.nvidia.com/job"]
    gw.create(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    job = gw.create(cre_jobs("nvcre.nvidia.com"), ns, {
        "apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
        "metadata": {"name": job_name, "labels": {"crefn.dev/managed": "true"}},
        "spec": {"workload": {"trainJob": tj["spec"]}, "checkpoint": {"pvcName": "ckpt", "maxRestarts": 2}},
    })
    body = copy.deepcopy(tj)
    body["metadata"] = {k: body["metadata"][k] for k in ("name", "labels", "annotations")}
    body["metadata"]["ownerReferences"] = [{
        "apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": job_name,
        "uid": job["metadata"]["uid"], "controller": True}]
    body.pop("status", None)
    created = gw.create(TRAINJOBS, ns, body)
    gw.patch(cre_jobs("nvcre.nvidia.com"), ns, job_name, {"status": {"workloadRef": {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "name": created["metadata"]["name"], "namespace": ns}}}, status=True)
    return created


def before(name: str, gw: Gateway, trainjob: dict[str, Any]) -> None:
    """Make the cluster match what a Reference-mode sample announces."""
    ns, tj_name = trainjob["metadata"]["namespace"], trainjob["metadata"]["name"]
    if name == "trainjob-ref-update":
        gw.patch(TRAINJOBS, ns, tj_name, {"status": {"conditions": [{
            "type": "Complete", "status": "True", "reason": "JobsCompleted", "message": "all jobs completed",
            "lastTransitionTime": "2026-11-02T12:00:00Z"}]}}, status=True)
    if name == "trainjob-ref-delete":
        gw.delete(TRAINJOBS, ns, tj_name)


def describe(answer: Answer) -> str:
    if answer.status == 200:
        data = answer.json()
        detail = f" reason={data['reason']!r}" if data.get("reason") else ""
        return f"{answer.ce.get('type')} phase={answer.ce.get('workloadphase')}{detail}"
    return answer.text or "(no body)"


def run() -> int:
    with tempfile.TemporaryDirectory(prefix="crefn-run-") as tmp, LocalCluster(Path(tmp), log=sys.stdout) as cluster:
        gw = cluster.gateway()
        trainjob = seed(gw)
        env = {"CREFN_KUBECONFIG": str(cluster.kubeconfig), "CREFN_LOG_LEVEL": "WARNING"}
        failures = 0
        print(f"\nserving `phase` with functions-framework; posting {len(PLAN)} sample events\n")
        with ServedFunction("phase", env, Path(tmp) / "phase.log") as served:
            for name, want_status, want_phase in PLAN:
                before(name, gw, trainjob)
                for structured in (False, True):
                    answer = send(served.url, load_sample(name), structured=structured)
                    ok = answer.status == want_status and answer.ce.get("workloadphase") == want_phase
                    failures += not ok
                    mode = "structured" if structured else "binary"
                    mark = "ok " if ok else "BAD"
                    print(f"  {mark} {name:<36} {mode:<10} → {answer.status} {describe(answer)}")
                    if name == "trainjob-ref-delete":
                        break  # the object is gone; one send shows the answer
            bad = send(served.url, {"attributes": {"specversion": "1.0", "source": "demo", "type": "x.y"},
                                   "data": {}})
            print(f"  {'ok ' if bad.status == 400 else 'BAD'} {'malformed (unknown type)':<36} {'binary':<10}"
                  f" → {bad.status} {bad.text}")
            failures += bad.status != 400
        gw.close()
        print(f"\n{'all answers as expected' if not failures else f'{failures} unexpected answers'}")
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(run())
