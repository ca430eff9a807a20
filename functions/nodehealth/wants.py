"""What steers `nodehealth`'s read: the Events of a `HardwareFailed` the event may have made True, delivered
again (`restate_wanted`). Pure."""

from __future__ import annotations

from datetime import datetime

from events.envelope import Envelope
from functions.domain.jobs import JobState
from functions.domain.redelivery import restating_condition, sent_at
from functions.nodehealth.decide import CONDITION, Evaluation, detected, hardware_condition, hardware_message


def restate_wanted(state: JobState, evaluation: Evaluation, cause: Envelope, attempt: int | None,
                   now: datetime) -> tuple[str, ...]:
    """The Events to read when the event may be the one that made `HardwareFailed` True, delivered again: the Job's
    `HardwareFailureDetected` nodes are exactly those the event finds unhealthy (nothing new: what it would have
    written on a Job without them), `HardwareFailed` names them all, and it became True within the decision
    window, no earlier than the event was sent (`functions.domain.redelivery`); none otherwise. A check of an
    earlier `attempt` is not (the Job restarted since)."""
    failed = state.job.status.failed_nodes
    if not evaluation.unhealthy or detected(failed) != evaluation.unhealthy \
            or hardware_condition(state).get("message") != hardware_message(failed) \
            or (attempt is not None and attempt != state.job.status.restart_count):
        return ()
    return restating_condition(state, CONDITION, sent_at(cause), now)
