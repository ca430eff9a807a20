"""Plans as plain data (`functions.runtime.plan`): two plans decided alike compare equal, and the repr
shows one whole."""

from __future__ import annotations

from functions.runtime.effects import WriteStatus
from functions.runtime.plan import Plan, nothing
from functions.runtime.resources import cre_jobs


def plan() -> Plan:
    return Plan((WriteStatus(cre_jobs("nvcre.nvidia.com"), "ml", "llama", "7", {"restartCount": 1}),),
                reason="restarted")


def test_plans_decided_alike_are_equal() -> None:
    assert plan() == plan() and plan() != Plan(plan().effects, reason="other")
    assert "restartCount" in repr(plan())
    assert nothing("why") == Plan(reason="why") and nothing("why").effects == ()
