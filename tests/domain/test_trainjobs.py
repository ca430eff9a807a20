"""The TrainJob of an attempt: `workloadMetadata.labels` a key CRE or the project reserves are refused in
CRE's words, not overwritten, and every replicatedJob's pods are labelled."""

from __future__ import annotations

from typing import Any

import pytest

from functions.domain.launching import LaunchObserved, can_only_fail, decide_launch
from functions.domain.trainjobs import refused_label, with_pod_labels
from functions.runtime.effects import Create, WriteStatus
from functions.runtime.settings import Settings
from tests.functions.launch.test_read import POD_LABELS_RESERVED
from tests.support.helpers import NOW, job

CRE_RESERVED = ('spec.workloadMetadata.labels["nvcre.nvidia.com/job"]: label key is reserved for the controller: '
                '"app.kubernetes.io/managed-by" and any key under "nvcre.nvidia.com/" identify workload ownership')


@pytest.mark.parametrize(("labels", "refused"), [
    ({"kueue.x-k8s.io/queue-name": "team-a", "team": "ml"}, ""),
    ({"nvcre.nvidia.com/job": "some-other-job"}, CRE_RESERVED),
    ({"app.kubernetes.io/managed-by": "me"},
     CRE_RESERVED.replace("nvcre.nvidia.com/job", "app.kubernetes.io/managed-by")),
    ({"crefn.dev/attempt": "7", "team": "ml"}, POD_LABELS_RESERVED),
    ({"crefn.dev/managed": "true"},
     POD_LABELS_RESERVED.replace('labels["crefn.dev/attempt"]', 'labels["crefn.dev/managed"]')),
    ({"crefn.dev/managed": "false", "crefn.dev/attempt": "1"}, POD_LABELS_RESERVED),  # sorted: attempt first
    ({"crefn.dev/team": "ml"}, ""),  # the project's own prefix is not reserved, only its two labels
], ids=["user-labels", "cre-prefix", "managed-by", "attempt", "managed", "first-sorted-key", "other-crefn-key"])
def test_reserved_workload_metadata_labels_are_refused_not_overwritten(labels: dict[str, str], refused: str) -> None:
    """CRE's `ValidateLabels` (`pkg/workload/metadata.go`): a reserved key fails the build; the project's
    own pod labels are reserved the same way, so no user label is silently overwritten."""
    assert refused_label(labels, "nvcre.nvidia.com") == refused
    state = job(spec={"workloadMetadata": {"labels": labels}})
    plan = decide_launch(LaunchObserved(state, None), Settings(), NOW, "launch", None)
    if refused:
        assert can_only_fail(LaunchObserved(state, None))
        write = next(e for e in plan.effects if isinstance(e, WriteStatus))
        failed = next(c for c in write.status["conditions"] if c["type"] == "Failed")
        assert (failed["status"], failed["reason"], failed["message"]) == (
            "True", "WorkloadCreationError", f"Failed to build workload: {refused}")
        assert not any(isinstance(e, Create) for e in plan.effects)
    else:
        assert any(isinstance(e, Create) for e in plan.effects)


@pytest.mark.parametrize(("spec", "names"), [
    ({"runtimeRef": {"name": "torch-distributed"}}, ["node"]),
    ({"runtimeRef": {"name": "deepspeed-mpi"}}, ["node", "launcher"]),
    ({"runtimeRef": {"name": "mpi"}, "runtimePatches": [
        {"manager": "kueue.x-k8s.io/manager", "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
            {"name": "launcher"}, {"name": "trainer-node"}]}}}},
        {"manager": "crefn.dev/controller", "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
            {"name": "stale"}]}}}}]}, ["launcher", "trainer-node", "stale"]),
])
def test_every_replicated_job_is_labelled(spec: dict[str, Any], names: list[str]) -> None:
    """Every replicatedJob the TrainJob's patches name (the launcher too), else `node` (+ an MPI
    runtime's `launcher`); another manager's patch is kept, an old own patch replaced."""
    patched = with_pod_labels(spec, "llm", 0, "nvcre.nvidia.com")
    ours = [p for p in patched["runtimePatches"] if p["manager"] == "crefn.dev/controller"]
    assert len(ours) == 1
    assert [r["name"] for r in ours[0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]] == names
    assert len(patched["runtimePatches"]) == len([p for p in spec.get("runtimePatches", [])
                                                  if p["manager"] != "crefn.dev/controller"]) + 1
