"""`functions.parity.decide`, pure: CRE's verdict against the functions' from the same state, field by field, a
difference on fresh inputs taken as timing (a retry after the settle window), each check's identity, and what is
not compared."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from events.emitted import ParityCheckedData
from events.objects import Pod
from functions.domain.jobs import JobState, parse_job
from functions.parity.decide import Read, check_id, decide, difference_key, recheck_due, stored
from functions.runtime.codec import to_envelope
from functions.runtime.effects import KubeEvent, Wait
from functions.runtime.resources import cre_jobs
from functions.runtime.settings import Settings
from localstack.eventing.apisource import apiserver_record
from tests.support.helpers import EARLIER, NOW, cond, job, pod, trainjob

OBSERVE = Settings(mode="observe")
CKPT = {"pvcName": "p", "maxRestarts": 2}
LONG_AGO = "2026-11-30T09:00:00Z"
"""Three hours before NOW: when the workloads of these tests were created and changed."""


def exclusive(true_type: str, reason: str, message: str = "m") -> list[dict[str, Any]]:
    return [cond(t, "True" if t == true_type else "False", reason if t == true_type else "NotApplicable",
                 message if t == true_type else "") for t in ("InProgress", "Succeeded", "Failed")]


def running_trainjob() -> dict[str, Any]:
    return trainjob(created=LONG_AGO)


def failed_trainjob(at: str = LONG_AGO) -> dict[str, Any]:
    return trainjob([{"type": "Failed", "status": "True", "reason": "Failed", "message": "exit 1",
                      "lastTransitionTime": at}], created=LONG_AGO)


def complete_trainjob() -> dict[str, Any]:
    return trainjob([{"type": "Complete", "status": "True", "reason": "Completed", "message": "",
                      "lastTransitionTime": LONG_AGO}], created=LONG_AGO)


def pending_trainjob() -> dict[str, Any]:
    raw = trainjob(created=LONG_AGO)
    raw["spec"]["suspend"] = True
    return raw


def oom_pod(node: str = "gpu-1") -> Pod:
    return pod("llm-workload-node-0-0", node=node, exits=[("trainer", 137, "OOMKilled")], phase="Failed")


SETTLED = NOW - timedelta(hours=1)
"""When a difference was first seen, in most tests: long enough ago (the default window is 60 s)."""


def read(state: JobState, raw: dict[str, Any] | None, pods: tuple[Pod, ...] = (), evidence: bool | None = None,
         first_seen: datetime | None = SETTLED) -> Read:
    cause = to_envelope(apiserver_record("update", state.raw, cre_jobs("nvcre.nvidia.com"), "https://api"))
    return Read(cause, state, raw, pods, evidence, first_seen)


def checked(state: JobState, raw: dict[str, Any] | None, pods: tuple[Pod, ...] = (), evidence: bool | None = None,
            settings: Settings = OBSERVE) -> ParityCheckedData:
    plan = decide(read(state, raw, pods, evidence), settings, NOW)
    assert plan.reply is not None, plan.reason
    assert isinstance(plan.reply.data, ParityCheckedData)
    return plan.reply.data


def fields(data: ParityCheckedData) -> dict[str, tuple[str, str, str]]:
    return {f.field: (f.result, f.cre, f.functions) for f in data.fields}


# -- restarts and failures: decided on the restart count before the verdict ------------------------------------

def test_a_restart_both_would_make_agrees() -> None:
    state = job(exclusive("InProgress", "WorkloadRestarting"), checkpoint=CKPT, restart_count=1)
    data = checked(state, None)
    assert (data.verdict, data.result) == ("InProgress/WorkloadRestarting", "agree")
    assert fields(data) == {"phase": ("agree", "InProgress/WorkloadRestarting", "InProgress/WorkloadRestarting"),
                            "restartCount": ("agree", "1", "1")}


def test_a_restart_without_a_checkpoint_differs_the_functions_would_fail() -> None:
    """CRE's `Restarting workload from checkpoint` on a Job with no `spec.checkpoint`: the functions fail it."""
    state = job(exclusive("InProgress", "WorkloadRestarting"), restart_count=1)
    data = checked(state, None)
    assert data.result == "differ"
    assert fields(data) == {"phase": ("differ", "InProgress/WorkloadRestarting", "Failed/WorkloadFailed"),
                            "restartCount": ("differ", "1", "0")}


def test_a_restart_past_max_restarts_differs() -> None:
    state = job(exclusive("InProgress", "WorkloadRestarting"), checkpoint=CKPT, restart_count=3)
    assert fields(checked(state, None))["restartCount"] == ("differ", "3", "2")


def test_a_failure_both_would_record_agrees_with_its_nodes_and_container() -> None:
    state = job(exclusive("Failed", "WorkloadFailed"), status={
        "failedNodes": [{"name": "gpu-1", "reason": "WorkloadFailed", "message": "m"}],
        "failureLog": {"podName": "llm-workload-node-0-0", "nodeName": "gpu-1", "exitCode": 137,
                       "reason": "OOMKilled", "tail": "CUDA out of memory"}})
    data = checked(state, failed_trainjob(), (oom_pod(),))
    assert data.result == "agree"
    assert fields(data) == {"phase": ("agree", "Failed/WorkloadFailed", "Failed/WorkloadFailed"),
                            "restartCount": ("agree", "0", "0"),
                            "failedNodes": ("agree", "gpu-1", "gpu-1"),
                            "failureLog": ("agree", "OOMKilled llm-workload-node-0-0 exit 137",
                                           "OOMKilled llm-workload-node-0-0 exit 137")}


def test_a_failure_whose_pods_still_run_records_no_terminated_container_on_both_sides() -> None:
    """A TrainJob deleted by hand while its pods run: CRE's failure log says `NoTerminatedContainer` (no pod, exit 0),
    and so would the functions (the soak's `deleted by hand` Jobs)."""
    state = job(exclusive("Failed", "WorkloadFailed"), status={
        "failedNodes": [{"name": "gpu-1", "reason": "WorkloadFailed", "message": "m"}],
        "failureLog": {"podName": "", "nodeName": "", "exitCode": 0, "reason": "NoTerminatedContainer",
                       "tail": "pods for this Job were found, but none had a container terminated with a non-zero "
                               "exit code"}})
    data = checked(state, failed_trainjob(), (pod(node="gpu-1", exits=[("trainer", -1, "")]),))
    assert fields(data)["failureLog"] == ("agree", "NoTerminatedContainer  exit 0", "NoTerminatedContainer  exit 0")
    assert data.result == "agree"


def test_a_failure_with_restarts_left_and_evidence_differs_the_functions_would_restart() -> None:
    state = job(exclusive("Failed", "WorkloadFailed"), checkpoint=CKPT)
    data = checked(state, failed_trainjob(), (), evidence=True)
    assert fields(data) == {"phase": ("differ", "Failed/WorkloadFailed", "InProgress/WorkloadRestarting"),
                            "restartCount": ("differ", "0", "1"), "failedNodes": ("agree", "", ""),
                            "failureLog": ("agree", "", "")}


def test_without_checkpoint_evidence_the_functions_fail_too() -> None:
    """`CREFN_REQUIRE_CHECKPOINT_EVIDENCE` (default true): no GoodputMeasurement checkpoint, no restart."""
    state = job(exclusive("Failed", "WorkloadFailed"), checkpoint=CKPT)
    assert checked(state, failed_trainjob(), (), evidence=False).result == "agree"


def test_failed_nodes_from_the_group_nodes_annotation_first() -> None:
    state = job(exclusive("Failed", "WorkloadFailed"), annotations={"nvcre.nvidia.com/group-nodes": "n2,n1"},
                status={"failedNodes": [{"name": "gpu-1", "reason": "WorkloadFailed", "message": "m"}]})
    assert fields(checked(state, failed_trainjob(), (oom_pod(),)))["failedNodes"] == ("differ", "gpu-1", "n1 n2")


def test_failed_nodes_are_compared_as_their_distinct_names_sorted_and_spaced() -> None:
    state = job(exclusive("Failed", "WorkloadFailed"), annotations={"nvcre.nvidia.com/group-nodes": "n2,n1"},
                status={"failedNodes": [{"name": "n2", "reason": "WorkloadFailed", "message": "m"},
                                        {"name": "n1", "reason": "WorkloadFailed", "message": "m"},
                                        {"name": "n2", "reason": "HardwareFailureDetected", "message": "h"}]})
    assert stored(state)["failedNodes"] == "n1 n2"
    assert fields(checked(state, failed_trainjob(), (oom_pod(),)))["failedNodes"] == ("agree", "n1 n2", "n1 n2")


def test_a_failure_whose_pods_are_gone_compares_no_attribution() -> None:
    state = job(exclusive("Failed", "WorkloadFailed"), status={
        "failedNodes": [{"name": "gpu-1", "reason": "WorkloadFailed", "message": "m"}]})
    assert set(fields(checked(state, failed_trainjob()))) == {"phase", "restartCount"}


def test_a_failure_of_a_trainjob_still_running_differs_on_the_phase() -> None:
    state = job(exclusive("Failed", "WorkloadFailed"), status={"workloadStartTime": EARLIER})
    assert fields(checked(state, running_trainjob()))["phase"] == (
        "differ", "Failed/WorkloadFailed", "InProgress/WorkloadRunning")


# -- the phase verdicts --------------------------------------------------------------------------------------

@pytest.mark.parametrize(("condition", "raw", "agree"), [
    (("InProgress", "WorkloadPending"), pending_trainjob(), True),
    (("InProgress", "WorkloadPending"), running_trainjob(), False),
    (("Succeeded", "WorkloadCompleted"), complete_trainjob(), True),
    (("Succeeded", "WorkloadCompleted"), running_trainjob(), False),
], ids=["pending", "pending-but-running", "completed", "completed-but-running"])
def test_the_phase_verdicts(condition: tuple[str, str], raw: dict[str, Any], agree: bool) -> None:
    state = job(exclusive(*condition), status={"workloadStartTime": EARLIER})
    assert checked(state, raw).result == ("agree" if agree else "differ")


def test_running_agrees_on_the_start_time_and_the_block_marker() -> None:
    state = job(exclusive("InProgress", "WorkloadRunning"), status={"workloadStartTime": EARLIER})
    data = checked(state, running_trainjob(), (pod(node="gpu-1", exits=[("trainer", -1, "")]),))
    assert fields(data) == {"phase": ("agree", "InProgress/WorkloadRunning", "InProgress/WorkloadRunning"),
                            "workloadStartTime": ("agree", "set", "set"),
                            "schedulingBlocked": ("agree", "unset", "unset")}


def test_running_without_a_start_time_differs_the_functions_would_set_it() -> None:
    """CRE said WorkloadRunning and wrote no `workloadStartTime`: the functions write it the first time."""
    state = job(exclusive("InProgress", "WorkloadRunning"))
    data = checked(state, running_trainjob(), (pod(node="gpu-1", exits=[("trainer", -1, "")]),))
    assert fields(data) == {"phase": ("agree", "InProgress/WorkloadRunning", "InProgress/WorkloadRunning"),
                            "workloadStartTime": ("differ", "unset", "set"),
                            "schedulingBlocked": ("agree", "unset", "unset")}


def test_running_while_pods_cannot_be_scheduled_past_the_grace_differs() -> None:
    """Blocked since 10:00, grace 300 s (CRE's default): at 12:00 the functions say WorkloadSchedulingBlocked."""
    blocked = pod(scheduled=("False", "Unschedulable", "0/8 nodes are available"), phase="Pending")
    state = job(exclusive("InProgress", "WorkloadRunning"), status={"schedulingBlockedSince": EARLIER})
    assert fields(checked(state, running_trainjob(), (blocked,))) == {
        "phase": ("differ", "InProgress/WorkloadRunning", "InProgress/WorkloadSchedulingBlocked"),
        "workloadStartTime": ("agree", "unset", "unset"), "schedulingBlocked": ("agree", "set", "set")}


# -- timing: a difference is a divergence once it has held, nothing changed, for the settle window ---------------

def test_a_difference_first_seen_10_s_ago_is_retried_when_the_window_is_over() -> None:
    """CRE says Failed while the functions would restart, first seen 10 s ago: CRE may not have acted yet.
    503, retry in 50 s (CREFN_PARITY_SETTLE_SECONDS 60)."""
    state = job(exclusive("Failed", "WorkloadFailed"), checkpoint=CKPT)
    plan = decide(read(state, failed_trainjob(), (), True, NOW - timedelta(seconds=10)), OBSERVE, NOW)
    assert plan.reply is None
    (wait,) = plan.effects
    assert isinstance(wait, Wait) and wait.retry_after == 50 and "CRE may not have acted yet" in wait.reason


def test_a_difference_seen_for_the_first_time_waits_the_whole_window() -> None:
    state = job(exclusive("Failed", "WorkloadFailed"), checkpoint=CKPT)
    (wait,) = decide(read(state, failed_trainjob(), (), True, None), OBSERVE, NOW).effects
    assert isinstance(wait, Wait) and wait.retry_after == 60


def test_an_agreement_is_reported_at_once() -> None:
    state = job(exclusive("Failed", "WorkloadFailed"))
    assert checked(state, failed_trainjob()).result == "agree"
    assert decide(read(state, failed_trainjob(), first_seen=None), OBSERVE, NOW).reply is not None


def test_a_zero_window_reports_every_difference_at_once() -> None:
    state = job(exclusive("Failed", "WorkloadFailed"), checkpoint=CKPT)
    plan = decide(read(state, failed_trainjob(), (), True, None), Settings(mode="observe", parity_settle_seconds=0),
                  NOW)
    assert plan.reply is not None and plan.reply.data.result == "differ"  # type: ignore[attr-defined]


def test_the_difference_key_changes_with_any_input_and_with_the_functions_verdict() -> None:
    """The same key means the same difference on the same Job, TrainJob and pods (their resourceVersions)."""
    state = job(exclusive("Failed", "WorkloadFailed"), checkpoint=CKPT)
    key = difference_key(read(state, failed_trainjob(), (), True), OBSERVE, NOW)
    assert len(key) == 16 and key == difference_key(read(state, failed_trainjob(), (), True), OBSERVE, NOW)
    moved = failed_trainjob()
    moved["metadata"]["resourceVersion"] = "99"
    assert difference_key(read(state, moved, (), True), OBSERVE, NOW) != key
    assert difference_key(read(state, failed_trainjob(), (), False), OBSERVE, NOW) == ""  # now they agree


# -- what is reported, and what is not compared ----------------------------------------------------------------

def test_a_difference_is_a_warning_event_recorded_in_observe_mode_too() -> None:
    state = job(exclusive("InProgress", "WorkloadRestarting"), restart_count=1)
    plan = decide(read(state, None), OBSERVE, NOW)
    (event,) = plan.effects
    assert isinstance(event, KubeEvent) and event.observing
    assert event.body["type"] == "Warning" and event.body["reason"] == "VerdictsDiffer"
    assert event.body["note"] == ("CRE's verdict InProgress/WorkloadRestarting differs from the functions': "
                                  "phase: CRE InProgress/WorkloadRestarting, functions Failed/WorkloadFailed; "
                                  "restartCount: CRE 1, functions 0")
    assert plan.reply is not None and plan.reply.extensions["parityresult"] == "differ"


def test_an_agreement_records_no_event() -> None:
    state = job(exclusive("InProgress", "WorkloadRestarting"), checkpoint=CKPT, restart_count=1)
    assert decide(read(state, None), OBSERVE, NOW).effects == ()


@pytest.mark.parametrize(("conditions", "raw", "why"), [
    ([], running_trainjob(), "the verdict (none) is not one the functions compare"),
    (exclusive("Failed", "JobTimedOut"), running_trainjob(), "the verdict Failed/JobTimedOut is not one"),
    (exclusive("InProgress", "WorkloadRunning"), None, "has no TrainJob of its own to compare"),
], ids=["no-verdict", "timeout", "no-trainjob"])
def test_what_is_not_compared_is_answered_with_the_reason(conditions: list[dict[str, Any]],
                                                          raw: dict[str, Any] | None, why: str) -> None:
    plan = decide(read(job(conditions), raw), OBSERVE, NOW)
    assert plan.reply is None and plan.effects == () and why in plan.reason


def test_an_unmanaged_job_is_not_compared() -> None:
    state = job(exclusive("Failed", "WorkloadFailed"))
    state.raw["metadata"]["labels"] = {}
    plan = decide(read(parse_job(state.raw, "nvcre.nvidia.com"), failed_trainjob()), OBSERVE, NOW)
    assert plan.reply is None and "is not managed" in plan.reason


def test_a_check_has_the_same_identity_whatever_else_changed_on_the_job() -> None:
    one = job(exclusive("Failed", "WorkloadFailed"))
    other = job(exclusive("Failed", "WorkloadFailed"), annotations={"note": "a label or annotation changed"})
    values = {"phase": "Failed/WorkloadFailed", "restartCount": "0"}
    assert check_id(read(one, None), values) == check_id(read(other, None), values)
    moved = job(exclusive("Failed", "WorkloadFailed"), restart_count=1)
    assert check_id(read(moved, None), values) != check_id(read(one, None), values)
    assert stored(one)["failureLog"] == "" and len(check_id(read(one, None), values)) == 16


def test_a_checks_identity_does_not_depend_on_the_order_of_its_values() -> None:
    """The same values given in another order are the same check (a redelivery checks nothing new)."""
    state = read(job(exclusive("Failed", "WorkloadFailed")), None)
    values = {"phase": "Failed/WorkloadFailed", "restartCount": "0", "failedNodes": ""}
    assert check_id(state, values) == check_id(state, dict(reversed(values.items())))


def test_a_check_names_the_resource_versions_it_was_decided_on_by_kind() -> None:
    raw = job(exclusive("Failed", "WorkloadFailed")).raw
    raw["metadata"]["resourceVersion"] = "41"
    state = parse_job(raw, "nvcre.nvidia.com")
    found = failed_trainjob()
    found["metadata"]["resourceVersion"] = "42"
    assert checked(state, found).inputs == {"Job": "41", "TrainJob": "42"}
    assert checked(state, None).inputs == {"Job": "41"}  # no TrainJob of its own: taken as deleted


# -- the tick: a Job not terminal, or made terminal within the settle and recheck windows, is checked again -------

def flipped(ago: int | None) -> dict[str, Any]:
    if ago is None:
        return {"status": {"conditions": exclusive("InProgress", "WorkloadRunning")}}
    at = (NOW - timedelta(seconds=ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"status": {"conditions": [{**c, "lastTransitionTime": at} for c in exclusive("Failed", "WorkloadFailed")]}}


@pytest.mark.parametrize(("ago", "due"), [(None, True), (0, True), (180, True), (181, False)],
                         ids=["not-terminal", "just-failed", "last-recheck", "past"])
def test_the_tick_checks_jobs_not_terminal_or_made_so_within_180_seconds(ago: int | None, due: bool) -> None:
    """CREFN_PARITY_SETTLE_SECONDS 60 + CREFN_PARITY_RECHECK_SECONDS 120 (the defaults)."""
    assert recheck_due(flipped(ago), NOW, OBSERVE) is due


def test_the_current_attempts_pods_decide_when_the_pods_carry_attempts() -> None:
    """A restarted Job's earlier attempt ran on gpu-0: its current attempt (1) failed on gpu-1 alone."""
    old = pod("a0", node="gpu-0", exits=[("trainer", 1, "Error")], phase="Failed", labels={"crefn.dev/attempt": "0"})
    new = pod("a1", node="gpu-1", exits=[("trainer", 137, "OOMKilled")], phase="Failed",
              labels={"crefn.dev/attempt": "1"})
    state = job(exclusive("Failed", "WorkloadFailed"), checkpoint={"pvcName": "p", "maxRestarts": 1}, restart_count=1)
    assert fields(checked(state, failed_trainjob(), (old, new)))["failedNodes"] == ("differ", "", "gpu-1")
    assert fields(checked(state, failed_trainjob(), (old, new)))["failureLog"] == (
        "differ", "", "OOMKilled a1 exit 137")
