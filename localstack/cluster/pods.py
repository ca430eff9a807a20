"""Pods on an API server with no scheduler or kubelet: what the Trainer simulator, the demo and the tests use
to put a workload's pods in the states a real cluster would (their Nodes and logs: `localstack.cluster.kubelet`).

A bare API server runs no controller: the namespace's `default` ServiceAccount is created here (pod admission
needs it) and pods do not mount a token; placement is `spec.nodeName` at creation or a `pods/binding`; every
state (PodScheduled, container states, phase) is a `pods/status` merge patch. `apply_pods` keeps the pods of
a TrainJob's attempt as Trainer, JobSet, the scheduler and the kubelet would for a Trainer action: one pod
per replicatedJob of the TrainJob's own runtime patch (manager `crefn.dev/controller`, see
`functions.launch.decide`), labelled as that patch's pod template.
How they are named and placed: localstack/README.md#the-pods-of-an-attempt.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from events.types import ATTEMPT_LABEL, CONTROLLER_MANAGER
from functions.domain.translation import ANCESTOR
from functions.runtime.errors import AlreadyExists, NotFound
from functions.runtime.gateway import Gateway
from functions.runtime.resources import PODS, Resource
from localstack.cluster.kubelet import StandInKubelet

SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
STAMP = "2026-01-01T00:00:00Z"
UNSCHEDULABLE = "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."


def ensure_service_account(gw: Gateway, namespace: str) -> None:
    with contextlib.suppress(AlreadyExists):
        gw.create(SERVICE_ACCOUNTS, namespace, {"apiVersion": "v1", "kind": "ServiceAccount",
                                                "metadata": {"name": "default"}})


def create_pod(gw: Gateway, namespace: str, name: str, labels: dict[str, str], node: str = "",
               containers: Iterable[str] = ("node",)) -> dict[str, Any]:
    """A pod with the given labels, placed on `node` when one is named (unscheduled otherwise)."""
    ensure_service_account(gw, namespace)
    spec: dict[str, Any] = {"automountServiceAccountToken": False,
                            "containers": [{"name": c, "image": "trainer:latest"} for c in containers]}
    if node:
        spec["nodeName"] = node
    return gw.create(PODS, namespace, {"apiVersion": "v1", "kind": "Pod",
                                       "metadata": {"name": name, "labels": labels}, "spec": spec})


def scheduled(status: str, reason: str = "", message: str = "") -> dict[str, Any]:
    cond = {"type": "PodScheduled", "status": status, "lastTransitionTime": STAMP}
    if reason:
        cond["reason"] = reason
    if message:
        cond["message"] = message
    return cond


def set_unschedulable(gw: Gateway, namespace: str, name: str, message: str = UNSCHEDULABLE,
                      reason: str = "Unschedulable") -> None:
    """What the scheduler writes on a pod it cannot place (`reason` `SchedulingGated` for a held pod)."""
    gw.patch(PODS, namespace, name, {"status": {"phase": "Pending",
                                                "conditions": [scheduled("False", reason, message)]}}, status=True)


def bind(gw: Gateway, namespace: str, name: str, node: str) -> None:
    """Place a pod on `node` (what the scheduler does with a `pods/binding`)."""
    gw.create(Resource("", "v1", f"pods/{name}/binding", "Binding"), namespace, {
        "apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node}})


def remove(gw: Gateway, namespace: str, name: str) -> None:
    """Delete a pod at once (grace period 0: what a kubelet confirms once its containers stopped; a
    graceful delete of a pod on a node would wait for a kubelet forever here)."""
    with contextlib.suppress(NotFound):
        gw.request("DELETE", PODS.path(namespace, name), body={
            "apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0, "propagationPolicy": "Background"})


def container_status(name: str, state: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "ready": "running" in state, "restartCount": 0, "image": "trainer:latest",
            "imageID": "", "state": state}


def set_running(gw: Gateway, namespace: str, name: str, containers: Iterable[str] = ("node",)) -> None:
    gw.patch(PODS, namespace, name, {"status": {
        "phase": "Running", "conditions": [scheduled("True")],
        "containerStatuses": [container_status(c, {"running": {"startedAt": STAMP}}) for c in containers]}},
        status=True)


def terminate(gw: Gateway, namespace: str, name: str, exits: dict[str, tuple[int, str]]) -> None:
    """Containers terminated with `{container: (exit code, reason)}`; the pod Failed when one exit is non-zero."""
    failed = any(code for code, _ in exits.values())
    gw.patch(PODS, namespace, name, {"status": {
        "phase": "Failed" if failed else "Succeeded", "conditions": [scheduled("True")],
        "containerStatuses": [container_status(c, {"terminated": {
            "exitCode": code, "reason": reason, "startedAt": STAMP, "finishedAt": STAMP,
            "containerID": f"containerd://{name}-{c}"}}) for c, (code, reason) in exits.items()]}}, status=True)


# -- the pods of a TrainJob's attempt ----------------------------------------------------------------

LAUNCHER = "launcher"
RUNNING_LOG = (
    "[2026-01-01 00:00:05] INFO  rank 0: initialized NCCL, world size 16 (2 nodes x 8 GPUs)\n"
    "[2026-01-01 00:00:09] INFO  loaded checkpoint: none, starting at step 0\n"
    "[2026-01-01 00:00:41] INFO  step 10/1000 loss=2.8141 lr=1.00e-05 tokens/s=51234\n"
    "[2026-01-01 00:01:17] INFO  step 20/1000 loss=2.5012 lr=2.00e-05 tokens/s=51876\n"
)
OOM_LINE = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
    "79.10 GiB of which 1.23 GiB is free. Including non-PyTorch memory, this process has 77.86 GiB memory in use. "
    "Of the allocated memory 74.52 GiB is allocated by PyTorch, and 2.31 GiB is reserved by PyTorch but "
    "unallocated. If reserved but unallocated memory is large try setting "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."
)
OOM_LOG = RUNNING_LOG + (
    "[2026-01-01 00:01:53] INFO  step 30/1000 loss=2.3377 lr=3.00e-05 tokens/s=51702\n"
    "Traceback (most recent call last):\n"
    '  File "/workspace/train.py", line 212, in <module>\n'
    "    main()\n"
    '  File "/workspace/train.py", line 188, in main\n'
    "    loss.backward()\n"
    '  File "/usr/local/lib/python3.10/dist-packages/torch/_tensor.py", line 581, in backward\n'
    "    torch.autograd.backward(\n"
    f"{OOM_LINE}\n"
)
COMPLETE_LOG = RUNNING_LOG + (
    "[2026-01-01 02:41:30] INFO  step 1000/1000 loss=1.2208 lr=1.00e-04 tokens/s=51911\n"
    "[2026-01-01 02:41:52] INFO  saved checkpoint step 1000; training complete\n"
)


@dataclass(frozen=True)
class AttemptPod:
    """One pod of an attempt: the single pod of one replicatedJob."""

    name: str
    container: str
    labels: dict[str, str]
    node: str
    worker: bool


def _dig(obj: Any, *keys: str) -> Any:
    for key in keys:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def attempt_pods(trainjob: dict[str, Any]) -> list[AttemptPod]:
    """The pods of a TrainJob: one per replicatedJob of its `crefn.dev/controller` runtime patch (none
    without one), named `<trainjob>-<replicatedJob>-0-0-a<attempt>`, the i-th on `gpu-node-<i+1>`;
    container `node`, or `launcher` in the launcher."""
    patch = next((p for p in _dig(trainjob, "spec", "runtimePatches") or []
                  if isinstance(p, dict) and p.get("manager") == CONTROLLER_MANAGER), None)
    replicated = _dig(patch, "trainingRuntimeSpec", "template", "spec", "replicatedJobs") or []
    trainjob_labels = _dig(trainjob, "metadata", "labels") or {}
    pods = []
    for index, rjob in enumerate(r for r in replicated if isinstance(r, dict) and r.get("name")):
        labels = dict(_dig(rjob, "template", "spec", "template", "metadata", "labels") or {})
        worker = rjob["name"] != LAUNCHER
        attempt = labels.get(ATTEMPT_LABEL) or trainjob_labels.get(ATTEMPT_LABEL) or "0"
        pods.append(AttemptPod(
            name=f"{trainjob['metadata']['name']}-{rjob['name']}-0-0-a{attempt}",
            container="node" if worker else LAUNCHER, labels={**labels, **(ANCESTOR if worker else {})},
            node=f"gpu-node-{index + 1}", worker=worker))
    return pods


def apply_pods(gw: Gateway, kubelet: StandInKubelet, trainjob: dict[str, Any], action: str) -> None:
    """The attempt's pods after a Trainer action (see `localstack.trainer`):
    - `block`: pods without a node, `PodScheduled=False/Unschedulable` with the scheduler's message;
    - `run`: pods on their nodes (created there, or bound when unscheduled), Running, a short log each;
    - `fail`: as `run`, then the first worker's container terminated 137/OOMKilled (pod Failed) with a
      trainer log ending in a CUDA out-of-memory error; the other pods keep running;
    - `complete`: as `run`, then every container terminated 0 (pods Succeeded);
    - `suspend`: the pods are deleted (a suspended Job's are), at once;
    - `resume`, `delete`: nothing (the pods of a deleted TrainJob stay: no garbage collector runs here).
    Pods that have ended are left as they are."""
    pods = attempt_pods(trainjob)
    namespace = trainjob["metadata"]["namespace"]
    if action == "suspend":
        for pod in pods:
            remove(gw, namespace, pod.name)
        return
    if action not in ("block", "run", "fail", "complete"):
        return
    if action != "block":
        for node in sorted({pod.node for pod in pods}):
            kubelet.register_node(gw, node)
    ended = set()
    for pod in pods:
        current = gw.get(PODS, namespace, pod.name)
        if (_dig(current, "status", "phase") or "") in ("Succeeded", "Failed"):
            ended.add(pod.name)
            continue
        if action == "block":
            if current is None:
                create_pod(gw, namespace, pod.name, pod.labels, containers=(pod.container,))
            if not _dig(current, "spec", "nodeName"):
                set_unschedulable(gw, namespace, pod.name)
            continue
        if current is None:
            create_pod(gw, namespace, pod.name, pod.labels, node=pod.node, containers=(pod.container,))
        elif not _dig(current, "spec", "nodeName"):
            bind(gw, namespace, pod.name, pod.node)
        set_running(gw, namespace, pod.name, (pod.container,))
        kubelet.set_log(namespace, pod.name, pod.container, RUNNING_LOG)
        if action == "complete":
            terminate(gw, namespace, pod.name, {pod.container: (0, "Completed")})
            kubelet.set_log(namespace, pod.name, pod.container, COMPLETE_LOG)
    failing = next((pod for pod in pods if pod.worker), None)
    if action == "fail" and failing is not None and failing.name not in ended:
        terminate(gw, namespace, failing.name, {failing.container: (137, "OOMKilled")})
        kubelet.set_log(namespace, failing.name, failing.container, OOM_LOG)
