"""What steers `status`'s read: the creation of a TrainJob Running already is its creator's to decide,
answered unread."""

from __future__ import annotations

import pytest

from events.emitted import WorkloadPhaseData
from functions.runtime.codec import to_envelope
from functions.runtime.settings import Settings
from tests.support.helpers import NOW
from tests.support.world import phase_record


def phase_data(phase: str, message: str = "") -> WorkloadPhaseData:
    return WorkloadPhaseData.model_validate({
        "job": {"name": "llm", "namespace": "ns"}, "phase": phase, "message": message, "observedAt": NOW.isoformat(),
        "workload": {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "llm-workload",
                     "namespace": "ns", "attempt": 0}})


@pytest.mark.parametrize(("phase", "created", "unread"), [
    ("Running", True, True),
    ("Running", None, False),
    ("Pending", True, False),
    ("Succeeded", True, False),
], ids=["created-running", "running", "created-suspended", "created-succeeded"])
def test_the_creation_of_a_running_trainjob_is_its_creators_to_decide(phase: str, created: bool | None,
                                                                        unread: bool) -> None:
    """The first phase of a TrainJob the functions created is written by its creator
    (`functions.domain.launching.FirstPhase`): its creation's Running event is answered unread."""
    from functions.status.decide import Unread, decide, first_phase_decided

    data = phase_data(phase).model_copy(update={"created": created})
    assert first_phase_decided(data) is unread
    if unread:
        plan = decide(Unread(to_envelope(phase_record("ns", "llm", phase)), data), Settings(), NOW)
        assert (plan.effects, plan.reply, plan.reason) == ((), None, "TrainJob llm-workload was just created: the "
                                                           "function that created it decided its first phase")
