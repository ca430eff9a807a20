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
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from events.types import ATTEMPT_LABEL, CONTROLLER_MANAGER
from functions.domain.goodput_window import INDEX, REPLICATED_JOB, RESTART_ATTEMPT
from functions.domain.translation import ANCESTOR
from functions.runtime.errors import AlreadyExists, NotFound
from functions.runtime.gateway import Gateway
from functions.runtime.logreads import JOBSET
from functions.runtime.resources import PODS, Resource
from localstack.cluster.kubelet import StandInKubelet, TimedLine

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
CHECKPOINT_DIR = "/ckpt"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MS = 1_000_000
STARTUP, STEP, SAVE = 500 * MS, 100 * MS, 50 * MS
"""How long the stand-in workload takes to start (to its first step), per training step (Megatron's `elapsed time
per iteration`) and to save a checkpoint: time runs fast here, so that the attempts of a demo that lasts seconds
train, save and are measured as a day's run would be."""
LOGGED_EVERY, SAVED_EVERY = 10, 20
"""Steps between two logged iterations (`megatron-training`'s `logInterval`) and between two checkpoint saves."""
WORLD = ("using world size: 16, data-parallel size: 2, context-parallel size: 1, hierarchical context-parallel "
         "sizes: None, tensor-model-parallel size: 8, pipeline-model-parallel size: 1")
SAVED = re.compile(r"scheduled an async checkpoint save at iteration\s+(\d+)")
OOM_LINE = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
    "79.10 GiB of which 1.23 GiB is free. Including non-PyTorch memory, this process has 77.86 GiB memory in use. "
    "Of the allocated memory 74.52 GiB is allocated by PyTorch, and 2.31 GiB is reserved by PyTorch but "
    "unallocated. If reserved but unallocated memory is large try setting "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."
)
TRACEBACK = (
    "Traceback (most recent call last):",
    '  File "/workspace/pretrain_gpt.py", line 212, in <module>',
    "    pretrain(train_valid_test_datasets_provider, model_provider)",
    '  File "/workspace/megatron/training/training.py", line 1408, in train_step',
    "    loss.backward()",
    '  File "/usr/local/lib/python3.12/dist-packages/torch/_tensor.py", line 581, in backward',
    "    torch.autograd.backward(",
    OOM_LINE,
)


def megatron_time(at: int) -> str:
    """A Megatron log line's time (CRE's `megatron-training` profile: `2006-01-02 15:04:05.999999`, UTC)."""
    return (EPOCH + timedelta(microseconds=at // 1000)).strftime("%Y-%m-%d %H:%M:%S.%f")


@dataclass(frozen=True)
class Megatron:
    """The log of a Megatron workload (what CRE's `megatron-training` LogProfile reads) started at `start` (ns),
    resumed from the checkpoint of step `restored` (0: none), as a function of time: its start (`using world size:
    …`), the checkpoint it loads, then a step every STEP from STARTUP on, every LOGGED_EVERY-th logged, every
    SAVED_EVERY-th saved (`saving checkpoint at iteration N`, then `scheduled an async checkpoint save` SAVE
    later)."""

    start: int
    restored: int = 0

    def lines(self, until: int) -> list[TimedLine]:
        """What it has written by `until` (ns), in order."""
        written = [(self.start, WORLD)]
        if self.restored:
            written.append((self.start + STARTUP // 2, f"Loading checkpoint from {CHECKPOINT_DIR}/iter_"
                                                       f"{self.restored:07d}"))
        steps = LOGGED_EVERY
        while (at := self.start + STARTUP + steps * STEP) <= until:
            step = self.restored + steps
            written.append((at, f"[{megatron_time(at)}] iteration {step:>8}/    5000 | consumed samples: "
                                f"{step * 512:>10} | elapsed time per iteration (ms): {STEP / MS:.1f} | throughput "
                                "per GPU (TFLOP/s/GPU): 402.5 | learning rate: 3.000000E-04 | lm loss: 2.814100E+00 "
                                "| loss scale: 1.0 |"))
            if steps % SAVED_EVERY == 0:
                written += [(at + MS, f"[{megatron_time(at + MS)}] saving checkpoint at iteration {step} to "
                                      f"{CHECKPOINT_DIR}"),
                            (at + MS + SAVE, f"[{megatron_time(at + MS + SAVE)}] scheduled an async checkpoint save "
                                             f"at iteration {step} to {CHECKPOINT_DIR}")]
            steps += LOGGED_EVERY
        return [(at, text) for at, text in written if at <= until]


def saves(lines: list[TimedLine] | None) -> list[int]:
    """The steps of the checkpoints a log saved, in order."""
    return [int(m.group(1)) for _, text in lines or [] if (m := SAVED.search(text))]


def last_saved(lines: list[TimedLine] | None) -> int:
    """The step of the last checkpoint a log saved (0: none)."""
    return (saves(lines) or [0])[-1]


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


def jobset_labels(trainjob: str, replicated_job: str) -> dict[str, str]:
    """What JobSet labels the first pod of a replicatedJob with (JobSet is named as its TrainJob; no JobSet restart
    here: a failed attempt is a new TrainJob)."""
    return {JOBSET: trainjob, REPLICATED_JOB: replicated_job, INDEX: "0", RESTART_ATTEMPT: "0"}


def attempt_pods(trainjob: dict[str, Any]) -> list[AttemptPod]:
    """The pods of a TrainJob: one per replicatedJob of its `crefn.dev/controller` runtime patch (none
    without one), named `<trainjob>-<replicatedJob>-0-0-a<attempt>`, the i-th on `gpu-node-<i+1>`;
    container `node`, or `launcher` in the launcher; labelled as the pod template and as JobSet labels the pods
    it makes (`jobset_labels`)."""
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
            container="node" if worker else LAUNCHER,
            labels={**labels, **(ANCESTOR if worker else {}),
                    **jobset_labels(trainjob["metadata"]["name"], rjob["name"])},
            node=f"gpu-node-{index + 1}", worker=worker))
    return pods


def apply_pods(gw: Gateway, kubelet: StandInKubelet, trainjob: dict[str, Any], action: str,
               clock: Callable[[], int] = time.time_ns) -> None:
    """The attempt's pods after a Trainer action (see `localstack.trainer`), their logs written at `clock` (ns):
    - `block`: pods without a node, `PodScheduled=False/Unschedulable` with the scheduler's message;
    - `run`: pods on their nodes (created there, or bound when unscheduled), Running, each logging as a Megatron
      workload (`Megatron`) from then on, resumed from the last checkpoint the attempt before saved;
    - `fail`: as `run`, then the first worker's container terminated 137/OOMKilled (pod Failed) with a
      trainer log ending in a CUDA out-of-memory error; the other pods keep running;
    - `complete`: as `run`, then every container terminated 0 (pods Succeeded), the log ending in the last steps;
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
        if kubelet.lines_of(namespace, pod.name, pod.container) is None:
            before = kubelet.lines_of(namespace, earlier(pod), pod.container)
            kubelet.follow(namespace, pod.name, pod.container, Megatron(clock(), last_saved(before)).lines)
        if action == "complete":
            now = clock()
            kubelet.halt(namespace, pod.name, pod.container, now)
            kubelet.write(namespace, pod.name, pod.container, [(now, f"[after training is done] datetime: "
                                                                     f"{megatron_time(now)[:19]}")])
            terminate(gw, namespace, pod.name, {pod.container: (0, "Completed")})
    failing = next((pod for pod in pods if pod.worker), None)
    if action == "fail" and failing is not None and failing.name not in ended:
        now = clock()
        kubelet.halt(namespace, failing.name, failing.container, now)
        kubelet.write(namespace, failing.name, failing.container, [(now, line) for line in TRACEBACK])
        terminate(gw, namespace, failing.name, {failing.container: (137, "OOMKilled")})


def earlier(pod: AttemptPod) -> str:
    """The name of the same pod of the attempt before (the one this attempt's workload resumes from)."""
    stem, _, attempt = pod.name.rpartition("-a")
    return f"{stem}-a{int(attempt) - 1}" if attempt.isdigit() and int(attempt) > 0 else ""
