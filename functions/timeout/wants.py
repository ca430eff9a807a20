"""What steers `timeout`'s read: the transition Event of a timeout the event may have decided, delivered
again (`restate_wanted`). Pure."""

from __future__ import annotations

from datetime import datetime

from events.emitted import JobDeadlineData
from events.envelope import Envelope
from functions.domain.jobs import JobState
from functions.domain.redelivery import restating, sent_at
from functions.timeout.decide import timed_out


def restate_wanted(state: JobState, data: JobDeadlineData, cause: Envelope, now: datetime) -> str:
    """The transition Event to read for a Job timed out in the event's attempt when the event may be the one that
    decided it, delivered again: the tick sends it with its `time` when it finds the bound run out on a Job that
    is not terminal, so a deadline event sent after the verdict was written is not the one that wrote it, nor one
    that does not say when it was sent; "" otherwise."""
    sent = sent_at(cause)
    if not state.terminal or data.attempt != state.job.status.restart_count or sent is None:
        return ""
    return restating(state, timed_out(state), sent, now)
