"""WorkloadRun → TrainingRuntime, Job, checkpoint PVC and config ConfigMap (SPEC §7). Pure.

Facts relied on: a Kubeflow Trainer `TrainingRuntime` holds `mlPolicy` (`numNodes` and one of `torch`
or `mpi`; `numProcPerNode` is the TrainJob's `trainer.numProcPerNode`) and a JobSet template whose
`replicatedJobs` are batch Job templates; the trainer container is `node` in a replicatedJob labelled
`trainer.kubeflow.org/trainjob-ancestor-step: trainer`. An MPI runtime has a `launcher` and `node`
workers; the launcher decides success. The Job is `<run>-job`, as CRE names a run's single Job (its
TrainJob is then `<run>-job-workload`); every object is owned (controller) by the WorkloadRun.
Mounts, GPUs and the runtimes' shape: docs/functions.md#workloadruns-torch-mpi-exec
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from events.types import MANAGED_BY_LABEL, MANAGED_BY_VALUE, MANAGED_LABEL, TRAINER_GROUP, TRAINJOB_API_VERSION
from functions.domain.placement import (
    DEFAULT_GPUS,
    Hardware,
    enable_mnnvl,
    gpus_per_node,
    hardware,
    placement,
    target_nodes,
)
from functions.domain.runspec import (
    InvalidSpec,
    check_workflow_fields,
    job_annotations,
    job_fields,
    mpi_launch,
    nccl_env,
    nic_resources,
    pod_fields,
)

GPU = "nvidia.com/gpu"
CHECKPOINT_PATH = "/checkpoints"
CONFIG_PATH = "/config"
SSH_PATH = "/root/.ssh"
QUANTITY = re.compile(r"^([0-9]+(\.[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei)?$")
ANCESTOR = {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}


@dataclass(frozen=True)
class Translation:
    runtime: dict[str, Any]
    job: dict[str, Any]
    pvc: dict[str, Any] | None
    configmap: dict[str, Any] | None
    detected: tuple[tuple[str, str], ...] = ()
    """What the target nodes say of the hardware, as the run's status fields (`functions.domain.placement`)."""

    @property
    def objects(self) -> list[dict[str, Any]]:
        return [o for o in (self.configmap, self.pvc, self.runtime, self.job) if o is not None]


def runtime_name(run: str) -> str:
    return f"{run}-runtime"


def job_name(run: str) -> str:
    """CRE's `getGroupJobName` of a run's single Job (one group, unpinned): `<run>-job`; its TrainJob is then
    `<run>-job-workload`."""
    return f"{run}-job"


def pvc_name(run: str) -> str:
    return f"{run}-checkpoint-pvc"


def configmap_name(run: str) -> str:
    return f"{run}-config"


def _str_list(spec: dict[str, Any], key: str, where: str) -> list[str]:
    value = spec.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidSpec(f"{where}.{key} must be a list of strings")
    return list(value)


def validate(spec: dict[str, Any]) -> str:
    """Check the spec; return the framework name. Raise InvalidSpec naming the first bad field."""
    if not isinstance(spec.get("image"), str) or not spec["image"]:
        raise InvalidSpec("spec.image is required")
    nodes = spec.get("numNodes")
    if not isinstance(nodes, int) or isinstance(nodes, bool) or nodes < 1:
        raise InvalidSpec("spec.numNodes must be an integer of at least 1")
    gpus = spec.get("gpusPerNode", DEFAULT_GPUS)
    if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 1:
        raise InvalidSpec("spec.gpusPerNode must be an integer of at least 1")
    framework = spec.get("framework") or {}
    chosen = [k for k in ("torch", "mpi", "exec") if k in framework]
    if len(chosen) != 1 or set(framework) - {"torch", "mpi", "exec"}:
        raise InvalidSpec("spec.framework must set exactly one of torch, mpi or exec")
    kind = chosen[0]
    fw = framework[kind] or {}
    where = f"spec.framework.{kind}"
    if kind == "torch":
        if bool(fw.get("script")) == bool(fw.get("module")):
            raise InvalidSpec(f"{where}: set exactly one of script or module")
        _str_list(fw, "args", where)
    elif kind == "mpi":
        for key in ("binary", "mpirunPath"):
            if not fw.get(key):
                raise InvalidSpec(f"{where}.{key} is required")
        if fw.get("mpiImplementation", "OpenMPI") != "OpenMPI":
            raise InvalidSpec(f"{where}.mpiImplementation: only OpenMPI is supported by Kubeflow Trainer")
        _str_list(fw, "mpiArgs", where)
        _str_list(fw, "args", where)
    else:
        if not _str_list(fw, "command", where):
            raise InvalidSpec(f"{where}.command must not be empty")
        _str_list(fw, "args", where)
    checkpoint = spec.get("checkpoint")
    if checkpoint is not None:
        size = str(checkpoint.get("storageSize", ""))
        if not QUANTITY.match(size):
            raise InvalidSpec(f"spec.checkpoint.storageSize: {size!r} is not a storage size (e.g. 500Gi)")
        if int(checkpoint.get("maxRestarts", 0)) < 0:
            raise InvalidSpec("spec.checkpoint.maxRestarts must not be negative")
    config = spec.get("config")
    if config is not None:
        if ("inline" in config) == ("configMapRef" in config):
            raise InvalidSpec("spec.config: set exactly one of inline or configMapRef")
        if "configMapRef" in config and not (config["configMapRef"] or {}).get("name"):
            raise InvalidSpec("spec.config.configMapRef.name is required")
    check_workflow_fields(spec)
    return kind


def translate(run: dict[str, Any], cre_group: str = "nvcre.nvidia.com",
              nodes: Sequence[Mapping[str, Any]] | None = None) -> Translation:
    """`nodes`: the cluster's nodes the target is looked for among (`functions.domain.placement`); None when
    there is no cluster to look at (`cre-fn render` of a file): no hardware defaults, no GPU products."""
    given = run.get("spec") or {}
    found = hardware(target_nodes(given, nodes)) if nodes is not None else Hardware("", ())
    spec = {**given, "gpusPerNode": gpus_per_node(given, found), "enableMNNVL": enable_mnnvl(given, found)}
    kind = validate(spec)
    meta = run["metadata"]
    name, ns = meta["name"], meta.get("namespace", "")
    owner = {"apiVersion": run.get("apiVersion", f"{cre_group}/v1alpha1"), "kind": "WorkloadRun", "name": name,
             "uid": meta.get("uid", ""), "controller": True, "blockOwnerDeletion": True}
    if not owner["uid"]:
        del owner["uid"]  # `cre-fn render` of a file: the uid exists only once the WorkloadRun is created

    def object_meta(obj_name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
        return {"name": obj_name, "namespace": ns, "labels": {MANAGED_BY_LABEL: MANAGED_BY_VALUE, **(labels or {})},
                "ownerReferences": [owner]}

    gpus = int(spec["gpusPerNode"])
    volumes, mounts, env = _storage(spec, name)
    configmap = None
    inline = (spec.get("config") or {}).get("inline")
    if inline is not None:
        configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": object_meta(configmap_name(name)),
                     "data": {str(k): str(v) for k, v in inline.items()}}
    pvc = None
    if spec.get("checkpoint") is not None:
        ck = spec["checkpoint"]
        pvc_spec: dict[str, Any] = {"accessModes": ["ReadWriteMany"],
                                    "resources": {"requests": {"storage": ck["storageSize"]}}}
        if ck.get("storageClassName"):
            pvc_spec["storageClassName"] = ck["storageClassName"]
        pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": object_meta(pvc_name(name)),
               "spec": pvc_spec}
    framework_label = "mpi" if kind == "mpi" else "torch"
    merged = nccl_env(spec, list(spec.get("env") or [])) + env
    runtime = {
        "apiVersion": TRAINJOB_API_VERSION, "kind": "TrainingRuntime",
        "metadata": object_meta(runtime_name(name), {f"{TRAINER_GROUP}/framework": framework_label}),
        "spec": _runtime_spec(kind, spec, gpus, volumes, mounts, merged,
                              {**pod_fields(spec), **placement(spec, found)}),
    }
    command, args = _command(kind, spec, gpus, merged)
    trainer: dict[str, Any] = {"image": spec["image"], "numNodes": spec["numNodes"], "numProcPerNode": gpus,
                               "command": command, "args": args}
    job_labels = {MANAGED_LABEL: "true"} if (meta.get("labels") or {}).get(MANAGED_LABEL) == "true" else {}
    job_spec: dict[str, Any] = {"workload": {"trainJob": {
        "runtimeRef": {"name": runtime_name(name), "apiGroup": TRAINER_GROUP, "kind": "TrainingRuntime"},
        "trainer": trainer}}, **job_fields(spec)}
    if pvc is not None:
        job_spec["checkpoint"] = {"pvcName": pvc_name(name),
                                  "maxRestarts": int(spec["checkpoint"].get("maxRestarts", 0))}
    job = {"apiVersion": f"{cre_group}/v1alpha1", "kind": "Job",
           "metadata": {**object_meta(job_name(name), job_labels), "annotations": job_annotations(spec)},
           "spec": job_spec}
    return Translation(runtime, job, pvc, configmap, found.detected)


def _storage(spec: dict[str, Any], name: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]],
                                                         list[dict[str, Any]]]:
    volumes = [*list(spec.get("volumes") or []), {"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    mounts = [*list(spec.get("volumeMounts") or []), {"name": "dshm", "mountPath": "/dev/shm"}]
    env: list[dict[str, Any]] = []
    if spec.get("checkpoint") is not None:
        volumes.append({"name": "checkpoint", "persistentVolumeClaim": {"claimName": pvc_name(name)}})
        mounts.append({"name": "checkpoint", "mountPath": CHECKPOINT_PATH})
        env.append({"name": "CHECKPOINT_DIR", "value": CHECKPOINT_PATH})
    config = spec.get("config")
    if config is not None:
        source = configmap_name(name) if "inline" in config else config["configMapRef"]["name"]
        volumes.append({"name": "config-volume", "configMap": {"name": source, "defaultMode": 0o755}})
        mounts.append({"name": "config-volume", "mountPath": CONFIG_PATH})  # a script in it can be run
    return volumes, mounts, env


def _resources(spec: dict[str, Any], gpus: int) -> dict[str, Any]:
    resources = {k: dict(v) for k, v in (spec.get("resources") or {}).items() if k in ("limits", "requests")}
    if not any(GPU in resources.get(k, {}) for k in ("limits", "requests")):
        resources.setdefault("limits", {})[GPU] = str(gpus)
    for name, count in nic_resources(spec).items():
        if not any(name in resources.get(k, {}) for k in ("limits", "requests")):
            resources.setdefault("limits", {})[name] = count
    return resources


def _command(kind: str, spec: dict[str, Any], gpus: int, env: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    fw = spec["framework"][kind]
    args = list(fw.get("args") or [])
    if kind == "torch":
        return ["torchrun"], (["-m", fw["module"], *args] if fw.get("module") else [fw["script"], *args])
    if kind == "mpi":
        return mpi_launch(fw, gpus, env)
    return list(fw["command"]), args


def _pod(extra: dict[str, Any], container: dict[str, Any], volumes: list[dict[str, Any]]) -> dict[str, Any]:
    """A pod spec of its own (deep copies: no two objects share a list)."""
    pod: dict[str, Any] = {"containers": [copy.deepcopy(container)], "volumes": copy.deepcopy(volumes)}
    pod.update(copy.deepcopy(extra))
    return pod


def _job_template(pod: dict[str, Any], labels: dict[str, str] | None = None) -> dict[str, Any]:
    template: dict[str, Any] = {"metadata": {"labels": labels}} if labels else {}
    template["spec"] = {"template": {"spec": pod}}
    return template


def _runtime_spec(kind: str, spec: dict[str, Any], gpus: int, volumes: list[dict[str, Any]],
                  mounts: list[dict[str, Any]], env: list[dict[str, Any]], extra: dict[str, Any]) -> dict[str, Any]:
    """`env`: the run's merged environment, on every container (an MPI run's sshd workers and launcher alike, as
    CRE's runtimes carry it); `extra`: what every pod carries besides its containers and volumes."""
    container = {"name": "node", "image": spec["image"], "env": env, "resources": _resources(spec, gpus),
                 "volumeMounts": mounts}
    if kind != "mpi":
        node = {"name": "node", "template": _job_template(_pod(extra, container, volumes), ANCESTOR)}
        return {"mlPolicy": {"numNodes": spec["numNodes"], "torch": {}},
                "template": {"spec": {"replicatedJobs": [node]}}}
    fw = spec["framework"]["mpi"]
    ssh_mount = {"name": "node", "image": spec["image"], "env": env, "volumeMounts": mounts}
    launcher = {"name": "launcher", "replicas": 1, "dependsOn": [{"name": "node", "status": "Ready"}],
                "template": _job_template(_pod(extra, ssh_mount, volumes), ANCESTOR)}
    worker_container = {**container, "command": ["/usr/sbin/sshd"], "args": ["-De"],
                        "readinessProbe": {"tcpSocket": {"port": 22}, "initialDelaySeconds": 2, "periodSeconds": 5}}
    worker = {"name": "node", "template": _job_template(_pod(extra, worker_container, volumes))}
    return {
        "mlPolicy": {"numNodes": spec["numNodes"], "mpi": {
            "mpiImplementation": fw.get("mpiImplementation", "OpenMPI"), "numProcPerNode": gpus,
            "sshAuthMountPath": SSH_PATH}},
        "template": {"spec": {"replicatedJobs": [launcher, worker],
                              "successPolicy": {"operator": "All", "targetReplicatedJobs": ["launcher"]}}},
    }
