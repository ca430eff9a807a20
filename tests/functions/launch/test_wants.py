"""What `launch` decides on the event's copy, before any read: a restart grace not over is a wait, and a
Job `restart` relaunches itself is left to it."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from functions.domain.jobs import JobState
from functions.domain.launching import LaunchObserved, decide_launch
from functions.launch.decide import Observed, decide
from functions.runtime.effects import Wait
from functions.runtime.settings import Settings
from tests.support.helpers import NOW, cond, job

NO_GRACE = Settings(restart_grace_seconds=0)


LATER = (NOW + timedelta(seconds=10)).strftime("%Y-%m-%dT%H:%M:%SZ")


CKPT = {"pvcName": "p", "maxRestarts": 2}


def test_a_grace_the_event_shows_is_a_wait_decided_without_a_read() -> None:
    from functions.launch.wants import grace_on_copy

    copy = job(annotations={"crefn.dev/restart-not-before": LATER}, restart_count=1)
    waiting = grace_on_copy(copy, Settings(), NOW)
    assert waiting is not None and waiting.retry_after == 10
    assert decide(Observed(None, copy.where, None, wait=waiting), Settings(), NOW).effects == (waiting,)  # type: ignore[arg-type]
    assert grace_on_copy(copy, Settings(), NOW + timedelta(seconds=11)) is None
    assert grace_on_copy(copy, Settings(mode="observe"), NOW) is None
    assert grace_on_copy(job(), Settings(), NOW) is None
    # a restart recorded whose grace is not written: the copy would say "wait" forever, the Job is read
    unwritten = job([cond("InProgress", "True", "WorkloadRestarting", "")], checkpoint={"pvcName": "p",
                    "maxRestarts": 2}, restart_count=1)
    assert grace_on_copy(unwritten, Settings(), NOW) is None
    assert decide_launch(LaunchObserved(unwritten, None), Settings(), NOW, "launch", None).effects == (
        Wait("restart recorded, its grace period not yet written"),)  # on the fresh read: a 503, read again


@pytest.mark.parametrize(("copy", "unread"), [
    (job([cond("InProgress", "True", "WorkloadRestarting", "")], checkpoint=CKPT, restart_count=1), True),
    (job([cond("InProgress", "True", "WorkloadRestarting", "")], checkpoint=CKPT, restart_count=1,
         spec={"goodputMeasurement": {"sampleInterval": "30s"}}), False),
    (job([cond("InProgress", "True", "WorkloadRestarting", "")], checkpoint=CKPT, restart_count=1,
         workload_ref=True), False),
    (job([cond("InProgress", "True", "WorkloadCreated", "")]), False),
], ids=["restarting", "restarting-with-a-grace", "next-attempt-recorded", "not-restarting"])
def test_launch_leaves_a_restart_with_no_grace_to_the_restart(copy: JobState, unread: bool) -> None:
    from functions.launch.wants import restart_launches

    assert restart_launches(copy, NO_GRACE) is unread
    assert restart_launches(copy, Settings(restart_grace_seconds=0, mode="observe")) is False
    graced = replace(copy, job=copy.job.model_copy(update={"metadata": copy.job.metadata.model_copy(update={
        "annotations": {"crefn.dev/restart-not-before": "2026-11-30T12:10:00Z"}})}))
    # a grace recorded (another setting, or a restart still on one): launch waits for it, then reads the Job,
    # which alone says whether `restart` launched the next attempt
    assert restart_launches(graced, NO_GRACE) is False
