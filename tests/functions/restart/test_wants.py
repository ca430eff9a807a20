"""What steers `restart`'s read: the delete of a TrainJob that had failed before is decided unread."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(("reason", "failed_before", "reported"), [
    ("WorkloadDeleted", True, True),
    ("WorkloadDeleted", False, False),
    ("WorkloadDeleted", None, False),
    ("JobFailed", True, False),
], ids=["deleted-after-failing", "deleted-running", "deleted-unknown (resync, earlier releases)", "not-a-delete"])
def test_a_delete_after_a_failure_is_decided_unread(reason: str, failed_before: bool | None, reported: bool) -> None:
    from datetime import UTC, datetime

    from events.emitted import JobRef, WorkloadPhaseData, WorkloadRef
    from events.types import Phase
    from functions.restart.decide import reported_before

    data = WorkloadPhaseData(job=JobRef(name="llm", namespace="ns"), phase=Phase.FAILED, reason=reason,
                             workload=WorkloadRef(api_version="trainer.kubeflow.org/v1alpha1", kind="TrainJob",
                                                  name="llm-workload", namespace="ns", attempt=0),
                             observed_at=datetime(2026, 12, 2, tzinfo=UTC), failed_before=failed_before)
    assert reported_before(data) is reported
