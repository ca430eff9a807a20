"""The TrainJob a Job's attempt runs as: `<job>-workload` built from `spec.workload.trainJob`, labelled
(`workloadMetadata.labels`, refused on a key CRE or the project reserves, in CRE's words), owned by the Job,
and patched so that every replicatedJob's pods carry the Job, managed and attempt labels. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from events.types import (
    ATTEMPT_LABEL,
    CONTROLLER_MANAGER,
    FIRST_PHASE_ANNOTATION,
    MANAGED_BY_LABEL,
    MANAGED_BY_VALUE,
    MANAGED_LABEL,
    TRAINJOB_API_VERSION,
    TRAINJOB_KIND,
    job_label,
)
from functions.domain.attempts import attempt_label, controlled_by
from functions.domain.gotext import go_quote
from functions.domain.jobs import JobState

LABELS_FIELD = "spec.workloadMetadata.labels"


POD_LABELS = (ATTEMPT_LABEL, MANAGED_LABEL)
"""The project's own labels on the workload, which a `workloadMetadata` label may not set either."""


def build_trainjob(state: JobState, name: str, cre_group: str,
                   runtime_jobs: tuple[str, ...] | None = None) -> dict[str, Any]:
    job = state.job
    labels = dict(job.spec.workload_metadata.labels)
    labels.update({MANAGED_BY_LABEL: MANAGED_BY_VALUE, job_label(cre_group): job.metadata.name,
                   **attempt_label(job.status.restart_count)})
    if job.metadata.labels.get(MANAGED_LABEL) == "true":
        labels[MANAGED_LABEL] = "true"
    return {
        "apiVersion": TRAINJOB_API_VERSION, "kind": TRAINJOB_KIND,
        "metadata": {"name": name, "namespace": job.metadata.namespace, "labels": labels,
                     **({"annotations": {FIRST_PHASE_ANNOTATION: "creator"}} if decides_first_phase(state) else {}),
                     "ownerReferences": [{
            "apiVersion": job.api_version, "kind": job.kind, "name": job.metadata.name, "uid": job.metadata.uid,
            "controller": True, "blockOwnerDeletion": True}]},
        "spec": with_pod_labels(dict(job.spec.workload.train_job or {}), job.metadata.name, job.status.restart_count,
                                cre_group, runtime_jobs),
    }


def refused_label(labels: Mapping[str, str], cre_group: str) -> str:
    """Why `workloadMetadata.labels` cannot be applied ("" when they can), in CRE's words
    (`pkg/workload/metadata.go`, `ValidateLabels`, keys in sorted order): a key CRE reserves
    (`app.kubernetes.io/managed-by`, any under `<cre group>/`), or one the project labels the workload
    and its pods with (`crefn.dev/attempt`, `crefn.dev/managed`), is refused rather than overwritten."""
    prefix = f"{cre_group}/"
    for key in sorted(labels):
        if key == MANAGED_BY_LABEL or key.startswith(prefix):
            return (f"{LABELS_FIELD}[{go_quote(key)}]: label key is reserved for the controller: "
                    f"{go_quote(MANAGED_BY_LABEL)} and any key under {go_quote(prefix)} identify workload ownership")
        if key in POD_LABELS:
            return (f"{LABELS_FIELD}[{go_quote(key)}]: label key is reserved for the controller: "
                    f"{' and '.join(map(go_quote, POD_LABELS))} identify the workload's attempt and pods")
    return ""


def replicated_jobs(spec: Mapping[str, Any], runtime_jobs: tuple[str, ...] | None = None) -> list[str]:
    """The replicatedJobs whose pods are labelled: the training runtime's, when it could be read; else
    those the TrainJob's own runtime patches name; else `node` (Trainer's runtimes' name for the
    workers) and, for a runtime whose name says MPI, its `launcher`."""
    if runtime_jobs:
        return list(dict.fromkeys(runtime_jobs))
    names = [name for patch in spec.get("runtimePatches") or [] for name in patch_jobs(patch)]
    if names:
        return list(dict.fromkeys(names))
    runtime = str((spec.get("runtimeRef") or {}).get("name", ""))
    return ["node", "launcher"] if "mpi" in runtime.lower() else ["node"]


def with_pod_labels(spec: dict[str, Any], job: str, attempt: int, cre_group: str,
                    runtime_jobs: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The TrainJob spec with the project's own runtime patch (manager `crefn.dev/controller`): every
    replicatedJob's pods carry `<cre group>/job`, `crefn.dev/managed` and `crefn.dev/attempt`, so the
    functions can find the pods of an attempt (CRE labels only the workers; the MPI launcher is labelled
    too so that `mpirun`'s error can be read)."""
    labels = {job_label(cre_group): job, MANAGED_LABEL: "true", **attempt_label(attempt)}
    ours = {"manager": CONTROLLER_MANAGER, "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
        {"name": name, "template": {"spec": {"template": {"metadata": {"labels": labels}}}}}
        for name in replicated_jobs(spec, runtime_jobs)]}}}}
    others = [p for p in spec.get("runtimePatches") or [] if p.get("manager") != CONTROLLER_MANAGER]
    return {**spec, "runtimePatches": [*others, ours]}


def patch_jobs(patch: Mapping[str, Any]) -> list[str]:
    """The replicatedJobs a TrainJob's runtime patch names."""
    template = ((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec") or {}
    return [str(r["name"]) for r in template.get("replicatedJobs") or [] if r.get("name")]


def patched_jobs(trainjob: Mapping[str, Any] | None) -> tuple[str, ...] | None:
    """The replicatedJobs the functions' own runtime patch of a TrainJob labels (None: no such patch)."""
    for patch in ((trainjob or {}).get("spec") or {}).get("runtimePatches") or []:
        if isinstance(patch, dict) and patch.get("manager") == CONTROLLER_MANAGER:
            return tuple(patch_jobs(patch)) or None
    return None


def decides_first_phase(state: JobState) -> bool:
    """Whether the creator decides the first phase of the Job's TrainJob: not with stall detection
    (`spec.stallMultiplier`), whose running path reads the Job's GoodputMeasurement (one never reset can
    show the workload stalled at once); `status` does, as for any TrainJob."""
    return state.job.spec.stall_multiplier is None


def owned_by(obj: Mapping[str, Any], state: JobState) -> bool:
    return controlled_by(obj, state.job.metadata.uid)
