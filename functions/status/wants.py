"""What steers `status`'s read: a phase its creator decided already (`first_phase_decided`, answered
unread), and the transition Event of a Succeeded verdict the event may have decided, delivered again
(`restate_wanted`). Pure."""

from __future__ import annotations

from datetime import datetime

from events.emitted import ConditionSummary, WorkloadPhaseData
from events.types import Phase
from functions.domain.attempts import is_current
from functions.domain.jobs import JobState
from functions.domain.phase_conditions import condition_for
from functions.domain.redelivery import restating


def restate_wanted(state: JobState, data: WorkloadPhaseData, now: datetime) -> str:
    """The transition Event to read when the Job is terminal and the event, a Succeeded phase, may be the one
    that decided its `Succeeded` verdict, delivered again (`functions.domain.redelivery.restating`); "" otherwise."""
    if not state.terminal or data.phase is not Phase.SUCCEEDED or not is_current(state.job, data.workload):
        return ""
    return restating(state, succeeded(data), data.observed_at, now)


def succeeded(data: WorkloadPhaseData) -> ConditionSummary:
    """The verdict of a Succeeded phase, as the event says it (restated only when the Job shows exactly it)."""
    return condition_for(Phase.SUCCEEDED, data.workload.name, data.message)


def first_phase_decided(data: WorkloadPhaseData) -> bool:
    """Whether the event is the creation of a Running TrainJob (`created`): the function that created it wrote
    its first phase from what the create returned (`functions.domain.launching.FirstPhase`). Nothing is read for
    it; a forged one only skips work, and a first phase that was not written (its write lost a race) comes
    back from the TrainJob's next change or the resync tick."""
    return bool(data.created) and data.phase is Phase.RUNNING
