"""WorkloadRun inputs of the golden render tests (expected outputs: tests/golden/render/<case>.yaml), and
`with_spec`: one run with its spec changed."""

from __future__ import annotations

import copy
from typing import Any


def run(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"image": "nvcr.io/nvidia/pytorch:25.01-py3", "numNodes": 2,
                            "framework": {"torch": {"script": "train.py"}}}
    base.update(spec)
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "WorkloadRun",
            "metadata": {"name": "wr", "namespace": "ml", "uid": "11111111-2222-3333-4444-555555555555",
                         "labels": {"crefn.dev/managed": "true"}},
            "spec": copy.deepcopy(base)}


CASES: dict[str, dict[str, Any]] = {
    "torch-script": run(framework={"torch": {"script": "/workspace/train.py", "args": ["--epochs", "3"]}}),
    "torch-module": run(framework={"torch": {"module": "megatron.train", "args": ["--tp", "8"]}}, gpusPerNode=4),
    "mpi-custom": run(image="nvcr.io/nvidia/hpc-benchmarks:24.09",
                      framework={"mpi": {"binary": "/usr/local/bin/all_reduce_perf", "args": ["-b", "8"],
                                         "mpiArgs": ["--bind-to", "none"], "mpirunPath": "/opt/hpcx/bin/mpirun"}}),
    "exec": run(framework={"exec": {"command": ["/bin/bash", "-c"], "args": ["nvidia-smi && sleep 60"]}}),
    "checkpoint": run(checkpoint={"storageSize": "500Gi", "storageClassName": "lustre", "maxRestarts": 3}),
    "config-inline": run(config={"inline": {"train.yaml": "lr: 0.1\n"}}),
    "config-ref": run(config={"configMapRef": {"name": "shared-config"}}),
    "gpus-set-by-user": run(resources={"limits": {"nvidia.com/gpu": "4", "memory": "1Ti"},
                                       "requests": {"cpu": "64"}}),
    "gpus-zero-by-user": run(resources={"limits": {"nvidia.com/gpu": "0"}}),
    "env-volumes-secrets": run(env=[{"name": "NCCL_DEBUG", "value": "INFO"}],
                               volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "datasets"}}],
                               volumeMounts=[{"name": "data", "mountPath": "/data", "readOnly": True}],
                               imagePullSecrets=[{"name": "ngc"}]),
    "measurements-thresholds": run(thresholds={"avgTFLOPsPerGPU": "value >= 400"},
                                   goodputMeasurement={"logProfileRef": "megatron", "sampleInterval": "30s"},
                                   bandwidthMeasurement={"logProfileRef": "nccl-tests", "testType": "all_reduce"}),
    "gang-scheduler-metadata": run(gangScheduler={"schedulerName": "kai-scheduler", "queue": "team-a"},
                                   workloadMetadata={"labels": {"kueue.x-k8s.io/priority-class": "high"}}),
    "timeout-nics-init": run(orchestration={"timeoutPerJob": "90m", "testScale": "full-scale", "repeatCount": 1},
                             mlnxPerNode=8, nicResourceName="rdma/ib", enableMNNVL=True,
                             initContainers=[{"name": "warmup", "image": "busybox", "command": ["true"]}]),
}


def with_spec(**changes: Any) -> dict[str, Any]:
    r = run()
    for key, value in changes.items():
        if value is None:
            r["spec"].pop(key, None)
        else:
            r["spec"][key] = copy.deepcopy(value)
    return r
