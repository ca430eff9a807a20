"""WorkloadRun translation (SPEC §7): golden renders, validation naming the field. `cre-fn render`:
tests/test_cli.py."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from functions.domain.translation import InvalidSpec, translate
from tests.support import paths
from tests.support.render_cases import CASES, with_spec

GOLDEN = paths.GOLDEN / "render"


@pytest.mark.parametrize("case", list(CASES))
def test_golden_render(case: str) -> None:
    expected = list(yaml.safe_load_all((GOLDEN / f"{case}.yaml").read_text()))
    assert translate(CASES[case]).objects == expected


def runtime_container(objs: list[dict[str, Any]], job: str = "node") -> dict[str, Any]:
    runtime = next(o for o in objs if o["kind"] == "TrainingRuntime")
    rj = next(r for r in runtime["spec"]["template"]["spec"]["replicatedJobs"] if r["name"] == job)
    container: dict[str, Any] = rj["template"]["spec"]["template"]["spec"]["containers"][0]
    return container


def trainer(objs: list[dict[str, Any]]) -> dict[str, Any]:
    job = next(o for o in objs if o["kind"] == "Job")
    result: dict[str, Any] = job["spec"]["workload"]["trainJob"]["trainer"]
    return result


def test_the_rules_behind_the_goldens() -> None:
    torch = translate(CASES["torch-script"]).objects
    assert trainer(torch)["command"] == ["torchrun"]
    assert trainer(torch)["args"] == ["/workspace/train.py", "--epochs", "3"]
    assert trainer(torch)["numProcPerNode"] == 4  # no nodes to look at: CRE's catalog fallback, 4
    runtime = next(o for o in torch if o["kind"] == "TrainingRuntime")
    assert runtime["spec"]["mlPolicy"] == {"numNodes": 2, "torch": {}}
    assert runtime["metadata"]["labels"]["trainer.kubeflow.org/framework"] == "torch"
    assert runtime_container(torch)["resources"] == {"limits": {"nvidia.com/gpu": "4"}}
    assert "env" not in trainer(torch)  # the merged env is on the runtime's containers, as CRE's runtimes carry it
    assert [e["name"] for e in runtime_container(torch)["env"]][:2] == ["NCCL_DEBUG", "NCCL_NVLS_ENABLE"]
    assert {"name": "dshm", "mountPath": "/dev/shm"} in runtime_container(torch)["volumeMounts"]
    assert trainer(translate(CASES["torch-module"]).objects)["args"] == ["-m", "megatron.train", "--tp", "8"]
    mpi = translate(CASES["mpi-custom"]).objects
    assert trainer(mpi)["command"] == ["timeout", "3600", "/opt/hpcx/bin/mpirun"]
    assert trainer(mpi)["args"][:6] == ["-N", "4", "--allow-run-as-root", "--mca", "plm_rsh_args",
                                        "-o StrictHostKeyChecking=no -o ConnectionAttempts=10"]
    assert trainer(mpi)["args"][-5:] == ["--bind-to", "none", "/usr/local/bin/all_reduce_perf", "-b", "8"]
    mpi_runtime = next(o for o in mpi if o["kind"] == "TrainingRuntime")["spec"]
    assert mpi_runtime["mlPolicy"]["mpi"] == {"mpiImplementation": "OpenMPI", "numProcPerNode": 4,
                                              "sshAuthMountPath": "/root/.ssh"}
    launcher, node = mpi_runtime["template"]["spec"]["replicatedJobs"]
    assert node["name"] == "node" and "dependsOn" not in node
    assert (launcher["name"], launcher["replicas"], launcher["dependsOn"]) == (
        "launcher", 1, [{"name": "node", "status": "Ready"}])
    assert runtime_container(mpi)["command"] == ["/usr/sbin/sshd"]
    assert mpi_runtime["template"]["spec"]["successPolicy"] == {"operator": "All", "targetReplicatedJobs": ["launcher"]}
    assert trainer(translate(CASES["exec"]).objects)["command"] == ["/bin/bash", "-c"]
    ck = translate(CASES["checkpoint"])
    assert ck.pvc is not None and ck.pvc["spec"]["accessModes"] == ["ReadWriteMany"]
    assert ck.job["spec"]["checkpoint"] == {"pvcName": "wr-checkpoint-pvc", "maxRestarts": 3}
    assert ck.configmap is None and translate(CASES["config-ref"]).configmap is None
    assert translate(CASES["config-inline"]).configmap["data"] == {"train.yaml": "lr: 0.1\n"}  # type: ignore[index]
    assert runtime_container(translate(CASES["gpus-zero-by-user"]).objects)["resources"] == {
        "limits": {"nvidia.com/gpu": "0"}}
    every = translate(CASES["checkpoint"]).objects
    assert all(o["metadata"]["ownerReferences"][0]["kind"] == "WorkloadRun" for o in every)
    assert translate(CASES["checkpoint"]).job["metadata"]["labels"]["crefn.dev/managed"] == "true"
    carried = translate(CASES["measurements-thresholds"]).job["spec"]
    assert carried["thresholds"] == {"avgTFLOPsPerGPU": "value >= 400"}
    assert carried["goodputMeasurement"]["sampleInterval"] == "30s"
    assert carried["bandwidthMeasurement"]["testType"] == "all_reduce"
    assert carried["nodeHealthMonitor"] == {"cel": {"expression": "node.spec.unschedulable == true"}}
    gang = translate(CASES["gang-scheduler-metadata"]).objects
    assert next(o for o in gang if o["kind"] == "Job")["spec"]["workloadMetadata"]["labels"] == {
        "kueue.x-k8s.io/priority-class": "high", "kai.scheduler/queue": "team-a"}
    gang_runtime = next(o for o in gang if o["kind"] == "TrainingRuntime")["spec"]["template"]["spec"]
    assert gang_runtime["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["schedulerName"] == "kai-scheduler"
    nics = translate(CASES["timeout-nics-init"])
    assert nics.job["metadata"]["annotations"] == {"crefn.dev/timeout-per-job": "90m"}
    assert runtime_container(nics.objects)["resources"]["limits"] == {"nvidia.com/gpu": "4", "rdma/ib": "8"}
    assert {e["name"]: e["value"] for e in runtime_container(nics.objects)["env"]}["NCCL_MNNVL_ENABLE"] == "1"
    nic_runtime = next(o for o in nics.objects if o["kind"] == "TrainingRuntime")["spec"]["template"]["spec"]
    nic_pod = nic_runtime["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert nic_pod["initContainers"] == [{"name": "warmup", "image": "busybox", "command": ["true"]}]


@pytest.mark.parametrize(("api_version", "cre_group", "owner"), [
    ("nvcre.nvidia.com/v1alpha1", "nvcre.nvidia.com", "nvcre.nvidia.com/v1alpha1"),
    ("cre.nvidia.com/v1alpha1", "nvcre.nvidia.com", "cre.nvidia.com/v1alpha1"),
    (None, "cre.nvidia.com", "cre.nvidia.com/v1alpha1"),
], ids=["the-runs", "the-runs-over-the-group", "none-in-a-rendered-file"])
def test_every_object_is_owned_by_the_run_as_it_names_itself(api_version: str | None, cre_group: str,
                                                              owner: str) -> None:
    """The owner reference names the run's `apiVersion`; a file rendered without one gets the CRE group's."""
    r = with_spec()
    if api_version is None:
        del r["apiVersion"]
    else:
        r["apiVersion"] = api_version
    every = translate(r, cre_group).objects
    assert [o["metadata"]["ownerReferences"][0]["apiVersion"] for o in every] == [owner] * len(every)


def test_a_nic_count_the_run_sets_in_its_resources_is_kept() -> None:
    """`mlnxPerNode` fills the NIC resource only where the run's `resources` say nothing of it."""
    limited = with_spec(mlnxPerNode=8, nicResourceName="rdma/ib", resources={"limits": {"rdma/ib": "2"}})
    assert runtime_container(translate(limited).objects)["resources"] == {
        "limits": {"rdma/ib": "2", "nvidia.com/gpu": "4"}}
    unsaid = with_spec(mlnxPerNode=8, nicResourceName="rdma/ib")
    assert runtime_container(translate(unsaid).objects)["resources"] == {
        "limits": {"nvidia.com/gpu": "4", "rdma/ib": "8"}}


def test_a_gpu_count_the_run_requests_is_kept_without_a_limit() -> None:
    """A GPU count in the run's `resources.requests` is the run's own: no `limits` GPU count is added beside it
    (nor one for its NICs when it requests them too)."""
    requested = with_spec(mlnxPerNode=8, nicResourceName="rdma/ib",
                          resources={"requests": {"nvidia.com/gpu": "2", "rdma/ib": "1"}})
    assert runtime_container(translate(requested).objects)["resources"] == {
        "requests": {"nvidia.com/gpu": "2", "rdma/ib": "1"}}


INVALID = [
    ("script-and-module", with_spec(framework={"torch": {"script": "a.py", "module": "a"}}),
     "spec.framework.torch: set exactly one of script or module"),
    ("neither-script-nor-module", with_spec(framework={"torch": {"args": ["x"]}}),
     "spec.framework.torch: set exactly one of script or module"),
    ("num-nodes-zero", with_spec(numNodes=0), "spec.numNodes must be an integer of at least 1"),
    ("num-nodes-bool", with_spec(numNodes=True), "spec.numNodes must be an integer of at least 1"),
    ("gpus-per-node-zero", with_spec(gpusPerNode=0), "spec.gpusPerNode must be an integer of at least 1"),
    ("gpus-per-node-bool", with_spec(gpusPerNode=True), "spec.gpusPerNode must be an integer of at least 1"),
    ("args-not-strings", with_spec(framework={"torch": {"script": "a.py", "args": [1]}}),
     "spec.framework.torch.args must be a list of strings"),
    ("mpi-args-not-a-list", with_spec(framework={"mpi": {"binary": "b", "mpirunPath": "m", "mpiArgs": "-np 2"}}),
     "spec.framework.mpi.mpiArgs must be a list of strings"),
    ("mpi-args-not-strings", with_spec(framework={"mpi": {"binary": "b", "mpirunPath": "m", "args": [8]}}),
     "spec.framework.mpi.args must be a list of strings"),
    ("exec-command-not-strings", with_spec(framework={"exec": {"command": ["sleep", 1]}}),
     "spec.framework.exec.command must be a list of strings"),
    ("exec-args-not-a-list", with_spec(framework={"exec": {"command": ["/bin/bash", "-c"], "args": "run.sh"}}),
     "spec.framework.exec.args must be a list of strings"),
    ("max-restarts-negative", with_spec(checkpoint={"storageSize": "1Gi", "maxRestarts": -1}),
     "spec.checkpoint.maxRestarts must not be negative"),
    ("empty-exec-command", with_spec(framework={"exec": {"command": []}}),
     "spec.framework.exec.command must not be empty"),
    ("bad-storage-size", with_spec(checkpoint={"storageSize": "lots"}),
     "spec.checkpoint.storageSize: 'lots' is not a storage size"),
    ("no-image", with_spec(image=None), "spec.image is required"),
    ("two-frameworks", with_spec(framework={"torch": {"script": "a"}, "exec": {"command": ["x"]}}),
     "spec.framework must set exactly one of torch, mpi or exec"),
    ("no-framework", with_spec(framework={}), "spec.framework must set exactly one of torch, mpi or exec"),
    ("mpi-without-binary", with_spec(framework={"mpi": {"mpirunPath": "/bin/mpirun"}}),
     "spec.framework.mpi.binary is required"),
    ("mpi-intel", with_spec(framework={"mpi": {"binary": "b", "mpirunPath": "m", "mpiImplementation": "Intel"}}),
     "spec.framework.mpi.mpiImplementation"),
    ("config-both", with_spec(config={"inline": {"a": "b"}, "configMapRef": {"name": "c"}}),
     "spec.config: set exactly one of inline or configMapRef"),
    ("config-ref-without-name", with_spec(config={"configMapRef": {}}), "spec.config.configMapRef.name is required"),
    ("test-scale", with_spec(orchestration={"testScale": "intra-rack"}), "spec.orchestration.testScale: 'intra-rack'"),
    ("repeat-count", with_spec(orchestration={"repeatCount": 2}), "spec.orchestration.repeatCount: 2 needs"),
    ("max-concurrent", with_spec(orchestration={"maxConcurrent": 4}), "spec.orchestration.maxConcurrent: 4 needs"),
    ("placement", with_spec(orchestration={"placement": "Pinned"}), "spec.orchestration.placement: 'Pinned'"),
    ("overrides", with_spec(overrides=[{"patch": {}}]), "spec.overrides needs CRE's Workflow tier"),
    ("timeout", with_spec(orchestration={"timeoutPerJob": "a day"}), "spec.orchestration.timeoutPerJob: 'a day'"),
    ("nic-name-without-count", with_spec(nicResourceName="rdma/ib"),
     "spec.nicResourceName needs spec.mlnxPerNode (the count per node): it cannot be detected from the GPU "
     "architecture here"),
    ("queue-not-a-label-value", with_spec(gangScheduler={"queue": "team a"}),
     "spec.gangScheduler.queue: 'team a' is not a label value"),
    ("queue-longer-than-a-label", with_spec(gangScheduler={"queue": "q" * 64}),
     f"spec.gangScheduler.queue: '{'q' * 64}' is not a label value"),
    ("queue-conflict",
     with_spec(gangScheduler={"queue": "a"}, workloadMetadata={"labels": {"kai.scheduler/queue": "b"}}),
     "spec.workloadMetadata.labels['kai.scheduler/queue']: 'b' conflicts"),
]


def test_the_smallest_counts_are_valid() -> None:
    """One node of one GPU, and a checkpoint that allows no restart (or says nothing: the default, 0)."""
    small = translate(with_spec(numNodes=1, gpusPerNode=1, checkpoint={"storageSize": "1Gi", "maxRestarts": 0}))
    runtime = next(o for o in small.objects if o["kind"] == "TrainingRuntime")
    assert runtime["spec"]["mlPolicy"] == {"numNodes": 1, "torch": {}} and trainer(small.objects)["numProcPerNode"] == 1
    assert runtime_container(small.objects)["resources"] == {"limits": {"nvidia.com/gpu": "1"}}
    assert small.job["spec"]["checkpoint"] == {"pvcName": "wr-checkpoint-pvc", "maxRestarts": 0}
    unsaid = translate(with_spec(checkpoint={"storageSize": "1Gi"}))
    assert unsaid.job["spec"]["checkpoint"] == {"pvcName": "wr-checkpoint-pvc", "maxRestarts": 0}


def test_a_queue_name_of_63_characters_is_a_label_value() -> None:
    queue = "q" * 63
    job = next(o for o in translate(with_spec(gangScheduler={"queue": queue})).objects if o["kind"] == "Job")
    assert job["spec"]["workloadMetadata"]["labels"]["kai.scheduler/queue"] == queue


@pytest.mark.parametrize(("r", "message"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
def test_invalid_specs_name_the_field(r: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidSpec) as err:
        translate(r)
    assert str(err.value).startswith(message)


GB200 = [{"metadata": {"name": f"gb-{i}", "labels": {"nvidia.com/gpu.present": "true",
                                                      "nvidia.com/gpu.product": "NVIDIA-GB200"}}} for i in (1, 2)]
H100 = [{"metadata": {"name": "h-1", "labels": {"nvidia.com/gpu.present": "true",
                                                 "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}}}]


def pods(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    runtime = next(o for o in objs if o["kind"] == "TrainingRuntime")
    return [r["template"]["spec"]["template"]["spec"] for r in runtime["spec"]["template"]["spec"]["replicatedJobs"]]


def env_of(objs: list[dict[str, Any]], name: str) -> str:
    return next(e["value"] for e in runtime_container(objs)["env"] if e["name"] == name)


@pytest.mark.parametrize(("spec", "nodes", "gpus", "mnnvl"), [
    ({}, GB200, 4, "1"), ({}, H100, 8, "0"), ({}, [], 4, "0"), ({}, None, 4, "0"),
    ({"gpusPerNode": 2, "enableMNNVL": False}, GB200, 2, "0"),
], ids=["gb200-4-gpus-mnnvl-on", "h100-8-gpus", "no-gpu-nodes", "no-cluster-render", "the-run-says-so"])
def test_gpus_per_node_and_mnnvl_default_from_the_target_nodes(spec: dict[str, Any], nodes: list[dict[str, Any]] | None,
                                                               gpus: int, mnnvl: str) -> None:
    """CRE: the WorkloadRun CRD's `gpusPerNode` ("8 for H100/A100, 4 for GB200/GB300"; the GPU catalog's fallback
    of 4 when no node says), `enableMNNVL` ("enabled for GB200/GB300"), `helpers.go` `DefaultEnableMNNVL`."""
    objs = translate(with_spec(**spec), nodes=nodes).objects
    assert trainer(objs)["numProcPerNode"] == gpus
    assert runtime_container(objs)["resources"]["limits"]["nvidia.com/gpu"] == str(gpus)
    assert env_of(objs, "NCCL_MNNVL_ENABLE") == mnnvl


def test_mpi_on_gb200_launches_4_per_node_with_mnnvl() -> None:
    objs = translate(CASES["mpi-custom"], nodes=GB200).objects
    args = trainer(objs)["args"]
    assert args[args.index("-N") + 1] == "4" and "NCCL_MNNVL_ENABLE=1" in args


def test_the_target_is_carried_onto_every_replicated_job() -> None:
    """ADR-089 decision 6: `target` becomes a required node affinity on every job, the MPI launcher too."""
    r = copy.deepcopy(CASES["mpi-custom"])
    r["spec"]["target"] = {"nodeSelector": {"pool": "a"}, "taintSelectors": [{"key": "dedicated"}]}
    nodes = [{"metadata": {**n["metadata"], "labels": {**n["metadata"]["labels"], "pool": "a"}},
              "spec": {"taints": [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]}} for n in GB200]
    term = {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"]},
                                 {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-GB200"]}]}
    every = pods(translate(r, nodes=nodes).objects)
    assert len(every) == 2
    for pod in every:
        assert pod["affinity"] == {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [term]}}}
        assert pod["tolerations"] == [{"key": "dedicated", "operator": "Exists"}]
    assert all("affinity" not in p for p in pods(translate(CASES["mpi-custom"], nodes=nodes).objects))


def test_a_run_rendered_without_a_namespace_gives_its_objects_an_empty_one() -> None:
    """`cre-fn render` of a file that names no namespace: the objects say "" (the namespace applied later)."""
    r = with_spec()
    del r["metadata"]["namespace"]
    assert {o["metadata"]["namespace"] for o in translate(r).objects} == {""}
