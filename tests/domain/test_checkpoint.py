"""The checkpoint restart rule (CRE's `restartFromCheckpoint`): restarts left, `maxRestarts` 0 by default,
and checkpoint evidence when it is required, each refusal in its words."""

from __future__ import annotations

from typing import Any

import pytest

from functions.domain.checkpoint import decide_restart, has_checkpoint
from functions.domain.jobs import JobState
from tests.support.helpers import job

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


def goodput(status: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "llm-goodput"}, "spec": {"jobRef": {"kind": "Job", "name": "llm"}}, "status": status}


@pytest.mark.parametrize(("status", "evidence"), [
    ({"lastCheckpointStep": 1}, True), ({"lastCheckpointStep": 500}, True), ({"lastCheckpointStep": 0}, False),
    ({}, False),
], ids=["first-step", "later-step", "step-0", "none-recorded"])
def test_checkpoint_evidence_is_a_last_checkpoint_step_past_0(status: dict[str, Any], evidence: bool) -> None:
    """CRE's `hasCheckpoint`: any step saved counts, the first one too."""
    assert has_checkpoint([goodput(status)], "llm") is evidence
