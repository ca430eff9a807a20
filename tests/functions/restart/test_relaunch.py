"""The next attempt `restart` launches: the failed attempt's own runtime patch names its replicatedJobs,
unless the Job's runtime was edited since, when the training runtime is read for it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from events.envelope import parse_phase_event
from functions.domain.pods import Capture
from functions.restart.decide import decide
from functions.restart.observed import Observed
from functions.runtime.codec import to_envelope
from functions.runtime.settings import Settings
from tests.support.helpers import EARLIER, NOW, job, trainjob
from tests.support.world import phase_record

OURS = {"manager": "crefn.dev/controller", "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
    {"name": "launcher"}, {"name": "node"}]}}}}


def with_patch(tj: dict[str, Any], finalizers: list[str] | None = None) -> dict[str, Any]:
    meta = {**tj["metadata"], **({"finalizers": finalizers} if finalizers else {})}
    return {**tj, "metadata": meta, "spec": {**tj["spec"], "runtimePatches": [OURS]}}


TJ_FAILED = [{"type": "Failed", "status": "True", "reason": "JobsFailed", "message": "node-0 exit 137"}]


RUNNING = [{"type": "InProgress", "status": "True", "reason": "WorkloadRunning", "message": "",
            "observedGeneration": 1, "lastTransitionTime": EARLIER}]


NO_GRACE = Settings(restart_grace_seconds=0)


CKPT = {"pvcName": "p", "maxRestarts": 2}


@pytest.mark.parametrize(("runtime_ref", "own"), [
    ({"name": "t"}, True),
    ({"name": "t", "kind": "ClusterTrainingRuntime"}, True),
    ({"name": "t2"}, False),
    ({"name": "t", "kind": "TrainingRuntime"}, False),
], ids=["the-same", "the-same-kind-spelled-out", "another-name", "another-kind"])
def test_the_failed_attempts_patch_names_the_jobs_only_of_the_runtime_it_ran(runtime_ref: dict[str, str],
                                                                             own: bool) -> None:
    """The runtime the failed attempt ran (`t`, a ClusterTrainingRuntime) is the Job's only with the same name
    and the same kind (a `runtimeRef` without a kind names a ClusterTrainingRuntime, as Kubeflow Trainer reads it)."""
    from functions.restart.decide import own_patch_jobs

    failed = with_patch(trainjob(TJ_FAILED))
    state = job(RUNNING, checkpoint=CKPT, workload_ref=True,
                spec={"workload": {"trainJob": {"runtimeRef": runtime_ref}}})
    assert own_patch_jobs(failed, state) == (("launcher", "node") if own else None)


def test_a_runtime_edited_since_the_failed_attempt_is_read_for_the_next_one() -> None:
    """The failed attempt's own runtime patch names the replicatedJobs only of the runtime it ran: with the
    Job's `runtimeRef` edited since, the runtime is read, as `launch` reads it."""
    from functions.restart.decide import own_patch_jobs
    from functions.restart.wants import runtime_wanted

    env = to_envelope(phase_record("ns", "llm", "Failed"))
    running = job(RUNNING, checkpoint=CKPT, workload_ref=True)
    failed = with_patch(trainjob(TJ_FAILED))
    assert own_patch_jobs(failed, running) == ("launcher", "node")
    edited = job(RUNNING, checkpoint=CKPT, workload_ref=True,
                 spec={"workload": {"trainJob": {"runtimeRef": {"name": "t", "kind": "TrainingRuntime"}}}})
    assert own_patch_jobs(failed, edited) is None
    observed = Observed(env, parse_phase_event(env), edited, failed, evidence=True, capture=Capture((), None))
    assert runtime_wanted(observed, NO_GRACE, NOW) is True
    assert runtime_wanted(replace(observed, state=running), NO_GRACE, NOW) is False
    plan = decide(observed, NO_GRACE, NOW)
    assert plan.then is not None and plan.then.runtime_jobs is None  # the launch names the usual ones
