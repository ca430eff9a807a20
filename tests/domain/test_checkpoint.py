"""The checkpoint restart rule (CRE's `restartFromCheckpoint`): restarts left, `maxRestarts` 0 by default,
and checkpoint evidence when it is required, each refusal in its words."""

from __future__ import annotations

import pytest

from functions.domain.checkpoint import decide_restart
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
