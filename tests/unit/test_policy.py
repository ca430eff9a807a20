"""Pure decisions of the lifecycle functions as truth tables: conditions (§6.2), restart (§6.3),
launch (§5) and workload names."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from events.emitted import WorkloadPhaseData
from events.types import Phase
from functions.plan import Create, Delete, Plan, Wait
from functions.rules.attempts import fnv32a, workload_name
from functions.rules.conditions import condition, decide_conditions, is_terminal, true_exclusive
from functions.rules.jobs import JobState, parse_job
from functions.rules.launch import LaunchObserved, decide_launch
from functions.rules.restart import Failure, decide_restart, failed_message, failed_status
from functions.rules.status import decide_status
from functions.settings import Settings

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
EARLIER = "2026-11-30T10:00:00Z"


def cond(type_: str, status: str, reason: str = "", message: str = "", gen: int = 1,
         ltt: str = EARLIER) -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": message, "observedGeneration": gen,
            "lastTransitionTime": ltt}


def job(conditions: list[dict[str, Any]] | None = None, generation: int = 1, checkpoint: dict[str, Any] | None = None,
        restart_count: int = 0, annotations: dict[str, str] | None = None, workload_ref: bool = False,
        train_job: bool = True) -> JobState:
    spec: dict[str, Any] = {"workload": {"trainJob": {"runtimeRef": {"name": "t"}}} if train_job else {}}
    if checkpoint is not None:
        spec["checkpoint"] = checkpoint
    status: dict[str, Any] = {"conditions": conditions or [], "restartCount": restart_count}
    if workload_ref:
        status["workloadRef"] = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                 "name": "llm-workload"}
    return parse_job({"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                      "metadata": {"name": "llm", "namespace": "ns", "uid": "job-uid", "generation": generation,
                                   "labels": {"crefn.dev/managed": "true"}, "annotations": annotations or {}},
                      "spec": spec, "status": status}, "nvcre.nvidia.com")


# -- conditions (§6.2) ----------------------------------------------------------------------------

RUNNING_NOW = condition("InProgress", "WorkloadRunning", "Workload TrainJob/llm-workload is running")
RUNNING = [cond("InProgress", "True", "WorkloadRunning", "Workload TrainJob/llm-workload is running"),
           cond("Succeeded", "False", "NotApplicable"), cond("Failed", "False", "NotApplicable")]


def by_type(conditions: list[dict[str, Any]] | None) -> dict[str, dict[str, Any]]:
    assert conditions is not None
    return {c["type"]: c for c in conditions}


def test_first_write_sets_all_three_exclusive_conditions() -> None:
    out = by_type(decide_conditions([], 3, condition("InProgress", "WorkloadCreated", "m"), NOW))
    assert {k: (v["status"], v["reason"], v["message"], v["observedGeneration"]) for k, v in out.items()} == {
        "InProgress": ("True", "WorkloadCreated", "m", 3), "Succeeded": ("False", "NotApplicable", "", 3),
        "Failed": ("False", "NotApplicable", "", 3)}
    assert {v["lastTransitionTime"] for v in out.values()} == {"2026-11-30T12:00:00Z"}


def test_no_op_write_is_skipped() -> None:
    assert decide_conditions(RUNNING, 1, RUNNING_NOW, NOW) is None


def test_reason_change_keeps_transition_time() -> None:
    out = by_type(decide_conditions(RUNNING, 1, condition("InProgress", "WorkloadPending", "p"), NOW))
    assert out["InProgress"]["lastTransitionTime"] == EARLIER and out["InProgress"]["reason"] == "WorkloadPending"


def test_flip_changes_transition_time_only_where_status_flips() -> None:
    out = by_type(decide_conditions(RUNNING, 1, condition("Succeeded", "WorkloadCompleted", "done"), NOW))
    assert out["Succeeded"]["lastTransitionTime"] == "2026-11-30T12:00:00Z"
    assert out["InProgress"]["lastTransitionTime"] == "2026-11-30T12:00:00Z"
    assert out["Failed"]["lastTransitionTime"] == EARLIER


def test_generation_change_alone_is_written() -> None:
    out = by_type(decide_conditions(RUNNING, 2, RUNNING_NOW, NOW))
    assert {c["observedGeneration"] for c in out.values()} == {2}


def test_other_conditions_are_left_untouched() -> None:
    hw = {"type": "HardwareFailed", "status": "True", "reason": "XID79", "message": "GPU fell off the bus",
          "lastTransitionTime": EARLIER}
    out = decide_conditions([hw, *RUNNING], 1, condition("Failed", "WorkloadFailed", "f"), NOW)
    assert out is not None and out[0] == hw and len(out) == 4


@pytest.mark.parametrize(("conditions", "terminal", "true_type"), [
    ([], False, None), (RUNNING, False, "InProgress"),
    ([cond("Succeeded", "True", "WorkloadCompleted")], True, "Succeeded"),
    ([cond("Failed", "True", "WorkloadFailed")], True, "Failed"),
    ([cond("HardwareFailed", "True")], False, None),
], ids=["empty", "running", "succeeded", "failed", "hardware-only"])
def test_terminal_and_true_condition(conditions: list[dict[str, Any]], terminal: bool, true_type: str | None) -> None:
    assert is_terminal(conditions) is terminal
    found = true_exclusive(conditions)
    assert (found.type if found else None) == true_type


# -- status (§5) ----------------------------------------------------------------------------------


def phase_data(phase: str, message: str = "") -> WorkloadPhaseData:
    return WorkloadPhaseData.model_validate({
        "job": {"name": "llm", "namespace": "ns"}, "phase": phase, "message": message, "observedAt": NOW.isoformat(),
        "workload": {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "llm-workload",
                     "namespace": "ns", "attempt": 0}})


@pytest.mark.parametrize(("phase", "message", "expected"), [
    ("Pending", "TrainJob is suspended", ("InProgress", "WorkloadPending",
                                          "Workload TrainJob/llm-workload is pending: TrainJob is suspended")),
    ("Pending", "", ("InProgress", "WorkloadPending", "Workload TrainJob/llm-workload is pending")),
    ("Running", "ignored", ("InProgress", "WorkloadRunning", "Workload TrainJob/llm-workload is running")),
    ("Succeeded", "all jobs completed", ("Succeeded", "WorkloadCompleted",
                                         "Workload TrainJob/llm-workload completed: all jobs completed")),
    ("Succeeded", "", ("Succeeded", "WorkloadCompleted", "Workload TrainJob/llm-workload completed successfully")),
], ids=["pending-msg", "pending", "running", "succeeded-msg", "succeeded"])
def test_status_conditions(phase: str, message: str, expected: tuple[str, str, str]) -> None:
    data = phase_data(phase, message)
    decided = decide_status(job(workload_ref=True), data.phase, data.workload.name, data.message, NOW)
    assert decided is not None
    status, new = decided
    assert (new.type, new.reason, new.message) == expected
    assert ("workloadStartTime" in status) is (phase == "Running")


# -- restart (§6.3) -------------------------------------------------------------------------------

CKPT = {"pvcName": "p", "maxRestarts": 2}


@pytest.mark.parametrize(("state", "evidence", "required", "restart", "why"), [
    (job(checkpoint=CKPT), True, True, True, "restart 1/2"),
    (job(checkpoint=CKPT, restart_count=1), True, True, True, "restart 2/2"),
    (job(checkpoint=CKPT, restart_count=2), True, True, False, "restarts exhausted (2/2)"),
    (job(checkpoint={"pvcName": "p"}), True, True, False, "restarts exhausted (0/0)"),
    (job(), True, True, False, "no checkpoint configured"),
    (job(checkpoint=CKPT), False, True, False, "no checkpoint evidence"),
    (job(checkpoint=CKPT), None, False, True, "restart 1/2"),
], ids=["first", "last", "exhausted", "max-default-0", "no-checkpoint", "no-evidence", "evidence-not-required"])
def test_restart_policy(state: JobState, evidence: bool | None, required: bool, restart: bool, why: str) -> None:
    decision = decide_restart(state, evidence, required)
    assert decision.restart is restart and decision.why.startswith(why)


@pytest.mark.parametrize(("failure", "message"), [
    (Failure("tj", False, "exit 137"), "Workload TrainJob/tj failed: exit 137"),
    (Failure("tj", False, ""), "Workload TrainJob/tj has failed"),
    (Failure("tj", True, "whatever"), "Workload TrainJob/tj was deleted"),
], ids=["message", "no-message", "deleted"])
def test_failed_messages(failure: Failure, message: str) -> None:
    assert failed_message(failure) == message


def test_failed_nodes_merge_with_existing_entries() -> None:
    state = parse_job({**job().raw, "status": {"failedNodes": [
        {"name": "gpu-1", "reason": "HardwareFailed", "message": "xid"},
        {"name": "gpu-2", "reason": "WorkloadFailed", "message": "old"}]}}, "nvcre.nvidia.com")
    decided = failed_status(state, Failure("tj", False, "boom", ("gpu-2", "gpu-3")), NOW)
    assert decided is not None
    assert [(n["name"], n["reason"]) for n in decided[0]["failedNodes"]] == [
        ("gpu-1", "HardwareFailed"), ("gpu-2", "WorkloadFailed"), ("gpu-3", "WorkloadFailed")]


# -- launch (§5) ----------------------------------------------------------------------------------


def trainjob(attempt: str = "0", owner_uid: str = "job-uid", terminating: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "llm-workload", "uid": "tj-uid", "labels": {"crefn.dev/attempt": attempt},
                            "ownerReferences": [{"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                                                 "name": "llm", "uid": owner_uid, "controller": True}]}
    if terminating:
        meta["deletionTimestamp"] = EARLIER
    return {"metadata": meta}


LATER = (NOW + timedelta(seconds=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
PAST = (NOW - timedelta(seconds=10)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize(("state", "existing", "action"), [
    (job(), None, "create"),
    (job(), trainjob(), "adopt"),
    (job(restart_count=1), trainjob("0"), "delete-stale"),
    (job(), trainjob(terminating=True), "wait"),
    (job(), trainjob(owner_uid="someone-else"), "fail"),
    (job(train_job=False), None, "fail"),
    (job(annotations={"crefn.dev/restart-not-before": LATER}), None, "wait"),
    (job(annotations={"crefn.dev/restart-not-before": PAST}), None, "create"),
    (job(conditions=[cond("InProgress", "True", "WorkloadRestarting")], restart_count=1), None, "wait"),
], ids=["create", "adopt", "stale-attempt", "terminating", "collision", "no-trainjob", "grace", "grace-over",
        "restart-annotation-pending"])
def test_launch_decision(state: JobState, existing: dict[str, Any] | None, action: str) -> None:
    plan = decide_launch(LaunchObserved(state, existing), Settings(), NOW, "launch", None)
    assert launch_action(plan) == action


def launch_action(plan: Plan) -> str:
    """The launch plan in the words of SPEC §5."""
    kinds = [type(e) for e in plan.effects]
    if Create in kinds:
        return "create"
    if Delete in kinds:
        return "delete-stale"
    if Wait in kinds:
        return "wait"
    if plan.reply is not None and plan.reply.type == "dev.crefn.workload.created":
        return "adopt"
    if plan.reply is not None and plan.reply.extensions.get("jobcondition") == "Failed":
        return "fail"
    return "nothing"


def test_created_trainjob_carries_attempt_labels_and_owner() -> None:
    plan = decide_launch(LaunchObserved(job(restart_count=2), None), Settings(), NOW, "launch", None)
    (create,) = [e for e in plan.effects if isinstance(e, Create)]
    body = create.body
    meta = body["metadata"]
    assert meta["labels"]["crefn.dev/attempt"] == "2" and meta["labels"]["nvcre.nvidia.com/job"] == "llm"
    assert meta["ownerReferences"][0]["uid"] == "job-uid" and meta["ownerReferences"][0]["controller"] is True
    assert body["spec"] == {"runtimeRef": {"name": "t"}}


# -- names ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("job_name", "expected"), [
    ("llm", "llm-workload"),
    ("a" * 35, "a" * 35 + "-workload"),  # 44: fits
    ("a" * 36, "a" * 36 + "-w-" + f"{fnv32a('a' * 36 + '-workload'):08x}"[:5]),
    ("b" * 37 + "-x", "b" * 37 + "-" + f"{fnv32a('b' * 37 + '-x-workload'):08x}"[:5]),  # trailing '-' dropped
], ids=["short", "exactly-44", "truncated", "trailing-dash"])
def test_workload_names(job_name: str, expected: str) -> None:
    assert workload_name(job_name) == expected
    assert len(workload_name(job_name)) <= 44


def test_fnv32a_known_values() -> None:
    assert (fnv32a(""), fnv32a("a"), fnv32a("foobar")) == (0x811C9DC5, 0xE40C292C, 0xBF9CF968)


def test_phase_enum_is_closed() -> None:
    assert [p.value for p in Phase] == ["Pending", "Running", "Succeeded", "Failed"]
