"""The exclusive conditions of a Job (SPEC §6.2) as truth tables: `functions.domain.conditions`."""

from __future__ import annotations

from typing import Any

import pytest

from functions.domain.conditions import condition, decide_conditions, decide_independent, is_terminal, true_exclusive
from tests.support.helpers import EARLIER, NOW, cond

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


HW = "HardwareFailed"
OTHERS = [cond("InProgress", "True", "WorkloadRunning"), cond("Succeeded", "False", "NotApplicable")]


def independent(status: str, reason: str = "HardwareFailureDetected", message: str = "gpu-1 unhealthy", gen: int = 1,
                ltt: str = EARLIER) -> dict[str, Any]:
    return {"type": HW, "status": status, "reason": reason, "message": message, "observedGeneration": gen,
            "lastTransitionTime": ltt}


NOW_TEXT = NOW.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize(("current", "want", "written"), [
    pytest.param(OTHERS, (True, "HardwareFailureDetected", "gpu-1 unhealthy", 1),
                 [*OTHERS, independent("True", ltt=NOW_TEXT)], id="first-write-appended"),
    pytest.param([independent("True"), *OTHERS], (True, "HardwareFailureDetected", "gpu-1 unhealthy", 1), None,
                 id="same-says-nothing"),
    pytest.param([independent("True"), *OTHERS], (True, "HardwareFailureDetected", "gpu-2 unhealthy", 1),
                 [independent("True", message="gpu-2 unhealthy"), *OTHERS], id="message-keeps-its-time"),
    pytest.param([independent("True"), *OTHERS], (True, "HardwareFailureDetected", "gpu-1 unhealthy", 2),
                 [independent("True", gen=2), *OTHERS], id="generation-keeps-its-time"),
    pytest.param([*OTHERS, independent("True")], (False, "NodesHealthy", "", 1),
                 [*OTHERS, independent("False", "NodesHealthy", "", ltt=NOW_TEXT)], id="flip-in-place"),
    pytest.param([{"type": HW, "status": "True"}, *OTHERS], (True, "", "", 1),
                 [independent("True", "", "", ltt=NOW_TEXT), *OTHERS], id="missing-fields-are-written"),
    pytest.param([{"type": HW, "status": "True", "reason": "", "message": "", "lastTransitionTime": EARLIER}],
                 (True, "", "", 1), [independent("True", "", "")], id="missing-generation-is-written"),
    pytest.param([{"type": HW, "status": "True", "observedGeneration": 1, "lastTransitionTime": EARLIER}],
                 (True, "", "", 1), None, id="missing-texts-read-as-empty"),
])
def test_an_independent_condition_is_set_in_place(current: list[dict[str, Any]], want: tuple[bool, str, str, int],
                                                  written: list[dict[str, Any]] | None) -> None:
    """`HardwareFailed` or `ValidationFailed` set beside the exclusive set: written in its place (appended the
    first time), its transition time kept unless the status flips, nothing when it says so already."""
    status, reason, message, gen = want
    assert decide_independent(current, gen, HW, status, reason, message, NOW) == written
