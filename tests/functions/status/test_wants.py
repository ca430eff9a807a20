"""What steers `status`'s read: the creation of a TrainJob Running already is its creator's to decide,
answered unread; a Succeeded event that may have decided the Job's verdict reads that verdict's Event."""

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


@pytest.mark.parametrize(("message", "observed_at", "name"), [
    ("Workload TrainJob/llm-workload completed successfully", "2026-11-30T11:55:00Z", "llm.6b2cac69d1a1bd24"),
    ("Workload TrainJob/llm-workload completed: done", "2026-11-30T11:55:00Z", ""),
    ("Workload TrainJob/llm-workload completed successfully", "2026-11-30T11:59:00Z", ""),
], ids=["the-verdict-the-event-decided", "another-verdict", "seen-after-the-write"])
def test_a_succeeded_event_delivered_again_reads_the_event_of_its_verdict(message: str, observed_at: str,
                                                                          name: str) -> None:
    """The Job shows, written two minutes ago, exactly the `Succeeded` the event would write, and the event was
    seen before that write: the transition Event of the Job's attempt is to be read (its name, a digest of the
    Job's name and uid, `Succeeded` and the attempt); else none."""
    from datetime import datetime

    from functions.status.wants import restate_wanted
    from tests.support.helpers import cond, job

    state = job([cond("Succeeded", "True", "WorkloadCompleted", message, ltt="2026-11-30T11:58:00Z"),
                 cond("InProgress", "False", "NotApplicable"), cond("Failed", "False", "NotApplicable")],
                workload_ref=True)
    data = phase_data("Succeeded").model_copy(update={"observed_at": datetime.fromisoformat(observed_at)})
    assert restate_wanted(state, data, NOW) == name
