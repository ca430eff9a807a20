"""What steers `validate`'s read, pure: whether the event asks for a validation at all. A `job.check` that
does not list `validation`, or a Job that became anything but Succeeded, is answered with nothing read."""

from __future__ import annotations

from typing import Any

import pytest

from events.envelope import InvalidEvent
from functions.runtime.codec import to_envelope
from functions.validate.wants import asked

JOB = {"name": "llm", "namespace": "ns"}


def event(kind: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"attributes": {"specversion": "1.0", "id": "e1", "source": "/crefn/test", "type": kind,
                           "subject": "ns/llm", "namespace": "ns", "job": "llm", "partitionkey": "ns/llm"},
            "data": data}


def changed(became: str) -> dict[str, Any]:
    return event("dev.crefn.job.condition.changed", {
        "job": JOB, "new": {"type": became, "status": "True", "reason": "WorkloadCompleted", "message": "done"}})


@pytest.mark.parametrize(("record", "why"), [
    (event("dev.crefn.job.check", {"job": JOB, "attempt": 0, "checks": ["validation"]}), ""),
    (event("dev.crefn.job.check", {"job": JOB, "attempt": 0, "checks": ["nodehealth"]}),
     "the check of Job ns/llm does not ask for validation (nodehealth)"),
    (event("dev.crefn.job.check", {"job": JOB, "attempt": 0, "checks": []}),
     "the check of Job ns/llm does not ask for validation (none)"),
    (changed("Succeeded"), ""),
    (changed("Failed"), "Job ns/llm became Failed, not Succeeded"),
], ids=["check-asks", "check-asks-another", "check-asks-none", "succeeded", "failed"])
def test_the_event_says_which_job_and_whether_it_asks_for_a_validation(record: dict[str, Any], why: str) -> None:
    ref, said = asked(to_envelope(record))
    assert (ref.namespace, ref.name, said) == ("ns", "llm", why)


def test_an_event_of_another_type_is_invalid() -> None:
    with pytest.raises(InvalidEvent) as raised:
        asked(to_envelope(event("dev.crefn.workload.phase", {})))
    assert str(raised.value) == "unknown event type 'dev.crefn.workload.phase' for this function"


@pytest.mark.parametrize(("verdict", "restated"), [("Succeeded", True), ("Failed", False)],
                         ids=["succeeded-validated", "failed"])
def test_the_validation_events_are_read_again_only_for_a_succeeded_job_validated_already(verdict: str,
                                                                                       restated: bool) -> None:
    """An event sent before `ValidationFailed` was written (within the hour) may be the one that decided it: for a
    succeeded Job, its Events are read; a Job that failed is validated no more."""
    from events.envelope import Envelope
    from functions.validate.wants import restate_wanted
    from tests.support.helpers import NOW, cond, job

    conditions = [cond(t, "True" if t == verdict else "False", "WorkloadCompleted" if t == verdict else "NotApplicable")
                  for t in ("InProgress", "Succeeded", "Failed")]
    validated = cond("ValidationFailed", "True", "ThresholdViolated", "m", ltt="2026-11-30T11:55:00Z")
    state = job([*conditions, validated], spec={"thresholds": {"goodputRatio": "value > 0.9"}})
    cause = Envelope(id="c1", type="dev.crefn.job.condition.changed", source="/crefn/status",
                     time="2026-11-30T11:50:00Z")
    names = restate_wanted(state, cause, NOW)
    assert (len(names) > 0) is restated
