"""Every WorkloadRun field carried or refused (`functions.domain.runspec`), as a table."""

from __future__ import annotations

from typing import Any

import pytest

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

REFUSED = [
    ({"orchestration": {"testScale": "intra-node"}},
     "spec.orchestration.testScale: 'intra-node' needs CRE's Workflow"),
    ({"orchestration": {"repeatCount": 3}}, "spec.orchestration.repeatCount: 3 needs CRE's Workflow"),
    ({"orchestration": {"maxConcurrent": 2}}, "spec.orchestration.maxConcurrent: 2 needs CRE's Workflow"),
    ({"orchestration": {"placement": "Pinned"}}, "spec.orchestration.placement: 'Pinned' needs CRE's Workflow"),
    ({"overrides": [{"op": "add"}]}, "spec.overrides needs CRE's Workflow"),
    ({"orchestration": {"timeoutPerJob": "soon"}}, "spec.orchestration.timeoutPerJob: 'soon' is not a positive"),
    ({"orchestration": {"timeoutPerJob": "0s"}}, "spec.orchestration.timeoutPerJob: '0s' is not a positive"),
    ({"nicResourceName": "rdma/ib"}, "spec.nicResourceName needs spec.mlnxPerNode"),
]
ACCEPTED = [{}, {"orchestration": {"testScale": "full-scale", "repeatCount": 1, "maxConcurrent": 0,
                                   "placement": "Unpinned", "timeoutPerJob": "30m"}},
            {"target": {}}, {"overrides": []}, {"nicResourceName": "rdma/ib", "mlnxPerNode": 4},
            {"target": {"nodeNames": ["gpu-1"]}}]


@pytest.mark.parametrize(("spec", "message"), REFUSED, ids=[m.split(":")[0].split(" ")[0] + str(i)
                                                             for i, (_, m) in enumerate(REFUSED)])
def test_workflow_fields_are_refused_unless_default(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidSpec, match=message.replace("(", r"\(").replace(".", r"\.")):
        check_workflow_fields(spec)


@pytest.mark.parametrize("spec", ACCEPTED, ids=["nothing", "all-defaults", "empty-target", "no-overrides", "nics",
                                            "target-carried-onto-the-pods"])
def test_single_job_defaults_are_accepted(spec: dict[str, Any]) -> None:
    check_workflow_fields(spec)


def test_job_carries_thresholds_measurements_metadata_and_node_health() -> None:
    spec = {"thresholds": {"busBandwidthGBps": "value >= 900"},
            "goodputMeasurement": {"logProfileRef": "llama", "sampleInterval": "30s"},
            "bandwidthMeasurement": {"logProfileRef": "nccl", "testType": "all_reduce"},
            "workloadMetadata": {"labels": {"kueue.x-k8s.io/queue-name": "team-a"}},
            "gangScheduler": {"schedulerName": "kai-scheduler"}}
    assert job_fields(spec) == {
        "thresholds": {"busBandwidthGBps": "value >= 900"},
        "goodputMeasurement": {"logProfileRef": "llama", "sampleInterval": "30s"},
        "bandwidthMeasurement": {"logProfileRef": "nccl", "testType": "all_reduce"},
        "workloadMetadata": {"labels": {"kueue.x-k8s.io/queue-name": "team-a",
                                        "kai.scheduler/queue": "default-queue"}},
        "nodeHealthMonitor": {"cel": {"expression": "node.spec.unschedulable == true"}}}
    assert job_fields({}) == {"nodeHealthMonitor": {"cel": {"expression": "node.spec.unschedulable == true"}}}


@pytest.mark.parametrize(("gang", "labels", "expected"), [
    ({"queue": "q1"}, {}, {"kai.scheduler/queue": "q1"}),
    ({"queue": "q1", "queueLabelKey": "runai/queue"}, {}, {"runai/queue": "q1"}),
    ({}, {"kai.scheduler/queue": "default-queue"}, {"kai.scheduler/queue": "default-queue"}),
], ids=["queue", "own-label-key", "same-value-twice"])
def test_gang_queue_label(gang: dict[str, str], labels: dict[str, str], expected: dict[str, str]) -> None:
    fields = job_fields({"gangScheduler": gang, "workloadMetadata": {"labels": labels}})
    assert fields["workloadMetadata"]["labels"] == expected


def test_a_conflicting_queue_label_is_refused() -> None:
    with pytest.raises(InvalidSpec, match=r"labels\['kai.scheduler/queue'\]: 'other' conflicts"):
        job_fields({"gangScheduler": {}, "workloadMetadata": {"labels": {"kai.scheduler/queue": "other"}}})


def test_timeout_per_job_becomes_the_jobs_annotation() -> None:
    assert job_annotations({}) == {"crefn.dev/timeout-per-job": "24h"}
    assert job_annotations({"orchestration": {"timeoutPerJob": "90m"}}) == {"crefn.dev/timeout-per-job": "90m"}


def test_nccl_environment_user_wins_by_name() -> None:
    """CRE's `MergeEnvVars`: the base variables the user does not set, in their order, then all of the user's."""
    env = nccl_env({"enableMNNVL": True}, [{"name": "NCCL_DEBUG", "value": "WARN"}, {"name": "X", "value": "1"}])
    names = [e["name"] for e in env]
    assert names == ["NCCL_NVLS_ENABLE", "NCCL_CUMEM_ENABLE", "NCCL_NET_GDR_C2C", "NCCL_NET_GDR_LEVEL",
                     "NCCL_P2P_NET_CHUNKSIZE", "NCCL_SHM_DISABLE", "NCCL_MNNVL_ENABLE", "NCCL_SOCKET_IFNAME",
                     "NCCL_DEBUG", "X"]
    assert {e["name"]: e["value"] for e in env}["NCCL_DEBUG"] == "WARN"
    assert {e["name"]: e["value"] for e in env}["NCCL_MNNVL_ENABLE"] == "1"
    assert {e["name"]: e["value"] for e in nccl_env({}, [])}["NCCL_MNNVL_ENABLE"] == "0"


@pytest.mark.parametrize(("spec", "expected"), [
    ({}, {}), ({"mlnxPerNode": 0}, {}), ({"mlnxPerNode": 8}, {"nvidia.com/mlnxnics": "8"}),
    ({"mlnxPerNode": 4, "nicResourceName": "rdma/ib"}, {"rdma/ib": "4"}),
], ids=["unset", "opt-out", "default-name", "own-name"])
def test_nic_resources(spec: dict[str, Any], expected: dict[str, str]) -> None:
    assert nic_resources(spec) == expected


def test_pod_fields() -> None:
    spec = {"imagePullSecrets": [{"name": "ngc"}], "initContainers": [{"name": "warm", "image": "busybox"}],
            "gangScheduler": {"schedulerName": "kai-scheduler"}}
    assert pod_fields(spec) == {"imagePullSecrets": [{"name": "ngc"}],
                                "initContainers": [{"name": "warm", "image": "busybox"}],
                                "schedulerName": "kai-scheduler"}


def test_mpi_launch_as_cre() -> None:
    """CRE's `buildJobTemplate` and `MPIEnvArgs`: `-N`, root, the ssh options, every variable forwarded with `-x`
    (a `valueFrom` one by name; one the mpiArgs `-x` themselves left to them), then mpiArgs, binary, args."""
    env = [{"name": "NCCL_DEBUG", "value": "INFO"}, {"name": "NCCL_SOCKET_IFNAME", "value": "eth0"},
           {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
           {"name": "EMPTY", "value": ""}]
    command, args = mpi_launch({"mpirunPath": "/opt/hpcx/ompi/bin/mpirun", "binary": "/bin/all_reduce_perf",
                                "mpiArgs": ["--bind-to", "none", "-x", "NCCL_SOCKET_IFNAME=ib0"],
                                "args": ["-b", "8"]}, 8, env)
    assert command == ["timeout", "3600", "/opt/hpcx/ompi/bin/mpirun"]
    assert args == ["-N", "8", "--allow-run-as-root", "--mca", "plm_rsh_args",
                    "-o StrictHostKeyChecking=no -o ConnectionAttempts=10", "-x", "NCCL_DEBUG=INFO",
                    "-x", "POD_IP", "-x", "EMPTY=", "--bind-to", "none", "-x", "NCCL_SOCKET_IFNAME=ib0",
                    "/bin/all_reduce_perf", "-b", "8"]
    _, bare = mpi_launch({"mpirunPath": "/m", "binary": "/b", "mpiArgs": ["-x"]}, 4, env[:1])
    assert bare == ["-N", "4", "--allow-run-as-root", "--mca", "plm_rsh_args",
                    "-o StrictHostKeyChecking=no -o ConnectionAttempts=10", "-x", "NCCL_DEBUG=INFO", "-x", "/b"]
