"""Workload names and attempts: `functions.domain.attempts`."""

from __future__ import annotations

import pytest

from events.emitted import WorkloadRef
from events.types import TRAINJOB_API_VERSION, TRAINJOB_KIND
from functions.domain.attempts import attempt_of, current_workload_ref, is_recorded
from tests.support.helpers import job


@pytest.mark.parametrize(("labels", "expected"), [
    ({}, None),
    ({"crefn.dev/attempt": "2"}, 2),
    ({"crefn.dev/attempt": "0"}, 0),
    ({"crefn.dev/attempt": "two"}, None),
    ({"crefn.dev/attempt": "-1"}, None),
    ({"crefn.dev/attempt": ""}, None),
], ids=["no-label", "two", "zero", "not-a-number", "negative", "empty"])
def test_attempt_of_labels(labels: dict[str, str], expected: int | None) -> None:
    assert attempt_of(labels) == expected


OWN_REF = {"apiVersion": "trainer.kubeflow.org/v2", "kind": "OtherJob", "name": "own", "namespace": "elsewhere"}


@pytest.mark.parametrize(("status", "name", "expected"), [
    ({}, "llm-workload", ("llm-workload", "ns", TRAINJOB_API_VERSION, TRAINJOB_KIND)),
    ({}, None, ("", "ns", TRAINJOB_API_VERSION, TRAINJOB_KIND)),
    ({"workloadRef": OWN_REF}, "ignored", ("own", "elsewhere", "trainer.kubeflow.org/v2", "OtherJob")),
    ({"workloadRef": {"apiVersion": "", "kind": "", "name": "bare"}}, "ignored",
     ("bare", "ns", TRAINJOB_API_VERSION, TRAINJOB_KIND)),
], ids=["no-ref-named", "no-ref-default-name", "ref-kept-as-written", "ref-blanks-defaulted"])
def test_current_workload_ref(status: dict[str, object], name: str | None,
                              expected: tuple[str, str, str, str]) -> None:
    state = job(restart_count=3, status=status)
    ref = current_workload_ref(state.job) if name is None else current_workload_ref(state.job, name)
    want_name, want_ns, want_api, want_kind = expected
    assert ref == WorkloadRef(api_version=want_api, kind=want_kind, name=want_name, namespace=want_ns, attempt=3)


@pytest.mark.parametrize(("attempt", "recorded"), [(None, False), (0, True), (1, True), (2, False), (3, False)],
                         ids=["no-attempt", "older", "previous", "current", "newer"])
def test_an_attempt_older_than_the_jobs_has_its_restart_recorded(attempt: int | None, recorded: bool) -> None:
    workload = WorkloadRef(api_version=TRAINJOB_API_VERSION, kind=TRAINJOB_KIND, name="llm-workload",
                           namespace="ns", attempt=attempt)
    assert is_recorded(job(restart_count=2).job, workload) is recorded
