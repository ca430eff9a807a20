"""What steers `timeout`'s read, pure: the transition Event read when a deadline event may be the one that
timed the Job out, delivered again — a terminal Job of the event's attempt showing exactly the timeout verdict,
written no earlier than the event was sent and within the hour; nothing otherwise."""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

import pytest

from events.emitted import JobDeadlineData, JobRef
from events.envelope import Envelope
from functions.domain.jobs import JobState
from functions.runtime.codec import to_envelope
from functions.timeout.wants import restate_wanted
from tests.support.helpers import NOW, cond, job

TIMED_OUT = cond("Failed", "True", "JobTimedOut", "Job exceeded timeoutPerJob", ltt="2026-11-30T11:59:00Z")
SENT = "2026-11-30T11:58:59Z"


def deadline(attempt: int = 0, sent: str | None = SENT) -> tuple[JobDeadlineData, Envelope]:
    data = JobDeadlineData(job=JobRef(name="llm", namespace="ns"), attempt=attempt, elapsed_seconds=3601,
                           timeout_seconds=3600, blocked=False)
    attributes = {"specversion": "1.0", "id": "d1", "source": "/crefn/resync", "type": "dev.crefn.job.deadline",
                  "subject": "ns/llm", "namespace": "ns", "job": "llm", "partitionkey": "ns/llm"}
    if sent is not None:
        attributes["time"] = sent
    return data, to_envelope({"attributes": attributes, "data": data.model_dump(mode="json", by_alias=True)})


def transition(state: JobState) -> str:
    """The Event of the flip to Failed in the current attempt: `<job>.<sha256(uid/Failed/attempt)[:16]>`."""
    key = f"{state.job.metadata.uid}/Failed/{state.job.status.restart_count}"
    return f"llm.{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def test_the_verdict_the_event_may_have_written_is_read() -> None:
    state = job([TIMED_OUT])
    data, cause = deadline()
    assert restate_wanted(state, data, cause, NOW) == transition(state)


@pytest.mark.parametrize(("state", "attempt", "sent", "now"), [
    (job([cond("InProgress", "True", "WorkloadRunning", "")]), 0, SENT, NOW),
    (job([TIMED_OUT]), 1, SENT, NOW),
    (job([TIMED_OUT]), 0, None, NOW),
    (job([TIMED_OUT]), 0, "2026-11-30T11:59:01Z", NOW),
    (job([TIMED_OUT]), 0, SENT, NOW + timedelta(hours=1)),
    (job([cond("Failed", "True", "WorkloadFailed", "boom", ltt="2026-11-30T11:59:00Z")]), 0, SENT, NOW),
], ids=["not-terminal", "another-attempt", "unsent", "sent-after-the-verdict", "past-the-hour", "another-verdict"])
def test_nothing_is_read_when_the_event_cannot_have_written_it(state: JobState, attempt: int, sent: str | None,
                                                               now: datetime) -> None:
    data, cause = deadline(attempt, sent)
    assert restate_wanted(state, data, cause, now) == ""
